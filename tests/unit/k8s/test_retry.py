"""The retry policy and the client-side rate limiter (k8s/retry.py, k8s/ratelimit.py), on a fake clock.

Mirrors client-go:
- k8s.io/client-go/rest/with_retry.go: `checkWait` (a 429 or 5xx may carry Retry-After, in whole seconds, and
  the client waits that long before the next attempt), `IsNextRetry` (bounded by maxRetries; other errors are
  not retried), and the wait before a retry is the Retry-After *and* the backoff;
- k8s.io/client-go/util/flowcontrol/throttle.go: tokenBucketRateLimiter (qps, burst; a full bucket at start;
  Accept waits for the next token instead of failing);
plus what client-go leaves out and the issue asks for: full jitter (AWS architecture blog, "Exponential Backoff
And Jitter": sleep = random(0, min(cap, base * 2^n))) and a bound on total time.
"""

from __future__ import annotations

import pytest

from gangsched.k8s.errors import ApiError
from gangsched.k8s.ratelimit import TokenBucket
from gangsched.k8s.retry import DEFAULT, NO_RETRY, PERSISTENT, Retrier, RetryPolicy, classify
from tests.fake_time import FakeTime


class Flaky:
    """A call that raises the given errors in turn, then returns "ok"."""

    def __init__(self, *errors: ApiError) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def err(status: int, retry_after: float | None = None, reason: str = "x") -> ApiError:
    return ApiError(status, reason, "m", retry_after=retry_after)


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (429, "TooManyRequests", "retry"),
        (500, "InternalError", "retry"),
        (502, "Bad Gateway", "retry"),
        (503, "ServiceUnavailable", "retry"),
        (504, "Gateway Timeout", "retry"),
        (0, "ConnectionError", "retry"),
        (200, "InvalidResponse", "retry"),  # a 2xx body cut short
        (401, "Unauthorized", "auth"),
        (400, "BadRequest", "fail"),
        (403, "Forbidden", "fail"),
        (404, "NotFound", "fail"),
        (409, "Conflict", "fail"),
        (422, "Invalid", "fail"),
    ],
)
def test_classification_429_5xx_and_no_answer_retry_other_4xx_do_not(status: int, reason: str, expected: str) -> None:
    """client-go with_retry.go checkWait: 429 and any 5xx may be retried; a 4xx other than 429 is final."""
    assert classify(ApiError(status, reason, "m")) == expected


def test_backoff_is_full_jitter_exponential_and_capped() -> None:
    policy = RetryPolicy(initial_backoff=0.1, max_backoff=2.0)
    assert [policy.backoff(n, lambda: 1.0) for n in range(7)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0])
    assert policy.backoff(3, lambda: 0.0) == 0.0  # full jitter: anywhere from zero
    assert policy.backoff(3, lambda: 0.5) == pytest.approx(0.4)
    assert policy.backoff(10_000, lambda: 1.0) == 2.0  # no overflow


async def test_retry_after_is_honoured_and_longer_than_the_backoff() -> None:
    """client-go rest/with_retry.go Before(): sleeps r.retryAfter.Wait (the Retry-After seconds) before retrying."""
    t = FakeTime(1000.0)
    call = Flaky(err(503, retry_after=3), err(429, retry_after=1))
    retrier = Retrier(RetryPolicy(initial_backoff=0.1, max_backoff=1.0), clock=t.clock, sleep=t.sleep, rand=lambda: 0.5)
    assert await retrier.call(call) == "ok"
    assert call.calls == 3
    assert t.sleeps == [3.0, 1.0]
    assert retrier.retries == 2


async def test_retry_after_is_capped() -> None:
    t = FakeTime(1000.0)
    retrier = Retrier(
        RetryPolicy(max_retry_after=10.0, max_elapsed=None), clock=t.clock, sleep=t.sleep, rand=lambda: 0.0
    )
    assert await retrier.call(Flaky(err(429, retry_after=3600))) == "ok"
    assert t.sleeps == [10.0]


async def test_bounded_by_attempts() -> None:
    """client-go with_retry.go IsNextRetry: no retry once attempts > maxRetries; the last error is returned."""
    t = FakeTime(1000.0)
    call = Flaky(*[err(502) for _ in range(10)])
    retrier = Retrier(RetryPolicy(max_attempts=4, max_elapsed=None), clock=t.clock, sleep=t.sleep, rand=lambda: 1.0)
    with pytest.raises(ApiError) as info:
        await retrier.call(call)
    assert info.value.status == 502
    assert call.calls == 4 and len(t.sleeps) == 3


