"""Go-style durations ("30s", "10m", "1h30m", "1.5h", "250ms"), as Koordinator's waiting-time uses.

Contract: `parse_duration(value, *, field, maximum=None) -> float` returns seconds (> 0, finite, <= maximum when
given) or raises core.errors.InvalidField naming `field`, the value (cut when long) and the allowed form. Same grammar
as Go's time.ParseDuration (units ns, us, µs, ms, s, m, h; a sequence of decimal numbers each with a unit), except
that a bare number is not accepted and the result must be positive. Bounded like Go's (whose Duration is an int64
of nanoseconds, at most 2562047h47m16.854775807s): at most MAX_DURATION_CHARS characters, so a 400-digit number
never becomes infinity.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Final

from gangsched.core import InvalidField
from gangsched.models.fields import shown

ALLOWED = "a positive duration like 30s, 10m or 1h30m (units ns, us, ms, s, m, h)"
MAX_DURATION_CHARS: Final = 64

_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


@lru_cache(maxsize=256)
def _seconds(text: str) -> float | None:
    pos, total = 0, 0.0
    while pos < len(text):
        match = _PART.match(text, pos)
        if match is None:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    return total if pos > 0 else None


def parse_duration(value: object, *, field: str, maximum: float | None = None) -> float:
    """Seconds of a Go duration string; InvalidField(field, value, ALLOWED) when it is not one, not > 0, longer than
    MAX_DURATION_CHARS or above `maximum`."""
    if not isinstance(value, str):
        raise InvalidField(field, shown(value), ALLOWED)
    text = value.strip()
    if len(text) > MAX_DURATION_CHARS:
        raise InvalidField(field, shown(value), f"{ALLOWED}, at most {MAX_DURATION_CHARS} characters")
    seconds = _seconds(text)
    if seconds is None or seconds <= 0 or not math.isfinite(seconds):
        raise InvalidField(field, value, ALLOWED)
    if maximum is not None and seconds > maximum:
        raise InvalidField(field, value, f"{ALLOWED}, at most {maximum:.0f}s")
    return seconds
