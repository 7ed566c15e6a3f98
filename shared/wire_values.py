"""Timestamps and counts as the hub-spawn JSON shapes carry them (shared.dump_wire, shared.census_wire). Pure."""
from __future__ import annotations

from datetime import datetime, timezone

from shared.errors import ValidationError
from shared.wire_fields import required


def wire_time(at: datetime) -> str:
    """A timestamp as the shapes carry it: ISO 8601 in UTC with a Z."""
    return at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """A timestamp of the shapes, in UTC; ValueError without a time zone."""
    at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if at.tzinfo is None:
        raise ValueError(f"no time zone in {text!r}")
    return at.astimezone(timezone.utc)


def iso_field(body: object, name: str, *, optional: bool = False) -> str:
    """A timestamp field, kept as its ISO text once it parses with a time zone."""
    value = required(body, name, str, optional=optional)
    if value is None:
        return value            # type: ignore[return-value]
    try:
        parse_time(value)
    except ValueError:
        raise ValidationError(f"'{name}' must be an ISO timestamp with a time zone", field=name) from None
    return value


def count_field(body: object, name: str, *, optional: bool = False) -> int | None:
    value = required(body, name, int, optional=optional)
    if value is not None and (isinstance(value, bool) or value < 0):
        raise ValidationError(f"'{name}' must be a count", field=name)
    return value


def namespaces_field(body: object) -> tuple[int, ...] | None:
    """`namespaces`: a non-empty list of namespace numbers, or absent (None: every namespace)."""
    given = required(body, "namespaces", list, optional=True)
    if given is None:
        return None
    if not given or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in given):
        raise ValidationError("'namespaces' must be a list of namespace numbers", field="namespaces")
    return tuple(given)


def shard_count_field(body: object, most: int) -> int:
    count = count_field(body, "shard_count") or 0
    if not 1 <= count <= most:
        raise ValidationError(f"'shard_count' must be 1 to {most}", field="shard_count")
    return count


def tenants_field(body: object) -> tuple[str, ...]:
    """`tenants`: the tenant ids a duty's requests are paced for; absent: none."""
    tenants = required(body, "tenants", list, optional=True) or []
    if not all(isinstance(t, str) for t in tenants):
        raise ValidationError("'tenants' must be a list of ids", field="tenants")
    return tuple(tenants)
