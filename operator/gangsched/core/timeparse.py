"""RFC 3339 timestamps to float seconds since the Unix epoch, without the datetime module (the core may not
import it).

Contract: `parse_rfc3339(text, *, field) -> float` accepts `2024-05-01T12:00:00Z`, fractional seconds
(`...00.123456Z`) and numeric offsets (`+02:00`, `-0530`); lowercase `t`/`z` too. Anything else raises
InvalidField naming `field`.
"""

from __future__ import annotations

import re

from gangsched.core.errors import InvalidField

_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$")
_ALLOWED = "must be an RFC 3339 timestamp such as 2024-05-01T12:00:00Z"


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def parse_rfc3339(text: str, *, field: str) -> float:
    if not isinstance(text, str):
        raise InvalidField(field, text, _ALLOWED)
    m = _RFC3339.match(text)
    if m is None:
        raise InvalidField(field, text, _ALLOWED)
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1] and hour < 24 and minute < 60 and second < 61):
        raise InvalidField(field, text, _ALLOWED)
    seconds = float(_days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second)
    if m.group(7):
        seconds += float(m.group(7))
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    return seconds
