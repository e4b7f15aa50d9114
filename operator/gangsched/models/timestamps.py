"""Kubernetes timestamps (metav1.Time, metav1.MicroTime) read and written with the standard library's datetime.

Contract:
- `parse_time(text, *, field) -> float`: epoch seconds of an RFC 3339 date-time as Go's RFC3339(Nano) layouts read
  and Kubernetes writes (`Z` or a numeric offset, up to nanoseconds); stricter than ISO 8601, invalid dates and
  times rejected (as Go's time.Parse); anything else raises InvalidField naming `field`, the value and the form.
- `parse_datetime(text) -> datetime | None`: the same as an aware UTC datetime; None where `parse_time` raises.
- `format_time(moment) -> str`: metav1.Time (UTC, whole seconds truncated), e.g. `2024-05-01T12:00:00Z`.
- `format_micro_time(moment) -> str`: metav1.MicroTime (six fractional digits).
- `now_time()`: `format_time` of the wall clock (the boundary reads the clock; the core never does).
More: docs/modules.md#modelstimestampspy.
"""

from __future__ import annotations

import datetime as dt
import re

from gangsched.core import InvalidField

_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})")
_ALLOWED = "must be an RFC 3339 timestamp such as 2024-05-01T12:00:00Z (fractional seconds and +hh:mm offsets allowed)"
_UTC = dt.UTC


def parse_time(text: object, *, field: str) -> float:
    """Epoch seconds of an RFC 3339 timestamp; InvalidField naming `field` otherwise."""
    if not isinstance(text, str) or _SHAPE.fullmatch(text) is None:
        raise InvalidField(field, text, _ALLOWED)
    try:
        return dt.datetime.fromisoformat(text.upper()).timestamp()
    except ValueError as exc:  # a date or time that does not exist (2023-02-29, 25:00:00)
        raise InvalidField(field, text, f"{_ALLOWED}; {exc}") from None


def parse_datetime(text: object) -> dt.datetime | None:
    """An RFC 3339 timestamp as an aware UTC datetime; None when absent or unreadable."""
    try:
        return dt.datetime.fromtimestamp(parse_time(text, field="timestamp"), _UTC)
    except InvalidField:
        return None


def _utc(moment: dt.datetime | float) -> dt.datetime:
    if isinstance(moment, dt.datetime):
        return moment.astimezone(_UTC)
    return dt.datetime.fromtimestamp(moment, _UTC)


def format_time(moment: dt.datetime | float) -> str:
    """metav1.Time: `2024-05-01T12:00:00Z`."""
    return _utc(moment).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def format_micro_time(moment: dt.datetime | float) -> str:
    """metav1.MicroTime: `2024-05-01T12:00:00.123456Z`."""
    return _utc(moment).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def now_time() -> str:
    """metav1.Time of now."""
    return format_time(dt.datetime.now(_UTC))
