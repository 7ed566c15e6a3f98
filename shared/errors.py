"""Domain errors shared by hub and spawns, and their single mapping to HTTP JSON errors.

Core code raises these; only register_error_handlers() knows about HTTP.
"""


class BlackWidowError(Exception):
    status = "500 Internal Server Error"
    code = "internal"

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, "field": self.field}}


class ValidationError(BlackWidowError):
    status = "422 Unprocessable Entity"
    code = "invalid"


class BadRequest(BlackWidowError):
    status = "400 Bad Request"
    code = "bad_request"


class Unauthorized(BlackWidowError):
    status = "401 Unauthorized"
    code = "unauthorized"


class NotFound(BlackWidowError):
    status = "404 Not Found"
    code = "not_found"


class Conflict(BlackWidowError):
    status = "409 Conflict"
    code = "conflict"


class PayloadTooLarge(BlackWidowError):
    status = "413 Payload Too Large"
    code = "too_large"


class UnsupportedMediaType(BlackWidowError):
    status = "415 Unsupported Media Type"
    code = "unsupported_media_type"


class Unavailable(BlackWidowError):
    """Refused for now; `retry_after_s` says when to ask again."""
    status = "503 Service Unavailable"
    code = "unavailable"

    def __init__(self, message: str, field: str | None = None, retry_after_s: int | None = None):
        super().__init__(message, field)
        self.retry_after_s = retry_after_s


class ConfigError(Exception):
    """A BW_* variable is missing or malformed; the message names it."""
