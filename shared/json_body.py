"""Strict JSON request bodies: content type, size limit, UTF-8, syntax. Raises shared.errors only."""
import json

from shared.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _check_strings(value) -> None:
    # JSON escapes can smuggle lone surrogates (\ud800) that no UTF-8 database column accepts.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def read_json(req, max_bytes: int):
    """The parsed body of a falcon request. 415 unless application/json (UTF-8), 413 over max_bytes,
    400 for an empty body, invalid UTF-8 or invalid JSON."""
    media_type, _, params = (req.content_type or "").partition(";")
    if media_type.strip().lower() != "application/json":
        raise UnsupportedMediaType("Content-Type must be application/json")
    params = params.strip().lower()
    charset = params.removeprefix("charset=").strip('"') if params.startswith("charset=") else ""
    if charset not in ("", "utf-8", "utf8"):
        raise UnsupportedMediaType("the body must be UTF-8")
    length = req.content_length
    if length is not None and length > max_bytes:
        raise PayloadTooLarge(f"the body is larger than {max_bytes} bytes")
    # bounded_stream reads a body without Content-Length as empty; a chunked one ends where the server's
    # de-chunking stream ends (gunicorn), still read no further than the limit
    chunked = "chunked" in (req.get_header("Transfer-Encoding") or "").lower()
    stream = req.stream if length is None and chunked else req.bounded_stream
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PayloadTooLarge(f"the body is larger than {max_bytes} bytes")
    if not data.strip():
        raise BadRequest("the body is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the body is not valid UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)
        _check_strings(value)
    except UnicodeEncodeError:
        raise BadRequest("the body holds an invalid unicode escape (lone surrogate)") from None
    except RecursionError:
        raise BadRequest("the body is nested too deeply") from None
    except ValueError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None
    return value
