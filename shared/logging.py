"""Structured logging on the stdlib: one JSON object per line, secrets redacted.

Modules log events with stable keys: logger.info("source.started", extra={"wiki": w, "title": t}).
"""
import json
import logging
import os
import re
import sys
import time

# Keys whose values are never written, whatever logged them.
SECRET_KEYS = frozenset({"authorization", "token", "secret", "password", "node_secret", "admin_token"})
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',]+", re.IGNORECASE)
_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _redact(value):
    if isinstance(value, str):
        return _BEARER.sub(r"\1[redacted]", value)
    if isinstance(value, dict):
        return {k: "[redacted]" if str(k).lower() in SECRET_KEYS else _redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact(v) for v in value]
    return value


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
            "pid": record.process,
        }
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                out[key] = "[redacted]" if key.lower() in SECRET_KEYS else value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(_redact(out), default=str, ensure_ascii=False)


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return _redact(super().format(record))


def setup_logging(json_lines: bool = True, level: str = "INFO") -> None:
    """Configure the root logger once per process (idempotent)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else
                         RedactingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(os.environ.get("BW_LOG_LEVEL", level).upper())
    # urllib3 logs full URLs at DEBUG; keep it quiet
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("cassandra").setLevel(logging.WARNING)
