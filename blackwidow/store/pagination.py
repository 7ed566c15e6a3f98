"""Keyset pagination in (created_at, id) order: stable while rows are added or removed.

The cursor is opaque to clients (base64 of the last row's key); a tampered one is a 422 on 'cursor'.
"""
import base64
import binascii
import json
from datetime import datetime, timezone

import sqlalchemy as sa

from shared.errors import ValidationError


def as_utc(value: datetime) -> datetime:
    # SQLite hands back naive datetimes; every timestamp the hub writes is UTC.
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def encode_cursor(created_at: datetime, row_id: str) -> str:
    raw = json.dumps([as_utc(created_at).isoformat(), row_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, row_id = json.loads(raw)
        if not isinstance(row_id, str) or not isinstance(created, str):
            raise ValueError("bad cursor shape")
        return as_utc(datetime.fromisoformat(created)), row_id
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ValidationError("'cursor' is not a cursor this API returned", field="cursor") from None


def page(session, stmt, created_col, id_col, *, limit: int, cursor: str | None):
    """Rows of `stmt` after `cursor`, at most `limit`, and the cursor of the next page (None at the end).
    Each row's first element must be the entity carrying created_at and id."""
    if cursor is not None:
        created, row_id = decode_cursor(cursor)
        stmt = stmt.where(sa.or_(created_col > created, sa.and_(created_col == created, id_col > row_id)))
    rows = session.execute(stmt.order_by(created_col, id_col).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if more:
        last = rows[-1][0]
        next_cursor = encode_cursor(last.created_at, last.id)
    return rows, next_cursor
