import io
import json
import logging

from shared.logging import JsonFormatter


def test_secrets_are_redacted_from_keys_values_and_messages():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("test.redaction")
    log.addHandler(handler)
    log.propagate = False
    log.setLevel(logging.INFO)
    log.info("sent Authorization: Bearer s3cr3t-token", extra={"headers": {"Authorization": "Bearer s3cr3t-token"},
                                                               "node_secret": "s3cr3t-token", "node": "n1"})
    line = stream.getvalue()
    assert "s3cr3t-token" not in line
    record = json.loads(line)
    assert record["node"] == "n1" and record["event"].startswith("sent Authorization")
