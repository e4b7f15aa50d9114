"""Coalescing writers: PodGroup status, pod conditions/annotations/nominations, and Kubernetes events.

Contract:
- `PatchWriter.patch(path, body, content_type=...)` never blocks nor raises: patches to one path are deep-merged
  until sent (after `settle`, and `min_gap` since the path's last write); one equal to the last written is skipped
  (`forget_written(path)`); retried until written or 404 (k8s/retry.py `PERSISTENT`), newer content merging in.
  `flush(everything=False)`, `run()`, `discard(path, ...)`; `errors`, `writes`.
- `EventRecorder.record(ref, type_, reason, message)` never blocks; events are recorded as client-go's broadcaster
  does (cluster-scoped objects in `default`, aggregation of similar messages, count patches for repeats, 12 tries,
  the per-object spam filter); the backlog is bounded (`backlog`), the rest dropped and counted.
- Both wait for `defer_to` (the binder's `idle`) at most `max_defer` s before a batch (`deferrals`), note 403s in
  `forbidden`, skip the client's retries; clock, sleep, random injectable. More: docs/modules.md#k8scoalescingpy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache, TTLCache

from gangsched.k8s.client import MERGE_PATCH, ApiError, KubeClient, resource_path
from gangsched.k8s.forbidden import ForbiddenBook, request_of
from gangsched.k8s.retry import NO_RETRY, PERSISTENT, RetryPolicy
from gangsched.models.timestamps import now_time

log = logging.getLogger(__name__)

Clock = Callable[[], float]
PathKey = tuple[str, str]  # (path, content type)


def _deep_merge(into: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = value
    return into


def now_rfc3339() -> str:
    return now_time()


def _must_defer(event: asyncio.Event | None, max_defer: float) -> bool:
    return event is not None and not event.is_set() and max_defer > 0


async def _wait_set(event: asyncio.Event, timeout: float) -> None:
    """Wait until event is set, for at most timeout seconds."""
    with contextlib.suppress(TimeoutError):  # asyncio.timeout: wait_for may swallow a cancel (Python 3.11)
        async with asyncio.timeout(timeout):
            await event.wait()


async def _wait_any(event: asyncio.Event, timeout: float | None) -> None:
    """Wait until event is set, or timeout seconds (None: no limit)."""
    if timeout is None:
        await event.wait()
    elif timeout > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)


def _level(forbidden: ForbiddenBook | None, request: str, exc: ApiError) -> int:
    """The level to log a failed write at: a 403 whose cause was logged before (k8s/forbidden.py) at DEBUG."""
    if exc.status == 403 and forbidden is not None and not forbidden.note(request, exc):
        return logging.DEBUG
    return logging.WARNING if exc.transient else logging.ERROR


class PatchWriter:
    def __init__(
        self,
        client: KubeClient,
        *,
        concurrency: int = 16,
        defer_to: asyncio.Event | None = None,
        max_defer: float = 2.0,
        min_gap: float = 1.0,
        settle: float = 0.5,
        policy: RetryPolicy = PERSISTENT,
        clock: Clock = time.monotonic,
        rand: Callable[[], float] = random.random,
        forbidden: ForbiddenBook | None = None,
    ) -> None:
        self._client = client
        self._forbidden = forbidden
        self._defer_to = defer_to
        self._max_defer = max_defer
        self._min_gap = min_gap
        self._settle = settle
        self._policy = policy
        self._clock = clock
        self._rand = rand
        self._pending: dict[PathKey, dict[str, Any]] = {}
        self._not_before: dict[PathKey, float] = {}  # backoff after a failure, or the rest of min_gap
        self._attempts: dict[PathKey, int] = {}  # failed attempts in a row
        self._written: TTLCache[PathKey, dict[str, Any]] = TTLCache(maxsize=50_000, ttl=600)
        self._last_write: TTLCache[PathKey, float] = TTLCache(maxsize=50_000, ttl=max(min_gap, 1.0) * 2)
        # bumped by forget_written: a write in flight across it was to the old object and is not remembered
        self._epochs: TTLCache[PathKey, int] = TTLCache(maxsize=50_000, ttl=600)
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(concurrency)
        self.errors = 0
        self.writes = 0
        self.deferrals = 0

    def patch(self, path: str, body: dict[str, Any], *, content_type: str = MERGE_PATCH) -> None:
        key = (path, content_type)
        current = self._pending.get(key)
        if current is None:
            self._pending[key] = _deep_merge({}, body)
            if self._settle > 0 and key not in self._not_before:
                self._not_before[key] = self._clock() + self._settle
        else:
            _deep_merge(current, body)
        self._wake.set()

    def discard(self, path: str, *, content_type: str = MERGE_PATCH) -> None:
        key = (path, content_type)
        self._pending.pop(key, None)
        self._not_before.pop(key, None)
        self._attempts.pop(key, None)

    def forget_written(self, path: str, *, content_type: str = MERGE_PATCH) -> None:
        """Forget what was last written to `path` (the object there was re-created): the next patch is sent even
        if equal to it, and without waiting out min_gap."""
        key = (path, content_type)
        self._written.pop(key, None)
        self._last_write.pop(key, None)
        self._epochs[key] = self._epochs.get(key, 0) + 1

    @property
    def idle(self) -> bool:
        return not self._pending

    @property
    def retrying(self) -> int:
        """Paths whose last write failed and that wait for their next attempt."""
        return len(self._attempts)

    def _ready_at(self, key: PathKey) -> float:
        """When the pending patch of `key` may be sent: after its settle time or backoff, and min_gap after the
        last write of the path (a failed write waits for its backoff only)."""
        ready = self._not_before.get(key, float("-inf"))
        if key not in self._attempts:
            last = self._last_write.get(key)
            if last is not None:
                ready = max(ready, last + self._min_gap)
        return ready

    def _due(self, now: float) -> dict[PathKey, dict[str, Any]]:
        batch: dict[PathKey, dict[str, Any]] = {}
        for key in list(self._pending):
            if self._ready_at(key) > now:
                continue
            self._not_before.pop(key, None)
            batch[key] = self._pending.pop(key)
        return batch

    def _next_due(self) -> float | None:
        """Seconds until the earliest pending patch may be sent (0: now); None when nothing is pending."""
        if not self._pending:
            return None
        return max(0.0, min(self._ready_at(key) for key in self._pending) - self._clock())

    async def flush(self, *, everything: bool = False) -> None:
        """Send the patches that are due (with everything=True, also those waiting out a gap or a backoff)."""
        if everything:
            self._not_before.clear()
            batch, self._pending = self._pending, {}
        else:
            batch = self._due(self._clock())
        self._wake.clear()
        await asyncio.gather(*(self._send(key, body) for key, body in batch.items()))

    async def _send(self, key: PathKey, body: dict[str, Any]) -> None:
        if self._written.get(key) == body:
            self._attempts.pop(key, None)
            return
        path, content_type = key
        epoch = self._epochs.get(key, 0)
        try:
            async with self._slots:
                await self._client.patch(path, body, content_type=content_type, retry=NO_RETRY)
        except ApiError as exc:
            if exc.status == 404:
                self._attempts.pop(key, None)
                return  # the object is gone: nothing left to write to
            self.errors += 1
            attempts = self._attempts.get(key, 0) + 1
            self._attempts[key] = attempts
            delay = self._policy.delay(attempts - 1, exc, self._rand)
            level = _level(self._forbidden, request_of("patch", path), exc)
            log.log(level, "patching %s failed (attempt %d: %s); retrying in %.2fs", path, attempts, exc, delay)
            newer = self._pending.get(key)  # keep newer pending content: re-merge the failed body under it
            self._pending[key] = _deep_merge(body, newer) if newer else body
            self._not_before[key] = self._clock() + delay
            self._wake.set()
            return
        self.writes += 1
        self._attempts.pop(key, None)
        if self._forbidden is not None and self._forbidden.active:
            self._forbidden.clear(request_of("patch", path))
        if self._epochs.get(key, 0) != epoch:
            return  # forgotten while in flight: it went to the object that was there before (not remembered)
        self._written[key] = body
        self._last_write[key] = self._clock()

    async def run(self, *, min_interval: float = 0.02) -> None:
        while True:
            delay = self._next_due()
            if delay is None or delay > 0:  # nothing due yet: wait for a new patch or the first one due
                if not self._wake.is_set():
                    await _wait_any(self._wake, delay)
                self._wake.clear()
                continue
            await asyncio.sleep(min_interval)  # coalescing window: let a burst of patches merge
            if self._defer_to is not None and _must_defer(self._defer_to, self._max_defer):
                self.deferrals += 1
                await _wait_set(self._defer_to, self._max_defer)
            await self.flush()


@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str = ""


EventKey = tuple[str, str, str, str, str, str, str]  # namespace, kind, name, uid, apiVersion, type, reason
SpamKey = tuple[str, str, str, str, str]  # namespace, kind, name, uid, apiVersion (events_cache.go getSpamKey)
MAX_SIMILAR = 10  # events_cache.go defaultAggregateMaxEvents
SIMILAR_WINDOW = 600.0  # events_cache.go defaultAggregateIntervalInSeconds
MAX_TRIES = 12  # event.go maxTriesPerEvent
SPAM_BURST = 25  # events_cache.go defaultSpamBurst: events a source may send about one object at once
SPAM_QPS = 1.0 / 300.0  # events_cache.go defaultSpamQPS: then one more every 5 minutes
COMBINED = "(combined from similar events): "
EVENT_WRITES = "create events"  # (creates and count patches: one grant in the ClusterRole)


class EventAggregator:
    """client-go events_cache.go EventAggregator: counts the distinct messages of similar events (same object, type
    and reason) within `window` seconds; from the `max_similar`th on, the event is folded into one aggregate event."""

    def __init__(
        self, *, max_similar: int = MAX_SIMILAR, window: float = SIMILAR_WINDOW, clock: Clock = time.monotonic
    ) -> None:
        self._max = max_similar
        self._window = window
        self._clock = clock
        self._records: TTLCache[EventKey, tuple[set[str], float]] = TTLCache(maxsize=20_000, ttl=window)

    def aggregate(self, key: EventKey, message: str) -> tuple[tuple[EventKey, str], str]:
        """(the dedup key, the message) to record this event under."""
        now = self._clock()
        messages, last = self._records.get(key, (set(), now))
        if now - last > self._window:
            messages = set()
        messages.add(message)
        self._records[key] = (messages, now)
        if len(messages) < self._max:
            return (key, message), message
        return (key, ""), COMBINED + message


class SpamFilter:
    """client-go events_cache.go EventSourceObjectSpamFilter: a token bucket per involved object (burst 25, refilled
    at one event per 5 minutes), so an object that stays unhealthy (a pod that waits for hours, its FailedScheduling
    recorded at every attempt) does not write events without end. `allow(key)` takes a token; False: skip the
    event (its occurrence still counts: the next one written carries it in its count, as eventObserve counts it)."""

    def __init__(self, *, burst: int = SPAM_BURST, qps: float = SPAM_QPS, clock: Clock = time.monotonic) -> None:
        self._burst = float(burst)
        self._qps = qps
        self._clock = clock
        self._buckets: LRUCache[SpamKey, tuple[float, float]] = LRUCache(maxsize=20_000)  # key -> (tokens, at)
        self.filtered = 0

    def allow(self, key: SpamKey) -> bool:
        now = self._clock()
        tokens, at = self._buckets.get(key, (self._burst, now))
        tokens = min(self._burst, tokens + (now - at) * self._qps)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            self.filtered += 1
            return False
        self._buckets[key] = (tokens - 1.0, now)
        return True


@dataclass(slots=True)
class _Pending:
    ref: ObjectRef
    type_: str
    reason: str
    message: str
    count: int
    tries: int = 0


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        *,
        component: str = "gangsched",
        instance: str = "",
        backlog: int = 10_000,
        defer_to: asyncio.Event | None = None,
        max_defer: float = 2.0,
        clock: Clock = time.monotonic,
        rand: Callable[[], float] = random.random,
        policy: RetryPolicy = PERSISTENT,
        forbidden: ForbiddenBook | None = None,
    ) -> None:
        self._client = client
        self._forbidden = forbidden
        self._defer_to = defer_to
        self._max_defer = max_defer
        self._component = component
        self._instance = instance or component
        self._backlog = backlog
        self._clock = clock
        self._rand = rand
        self._policy = policy
        self._aggregator = EventAggregator(clock=clock)
        self.spam = SpamFilter(clock=clock)
        self._queue: dict[tuple[EventKey, str], _Pending] = {}
        self._not_before: dict[tuple[EventKey, str], float] = {}
        # EventLogger: dedup key -> (event name, namespace, count so far)
        self._seen: TTLCache[tuple[EventKey, str], tuple[str, str, int]] = TTLCache(maxsize=20_000, ttl=SIMILAR_WINDOW)
        self._wake = asyncio.Event()
        self.dropped = 0
        self.errors = 0
        self.deferrals = 0
        self.creates = 0
        self.patches = 0

    def record(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        key: EventKey = (ref.namespace, ref.kind, ref.name, ref.uid, ref.api_version, type_, reason)
        dedup, message = self._aggregator.aggregate(key, message[:1024])
        queued = self._queue.get(dedup)
        if not self.spam.allow(key[:5]):  # counted, not written: the next write of this event carries it
            seen = self._seen.get(dedup)
            if queued is not None:
                queued.count += 1
            elif seen is not None:
                self._seen[dedup] = (seen[0], seen[1], seen[2] + 1)
            return
        if queued is not None:
            queued.count += 1
            queued.message = message
        elif len(self._queue) >= self._backlog:
            self.dropped += 1
            return
        else:
            self._queue[dedup] = _Pending(ref, type_, reason, message, 1)
        self._wake.set()

    @property
    def idle(self) -> bool:
        return not self._queue

    def _take(self, limit: int) -> list[tuple[tuple[EventKey, str], _Pending]]:
        now = self._clock()
        out: list[tuple[tuple[EventKey, str], _Pending]] = []
        for dedup in list(self._queue):
            if len(out) >= limit:
                break
            if self._not_before.get(dedup, 0.0) > now:
                continue
            self._not_before.pop(dedup, None)
            out.append((dedup, self._queue.pop(dedup)))
        return out

    def _next_due(self) -> float | None:
        """Seconds until the earliest event waiting for a retry may be sent; None when none waits."""
        waiting = [not_before for key, not_before in self._not_before.items() if key in self._queue]
        return max(0.0, min(waiting) - self._clock()) if waiting else None

    async def run(self, *, concurrency: int = 8) -> None:
        while True:
            if not self._wake.is_set():
                await _wait_any(self._wake, self._next_due())
            self._wake.clear()
            deadline = asyncio.get_running_loop().time() + self._max_defer  # events wait max_defer at most
            while True:
                left = deadline - asyncio.get_running_loop().time()
                if self._queue and self._defer_to is not None and _must_defer(self._defer_to, left):
                    self.deferrals += 1
                    await _wait_set(self._defer_to, left)
                batch = self._take(concurrency)
                if not batch:
                    break
                await asyncio.gather(*(self._emit(dedup, item) for dedup, item in batch))

    async def drain(self) -> None:
        """Send everything queued now (backoffs ignored), once each."""
        self._not_before.clear()
        while self._queue:
            dedup, item = next(iter(self._queue.items()))
            del self._queue[dedup]
            item.tries = MAX_TRIES - 1  # one try: no requeue
            await self._emit(dedup, item)

    async def _emit(self, dedup: tuple[EventKey, str], item: _Pending) -> None:
        ref = item.ref
        namespace = ref.namespace or "default"  # event.go makeEvent: cluster-scoped objects' events go to default
        now = now_rfc3339()
        seen = self._seen.get(dedup)
        try:
            if seen is not None:
                name, ns, count = seen
                path = resource_path(group="", version="v1", plural="events", namespace=ns, name=name)
                try:
                    await self._client.patch(
                        path,
                        {"count": count + item.count, "lastTimestamp": now, "message": item.message},
                        retry=NO_RETRY,
                    )
                    self.patches += 1
                    self._seen[dedup] = (name, ns, count + item.count)
                    return
                except ApiError as exc:
                    if exc.status != 404:
                        raise
                    self._seen.pop(dedup, None)  # the event expired meanwhile: create it again (event.go)
            name = f"{ref.name}.{uuid.uuid4().hex[:16]}"
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {
                    "kind": ref.kind,
                    "apiVersion": ref.api_version,
                    "namespace": ref.namespace,
                    "name": ref.name,
                    "uid": ref.uid,
                },
                "reason": item.reason,
                "message": item.message,
                "type": item.type_,
                "count": item.count,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "source": {"component": self._component},
                "reportingComponent": self._component,
                "reportingInstance": self._instance,
            }
            path = resource_path(group="", version="v1", plural="events", namespace=namespace)
            try:
                await self._client.create(path, body, retry=NO_RETRY)
            except ApiError as exc:
                if exc.status != 409:  # 409: a retry of a create whose answer was lost: it is there
                    raise
            self.creates += 1
            if self._forbidden is not None:
                self._forbidden.clear(EVENT_WRITES)
            self._seen[dedup] = (name, namespace, item.count)
        except ApiError as exc:
            self.errors += 1
            item.tries += 1
            if item.tries >= MAX_TRIES or (not exc.transient and exc.status != 401):
                self.dropped += 1
                log.log(
                    min(logging.WARNING, _level(self._forbidden, EVENT_WRITES, exc)),
                    "could not record event %s on %s/%s (%d tries): %s",
                    item.reason,
                    namespace,
                    ref.name,
                    item.tries,
                    exc,
                )
                return
            queued = self._queue.get(dedup)  # requeue, with repeats recorded meanwhile merged in
            if queued is not None:
                queued.count += item.count
            else:
                self._queue[dedup] = item
            self._not_before[dedup] = self._clock() + self._policy.delay(item.tries - 1, exc, self._rand)
            self._wake.set()
