"""One retry policy for the operator's API calls: exponential backoff with full jitter, honouring Retry-After,
bounded by attempts and by total time.

Contract:
- `RetryPolicy` (frozen): `backoff(retry, rand)` is uniform in [0, min(max_backoff, initial_backoff * 2**retry));
  `delay(retry, error, rand)` the larger of that and the server's capped `Retry-After`.
- `classify(error)`: "retry" (429, 5xx, no or unreadable answer), "auth" (401), "fail" (other 4xx).
- `Retrier(policy, clock=, sleep=, rand=)`: `await retrier.call(fn)` repeats `fn()` on retryable errors until it
  succeeds, the attempts are spent or the next sleep would pass `max_elapsed`; then raises the last error.
- `DEFAULT` (5 attempts within 30 s), `NO_RETRY` (1 attempt), `PERSISTENT` (no limit, for writes that must land).
Elsewhere pass `retry=` to a KubeClient call or wrap a multi-step operation in a Retrier; no other retry loops.
More: docs/modules.md#k8sretrypy.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from gangsched.k8s.errors import ApiError

T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
Rand = Callable[[], float]
Classification = Literal["retry", "auth", "fail"]


def classify(error: ApiError) -> Classification:
    """How to treat a failed call: retry it, refresh credentials (401) or give up."""
    if error.status == 401:
        return "auth"
    return "retry" if error.transient else "fail"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    initial_backoff: float = 0.1
    max_backoff: float = 5.0
    max_attempts: int | None = 5  # None: no limit
    max_elapsed: float | None = 30.0  # seconds from the first attempt; None: no limit
    max_retry_after: float = 60.0  # a larger Retry-After is capped to this

    def __post_init__(self) -> None:
        if self.initial_backoff <= 0 or self.max_backoff < self.initial_backoff:
            raise ValueError(f"need 0 < initial_backoff <= max_backoff, got {self.initial_backoff}, {self.max_backoff}")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1 or None, got {self.max_attempts}")

    def backoff(self, retry: int, rand: Rand = random.random) -> float:
        """The jittered sleep before retry number `retry` (0 = the first retry)."""
        ceiling = min(self.max_backoff, self.initial_backoff * float(2 ** min(retry, 62)))
        return float(ceiling * rand())

    def delay(self, retry: int, error: ApiError | None, rand: Rand = random.random) -> float:
        """The sleep before retry number `retry` after `error`: the backoff, or the server's Retry-After if longer."""
        wait = self.backoff(retry, rand)
        if error is not None and error.retry_after is not None:
            wait = max(wait, min(max(error.retry_after, 0.0), self.max_retry_after))
        return wait


DEFAULT = RetryPolicy()
NO_RETRY = RetryPolicy(max_attempts=1)
PERSISTENT = RetryPolicy(initial_backoff=0.2, max_backoff=30.0, max_attempts=None, max_elapsed=None)


class Retrier:
    """Runs calls under one RetryPolicy, with injectable clock, sleep and randomness."""

    def __init__(
        self,
        policy: RetryPolicy = DEFAULT,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        rand: Rand = random.random,
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.sleep = sleep
        self.rand = rand
        self.retries = 0  # retries made, over all calls (a metric)

    def next_delay(self, attempts: int, started: float, error: ApiError) -> float | None:
        """The sleep before another attempt, after `attempts` attempts that began at `started`; None: give up."""
        if classify(error) != "retry":
            return None
        policy = self.policy
        if policy.max_attempts is not None and attempts >= policy.max_attempts:
            return None
        wait = policy.delay(attempts - 1, error, self.rand)
        if policy.max_elapsed is not None and self.clock() + wait - started > policy.max_elapsed:
            return None
        return wait

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        started = self.clock()
        attempts = 0
        while True:
            attempts += 1
            try:
                return await fn()
            except ApiError as error:
                wait = self.next_delay(attempts, started, error)
                if wait is None:
                    raise
            self.retries += 1
            await self.sleep(wait)
