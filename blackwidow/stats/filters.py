"""The revision filters of `blackwidow stats` (key=value words), parsed and checked. Pure: no I/O."""
import datetime as dt
from dataclasses import asdict, dataclass
from datetime import datetime, time, timezone

from shared.errors import ValidationError
from shared.revisions.model import Revision

FILTERS = ("title", "pageid", "user", "userid", "tag", "size", "sizematch", "date", "datestart", "dateend")
SIZE_MATCHES = (">", "<", "=")
_INTS = ("pageid", "userid", "size")
_DATES = ("date", "datestart", "dateend")
_END_OF_DAY = time(23, 59, 59, 999_000)     # stores keep milliseconds


@dataclass(frozen=True)
class Filters:
    title: str | None = None
    pageid: int | None = None
    user: str | None = None
    userid: int | None = None
    tag: str | None = None
    size: int | None = None
    sizematch: str | None = None
    date: dt.date | None = None           # a field named like the type: hence dt.date
    datestart: dt.date | None = None
    dateend: dt.date | None = None

    @property
    def first_day(self) -> dt.date | None:
        return self.date or self.datestart

    @property
    def last_day(self) -> dt.date | None:
        return self.date or self.dateend

    def time_bounds(self) -> tuple[datetime | None, datetime | None]:
        """Inclusive UTC instants of the date filters, for reading only that span of a page."""
        first, last = self.first_day, self.last_day
        return (None if first is None else datetime.combine(first, time(0), timezone.utc),
                None if last is None else datetime.combine(last, _END_OF_DAY, timezone.utc))

    def matches(self, r: Revision) -> bool:
        """Every filter but title/pageid, which select the page before its revisions are read."""
        day = r.timestamp.astimezone(timezone.utc).date()
        return ((self.user is None or r.user == self.user)
                and (self.userid is None or r.user_id == self.userid)
                and (self.tag is None or self.tag in r.tags)
                and (self.size is None or _compare(r.size, self.sizematch or "=", self.size))
                and (self.first_day is None or day >= self.first_day)
                and (self.last_day is None or day <= self.last_day))

    def given(self) -> dict:
        """The filters that were set, as strings (for reports)."""
        return {k: v if isinstance(v, (str, int)) else v.isoformat()
                for k, v in asdict(self).items() if v is not None}


def _compare(value: int, op: str, bound: int) -> bool:
    return value > bound if op == ">" else value < bound if op == "<" else value == bound


def parse_filters(words: list[str]) -> Filters:
    """`key=value` words -> Filters. Raises ValidationError naming the filter."""
    values: dict = {}
    for word in words:
        key, sep, raw = word.partition("=")
        key = key.strip().lower()
        if not sep:
            raise ValidationError(f"filter {word!r} is not key=value; allowed filters: {', '.join(FILTERS)}",
                                  key)
        if key not in FILTERS:
            raise ValidationError(f"unknown filter {key!r}; allowed filters: {', '.join(FILTERS)}", key)
        if key in values:
            raise ValidationError(f"filter {key!r} is given twice", key)
        values[key] = _value(key, raw)
    if "sizematch" in values and "size" not in values:
        raise ValidationError("sizematch needs a size filter (size=N sizematch=>)", "sizematch")
    if "date" in values and ("datestart" in values or "dateend" in values):
        raise ValidationError("date cannot be combined with datestart or dateend", "date")
    if values.get("datestart") and values.get("dateend") and values["datestart"] > values["dateend"]:
        raise ValidationError("datestart is after dateend", "datestart")
    return Filters(**values)


def _value(key: str, raw: str):
    if raw == "":
        raise ValidationError(f"filter {key!r} has no value", key)
    if key in _INTS:
        try:
            value = int(raw)
        except ValueError:
            raise ValidationError(f"{key} must be an integer, got {raw!r}", key) from None
        if value < 0:
            raise ValidationError(f"{key} must not be negative, got {raw!r}", key)
        return value
    if key in _DATES:
        try:
            return dt.date.fromisoformat(raw)
        except ValueError:
            raise ValidationError(f"{key} must be a date YYYY-MM-DD, got {raw!r}", key) from None
    if key == "sizematch" and raw not in SIZE_MATCHES:
        raise ValidationError(f"sizematch must be one of {' '.join(SIZE_MATCHES)}, got {raw!r}", key)
    return raw
