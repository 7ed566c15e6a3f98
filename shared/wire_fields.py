"""Field parsing for the wire shapes (shared.wire, shared.feed_wire): each refusal is a ValidationError naming
its field. Pure; imports no shape, so every wire module can use it."""
from shared.errors import ValidationError


def required(body: object, name: str, kind, *, optional=False, default=None):
    """body[name] if it is a `kind` (a bool is never an int); absent or null: `default` when optional."""
    if not isinstance(body, dict):
        raise ValidationError("body must be a JSON object", field=None)
    if name not in body or body[name] is None:
        if optional:
            return default
        raise ValidationError(f"'{name}' is required", field=name)
    value = body[name]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise ValidationError(f"'{name}' must be {getattr(kind, '__name__', kind)}", field=name)
    return value


def strings(body: dict, name: str) -> list[str]:
    """An optional list of strings ([] when absent)."""
    items = required(body, name, list, optional=True, default=[])
    if not all(isinstance(item, str) for item in items):
        raise ValidationError(f"'{name}' must be a list of strings", field=name)
    return items


def keyed(body: dict, name: str, parse) -> dict:
    """An optional {key: object} map parsed with `parse`; errors name the map and the key."""
    out = {}
    for key, item in required(body, name, dict, optional=True, default={}).items():
        try:
            out[key] = parse(item)
        except ValidationError as exc:
            raise ValidationError(f"{name}.{key}: {exc.message}", field=name) from None
    return out


def listed(body: dict, name: str, parse) -> tuple:
    """An optional list of objects parsed with `parse` (() when absent); errors name the list and the index."""
    out = []
    for index, item in enumerate(required(body, name, list, optional=True, default=[])):
        try:
            out.append(parse(item))
        except ValidationError as exc:
            raise ValidationError(f"{name}[{index}]: {exc.message}", field=name) from None
    return tuple(out)
