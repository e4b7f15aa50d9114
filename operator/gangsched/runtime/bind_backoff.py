"""Backoff of failed bindings per scheduling unit, and how long bindings have been failing.

Contract:
- `BindBackoff(initial=1.0, maximum=10.0, clock=time.monotonic)`: a unit (gang, or pod without one) whose binding
  attempt failed (a pod's binding failed, not "gone" nor "gated") waits `initial * 2**(n-1)` s after its n-th
  consecutive failure, at most `maximum` (kube-scheduler's pod backoff; cluster events do not end it early).
  `failed(unit, now) -> delay`; `succeeded(unit)` resets it; a unit not failing for 10 minutes is forgotten.
- `retry_in_binder(unit)`: the binder may retry transient errors itself only while the unit has not failed yet;
  after that each attempt is one POST per pod.
- `failing_since`: when bindings began to fail with none succeeding since (None otherwise), for /readyz.
Called from the event loop only; `failing_since` is a plain read (safe from the metrics thread).
More: docs/modules.md#runtimebind_backoffpy.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cachetools import TTLCache

from gangsched.core import UnitKey

FORGET_AFTER = 600.0


class BindBackoff:
    def __init__(
        self, *, initial: float = 1.0, maximum: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not 0 < initial <= maximum:
            raise ValueError(f"need 0 < initial <= maximum, got {initial}, {maximum}")
        self.initial = initial
        self.maximum = maximum
        self._failures: TTLCache[UnitKey, int] = TTLCache(maxsize=1_000_000, ttl=FORGET_AFTER, timer=clock)
        self.failing_since: float | None = None

    def delay(self, failures: int) -> float:
        """The wait after the `failures`-th consecutive failed attempt (1-based)."""
        return float(min(self.maximum, self.initial * 2.0 ** min(max(failures - 1, 0), 62)))

    def failed(self, unit: UnitKey, now: float) -> float:
        """A binding attempt of `unit` failed at `now` (monotonic): the seconds it waits now."""
        failures = self._failures.get(unit, 0) + 1
        self._failures[unit] = failures
        if self.failing_since is None:
            self.failing_since = now
        return self.delay(failures)

    def succeeded(self, unit: UnitKey) -> None:
        self._failures.pop(unit, None)
        self.failing_since = None

    def failures(self, unit: UnitKey) -> int:
        return self._failures.get(unit, 0)

    def retry_in_binder(self, unit: UnitKey) -> bool:
        return unit not in self._failures
