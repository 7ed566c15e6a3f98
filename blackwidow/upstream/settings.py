"""Admin API input for identities: PUT/PATCH bodies and the identity id in the path. Pure: no I/O.

Every refusal is a ValidationError naming the field. The schemas below are what /openapi.json documents.
"""
import re
from typing import Any

from blackwidow.wiki_policy import check_wiki
from shared.errors import ValidationError
from shared.hashing import wiki_key

# a credential is referred to by name; the secret stays in the spawns' credentials file
CREDENTIAL_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
MAX_WEIGHT = 1_000_000.0

# name: (JSON type, minimum, exclusive, maximum, nullable, description)
_FIELDS: dict[str, tuple[str, float, bool, float, bool, str]] = {
    "credential": ("string", 0, False, 0, True, "Name of the credential the spawns use for this wiki "
                   "(looked up in their own credentials file; never the secret). null: anonymous."),
    "in_flight": ("integer", 1, False, 100, False, "Requests in flight at once over all nodes."),
    "per_s": ("number", 0, True, 1000, False, "Requests started per second over all nodes."),
    "per_min": ("integer", 1, False, 1_000_000, True, "Requests per minute over all nodes; null: no such limit."),
    "slow_after_s": ("number", 0, True, 3600, False, "A response slower than this..."),
    "slow_wait_s": ("number", 0, False, 3600, False, "...makes the node wait this long before the next request."),
    "maxlag": ("integer", 1, False, 60, False, "The maxlag parameter sent with every request."),
}
_PATCH_ONLY = {"paused_until": "Only null: lifts the pause a node reported."}


def _number(name: str, value: Any, kind: str, low: float, exclusive: bool, high: float) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind == "number" else int):
        raise ValidationError(f"'{name}' must be {'a number' if kind == 'number' else 'an integer'}", field=name)
    if value < low or (exclusive and value == low):
        raise ValidationError(f"'{name}' must be {'>' if exclusive else '>='} {low:g}", field=name)
    if value > high:
        raise ValidationError(f"'{name}' must be <= {high:g}", field=name)
    return float(value) if kind == "number" else value


def check_credential(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not CREDENTIAL_NAME.fullmatch(value):
        raise ValidationError("'credential' must be a credential name ([A-Za-z0-9._-], 1 to 64 characters), "
                              "never a secret", field="credential")
    return value


def parse_limits(body: Any, *, patch: bool) -> dict:
    """The given fields, checked (PATCH and PUT alike: PUT fills the others with the host's defaults)."""
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object", field=None)
    out: dict = {}
    for name, value in body.items():
        if patch and name in _PATCH_ONLY:
            if value is not None:
                raise ValidationError(f"'{name}' can only be set to null", field=name)
            out[name] = None
            continue
        if name not in _FIELDS:
            raise ValidationError(f"unknown field '{name}'", field=name)
        kind, low, exclusive, high, nullable, _ = _FIELDS[name]
        if name == "credential":
            out[name] = check_credential(value)
        elif value is None:
            if not nullable:
                raise ValidationError(f"'{name}' must not be null", field=name)
            out[name] = None
        else:
            out[name] = _number(name, value, kind, low, exclusive, high)
    return out


def check_identity_id(identity_id: str, allowlist: tuple[str, ...]) -> str:
    """A wiki host[:port] the deployment's wiki policy allows (http or https); ValidationError naming the path
    parameter, `identity_id`."""
    host = identity_id.strip().lower()
    refusal = None
    for scheme in ("https", "http"):
        try:
            canonical = check_wiki(f"{scheme}://{host}/w/api.php", allowlist)
        except ValidationError as exc:
            refusal = refusal or exc
            continue
        if wiki_key(canonical) == host:
            return host
    message = refusal.message.replace("'wiki'", "'identity_id'") if refusal else \
        f"'identity_id' {host} is not a wiki host[:port]"
    raise ValidationError(message, field="identity_id")


def check_weight(value: Any) -> float:
    return _number("weight", value, "number", 0, True, MAX_WEIGHT)


def schema(*, patch: bool) -> dict:
    """OpenAPI 3.0 schema of a PUT (patch=False) or PATCH body."""
    props: dict = {}
    for name, (kind, low, exclusive, high, nullable, description) in _FIELDS.items():
        prop: dict = {"type": kind, "description": description}
        if nullable:
            prop["nullable"] = True
        if name == "credential":
            prop["pattern"] = "^" + CREDENTIAL_NAME.pattern + "$"
        else:
            prop.update({"minimum": low, "maximum": high})
            if exclusive:
                prop["exclusiveMinimum"] = True
        props[name] = prop
    if patch:
        props.update({name: {"type": "string", "nullable": True, "enum": [None], "description": text}
                      for name, text in _PATCH_ONLY.items()})
    return {"type": "object", "additionalProperties": False, "properties": props}


WEIGHT_SCHEMA = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": MAX_WEIGHT,
                 "description": "Share of upstream slot-time against the other tenants with demand on a wiki "
                                "(default 1.0)."}
