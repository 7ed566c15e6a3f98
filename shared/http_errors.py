"""The one mapping from errors to HTTP JSON bodies, for both Falcon apps (hub and spawn).

Every error response is {"error": {"code", "message", "field"}}: our domain errors keep their own
status, Falcon's own errors (unknown route, malformed JSON, wrong method) are reshaped, anything
else is a logged 500 that reveals nothing.
"""
import logging

import falcon

from shared.errors import BlackWidowError, Unavailable

logger = logging.getLogger(__name__)


def _domain(req, resp, ex: BlackWidowError, params) -> None:
    resp.status = ex.status
    resp.media = ex.to_dict()
    if isinstance(ex, Unavailable) and ex.retry_after_s is not None:
        resp.set_header("Retry-After", str(ex.retry_after_s))


def _falcon(req, resp, ex: falcon.HTTPError, params) -> None:
    resp.status = ex.status
    # "404 Not Found" -> "not_found", the same code a domain NotFound carries
    code = (ex.title or "error").lower().lstrip("0123456789 ").replace(" ", "_")
    resp.media = {"error": {"code": code, "message": ex.description or ex.title, "field": None}}
    for name, value in dict(ex.headers or {}).items():      # a mapping or (name, value) pairs
        resp.set_header(name, value)


def _unexpected(req, resp, ex: Exception, params) -> None:
    logger.exception("http.unhandled", extra={"path": req.path, "method": req.method})
    resp.status = falcon.HTTP_500
    resp.media = {"error": {"code": "internal", "message": "internal error", "field": None}}


def register_error_handlers(app: falcon.App) -> None:
    # Falcon picks the most specific handler for the exception's type
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(falcon.HTTPError, _falcon)
    app.add_error_handler(BlackWidowError, _domain)
