"""The client-side rate limiter: a token bucket of `qps` tokens per second holding at most `burst`.

Contract (as client-go's util/flowcontrol token bucket, built on golang.org/x/time/rate):
- The bucket starts full. `await acquire()` takes one token; when none is left it reserves the next one and
  sleeps until it is due, so waiters are served in arrival order at `qps` on average, with bursts up to `burst`.
- `throttled` counts the acquisitions that had to wait.
- Clock and sleep are injectable, so tests run on a fake clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be > 0, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = clock()
        self.throttled = 0

    def reserve(self) -> float:
        """Take a token now or reserve the next one; returns how long to wait before using it (seconds)."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            self.throttled += 1
            await self._sleep(wait)