async def test_bounded_by_total_time() -> None:
    """A retry whose sleep would end past max_elapsed is not made: the call fails instead of waiting longer."""
    t = FakeTime(1000.0)
    call = Flaky(*[err(503, retry_after=4) for _ in range(10)])
    retrier = Retrier(RetryPolicy(max_attempts=None, max_elapsed=10.0), clock=t.clock, sleep=t.sleep, rand=lambda: 0.0)
    with pytest.raises(ApiError):
        await retrier.call(call)
    assert t.sleeps == [4.0, 4.0]  # a third 4 s sleep would end at 12 s > 10 s
    assert call.calls == 3


async def test_other_4xx_is_raised_at_once() -> None:
    t = FakeTime(1000.0)
    for status in (400, 401, 403, 404, 409, 422):
        call = Flaky(err(status))
        with pytest.raises(ApiError):
            await Retrier(DEFAULT, clock=t.clock, sleep=t.sleep).call(call)
        assert call.calls == 1
    assert t.sleeps == []


async def test_no_retry_and_persistent_policies() -> None:
    t = FakeTime(1000.0)
    call = Flaky(err(503))
    with pytest.raises(ApiError):
        await Retrier(NO_RETRY, clock=t.clock, sleep=t.sleep).call(call)
    assert call.calls == 1
    call = Flaky(*[err(503) for _ in range(200)])
    assert await Retrier(PERSISTENT, clock=t.clock, sleep=t.sleep, rand=lambda: 1.0).call(call) == "ok"
    assert call.calls == 201
    assert max(t.sleeps) == PERSISTENT.max_backoff


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="initial_backoff"):
        RetryPolicy(initial_backoff=2.0, max_backoff=1.0)


async def test_token_bucket_allows_a_burst_then_qps() -> None:
    """client-go util/flowcontrol tokenBucketRateLimiter: starts with `burst` tokens, then refills at `qps`;
    Accept() blocks until a token is available."""
    t = FakeTime(1000.0)
    bucket = TokenBucket(qps=10, burst=5, clock=t.clock, sleep=t.sleep)
    for _ in range(5):
        await bucket.acquire()
    assert t.sleeps == [] and bucket.throttled == 0
    for _ in range(3):
        await bucket.acquire()
    assert t.sleeps == pytest.approx([0.1, 0.1, 0.1])
    assert bucket.throttled == 3
    t.now += 10.0  # idle: the bucket refills, but never beyond burst
    for _ in range(5):
        await bucket.acquire()
    assert len(t.sleeps) == 3
    await bucket.acquire()
    assert t.sleeps[-1] == pytest.approx(0.1)


def test_token_bucket_reservations_queue_in_order() -> None:
    """Concurrent waiters are spaced 1/qps apart (golang.org/x/time/rate Reserve), not woken all at once."""
    t = FakeTime(1000.0)
    bucket = TokenBucket(qps=100, burst=1, clock=t.clock, sleep=t.sleep)
    waits = [bucket.reserve() for _ in range(4)]
    assert waits == pytest.approx([0.0, 0.01, 0.02, 0.03])


def test_token_bucket_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="qps"):
        TokenBucket(0, 1)
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(1, 0)


def test_rate_limit_is_configured_from_the_operator_config() -> None:
    """`apiClient: {qps, burst}` (like kube-scheduler's clientConnection.qps/burst); defaults sized not to cap a
    1,600-pod binding burst (see `make bench BENCH=e2e`, e2e.bind_ratio)."""
    from gangsched.core.values.errors import InvalidField
    from gangsched.models.config import config_from_mapping

    default = config_from_mapping({}).api_client
    assert (default.qps, default.burst) == (1000.0, 2000)
    custom = config_from_mapping({"apiClient": {"qps": 50, "burst": 100}}).api_client
    assert (custom.qps, custom.burst) == (50.0, 100)
    with pytest.raises(InvalidField) as info:
        config_from_mapping({"apiClient": {"qps": 0}})
    assert "apiClient.qps" in str(info.value)
    with pytest.raises(InvalidField) as info:
        config_from_mapping({"apiClient": {"burst": 0}})
    assert "apiClient.burst" in str(info.value)
