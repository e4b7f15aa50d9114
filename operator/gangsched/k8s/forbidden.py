"""403 Forbidden answers by cause: logged once per cause, counted, and listed for /readyz and the metrics.

Contract:
- `ForbiddenBook(clock=time.monotonic, hold=600.0)`; `note(request, exc) -> bool` records a 403 answered to
  `request` ("create pods/binding"); True the first time its cause is seen, when the caller logs it with the fix.
  A cause is the request and the server's message without the object's name: one per missing permission.
- `clear(request)`: a request of that kind succeeded, its causes go; `active`: any cause recorded.
- `request_of(verb, path)`: the request's name for a path ("patch pods/status").
- `causes(now=None)`: causes seen within `hold` seconds and not cleared, oldest first; `total`: 403s noted.
Plain reads (`causes`, `total`) are safe from another thread (the metrics server).
More: docs/modules.md#k8sforbiddenpy.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from gangsched.k8s.errors import ApiError

Clock = Callable[[], float]
_OBJECT = re.compile(r'^[\w./-]+ "[^"]*" is forbidden: ')


def request_of(verb: str, path: str) -> str:
    """ "<verb> <resource>[/<subresource>]" of an API path, e.g. ("patch", "/api/v1/namespaces/a/pods/p/status")
    -> "patch pods/status" (what RBAC authorizes)."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if len(rest) >= 2 and rest[0] == "namespaces":
        rest = rest[2:] or ["namespaces"]
    if not rest:
        return f"{verb} {path}"
    return f"{verb} {rest[0]}/{rest[2]}" if len(rest) > 2 else f"{verb} {rest[0]}"


def cause_of(request: str, exc: ApiError) -> str:
    """The cause of a 403: the request and the server's message without the object's name."""
    return f"{request}: {_OBJECT.sub('', exc.message) or exc.reason}"


class ForbiddenBook:
    def __init__(self, *, clock: Clock = time.monotonic, hold: float = 600.0) -> None:
        self._clock = clock
        self._hold = hold
        self._seen: dict[str, tuple[str, float]] = {}  # cause -> (request, last seen)
        self.total = 0

    def note(self, request: str, exc: ApiError) -> bool:
        """Record a 403 to `request`; True when its cause is new (log it now, and only now)."""
        self.total += 1
        now = self._clock()
        cause = cause_of(request, exc)
        known = self._seen.get(cause)
        self._seen[cause] = (request, now)
        return known is None or now - known[1] > self._hold

    @property
    def active(self) -> bool:
        """Whether any cause is recorded (a writer names its request only then: the hot path stays cheap)."""
        return bool(self._seen)

    def clear(self, request: str) -> None:
        """A request of this kind succeeded: its causes are over."""
        if self._seen:
            self._seen = {c: (r, t) for c, (r, t) in self._seen.items() if r != request}

    def causes(self, now: float | None = None) -> list[str]:
        """The causes seen within the last `hold` seconds, not cleared since, oldest first."""
        now = self._clock() if now is None else now
        seen = list(self._seen.items())  # (a copy: read from the metrics thread too)
        return [cause for cause, (_, at) in sorted(seen, key=lambda item: item[1][1]) if now - at <= self._hold]
