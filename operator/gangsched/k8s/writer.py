"""Coalescing writers: PodGroup status, pod conditions/annotations/nominations, and Kubernetes events.

Contract:
- `PatchWriter.patch(path, body, content_type=...)` never blocks and never raises: it records the desired patch.
  Patches to the same path are deep-merged (latest value wins per field) until the next flush, so a burst of
  status changes for one PodGroup becomes one request. A patch equal to the last one written to that path is
  skipped. `flush()` sends everything pending with bounded concurrency; `run()` flushes whenever something is
  pending. A 404 drops the patch (the object is gone); other errors are logged, counted and retried next flush
  (up to a few times).
  `discard(path, content_type=...)` drops a patch not yet sent (e.g. a pod's PodScheduled=False condition once
  the pod is being bound: sent later, it would overwrite the binding's PodScheduled=True).
- `EventRecorder.record(ref, type_, reason, message)` never blocks: the first occurrence creates a core/v1 Event,
  repeats within the TTL bump its count (as kubelet/kube-scheduler's recorder does). The backlog is bounded.
- Both take `defer_to` (an asyncio.Event, e.g. the binder's `idle`) and `max_defer` seconds: before sending a
  batch they wait until the event is set, for at most max_defer, so a burst of bindings is not slowed down by the
  events and status patches it causes (they follow right after it, coalesced further). `deferrals` counts the
  batches that had to wait (counted when the wait begins).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

from gangsched.k8s.client import MERGE_PATCH, ApiError, KubeClient, resource_path

log = logging.getLogger(__name__)


def _deep_merge(into: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = value
    return into


def now_rfc3339() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _must_defer(event: asyncio.Event | None, max_defer: float) -> bool:
    return event is not None and not event.is_set() and max_defer > 0


async def _wait_set(event: asyncio.Event, timeout: float) -> None:
    """Wait until event is set, for at most timeout seconds."""
    with contextlib.suppress(TimeoutError):  # asyncio.timeout: wait_for may swallow a cancel (Python 3.11)
        async with asyncio.timeout(timeout):
            await event.wait()


class PatchWriter:
    def __init__(
        self,
        client: KubeClient,
        *,
        concurrency: int = 16,
        max_attempts: int = 5,
        defer_to: asyncio.Event | None = None,
        max_defer: float = 2.0,
    ) -> None:
        self._client = client
        self._defer_to = defer_to
        self._max_defer = max_defer
        self._pending: dict[tuple[str, str], dict[str, Any]] = {}
        self._attempts: dict[tuple[str, str], int] = {}
        self._written: TTLCache[tuple[str, str], dict[str, Any]] = TTLCache(maxsize=50_000, ttl=600)
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(concurrency)
        self._max_attempts = max_attempts
        self.errors = 0
        self.writes = 0
        self.deferrals = 0

    def patch(self, path: str, body: dict[str, Any], *, content_type: str = MERGE_PATCH) -> None:
        key = (path, content_type)
        current = self._pending.get(key)
        if current is None:
            self._pending[key] = _deep_merge({}, body)
        else:
            _deep_merge(current, body)
        self._wake.set()

    def discard(self, path: str, *, content_type: str = MERGE_PATCH) -> None:
        self._pending.pop((path, content_type), None)

    @property
    def idle(self) -> bool:
        return not self._pending

    async def flush(self) -> None:
        batch, self._pending = self._pending, {}
        self._wake.clear()
        await asyncio.gather(*(self._send(key, body) for key, body in batch.items()))

    async def _send(self, key: tuple[str, str], body: dict[str, Any]) -> None:
        if self._written.get(key) == body:
            return
        path, content_type = key
        try:
            async with self._slots:
                await self._client.patch(path, body, content_type=content_type)
            self.writes += 1
            self._written[key] = body
            self._attempts.pop(key, None)
        except ApiError as exc:
            if exc.status == 404:
                return
            self.errors += 1
            attempts = self._attempts.get(key, 0) + 1
            if attempts >= self._max_attempts:
                log.error("giving up patching %s after %d attempts: %s", path, attempts, exc)
                self._attempts.pop(key, None)
                return
            self._attempts[key] = attempts
            log.warning("patching %s failed (%s); will retry", path, exc)
            # keep newer pending content: re-merge the failed body under it
            newer = self._pending.get(key)
            self._pending[key] = _deep_merge(body, newer) if newer else body
            self._wake.set()

    async def run(self, *, min_interval: float = 0.02) -> None:
        while True:
            await self._wake.wait()
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
    ) -> None:
        self._client = client
        self._defer_to = defer_to
        self._max_defer = max_defer
        self._component = component
        self._instance = instance or component
        self._queue: deque[tuple[ObjectRef, str, str, str]] = deque(maxlen=backlog)
        self._seen: TTLCache[tuple[str, str, str, str, str], tuple[str, int]] = TTLCache(maxsize=20_000, ttl=600)
        self._wake = asyncio.Event()
        self.dropped = 0
        self.errors = 0
        self.deferrals = 0

    def record(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append((ref, type_, reason, message[:1024]))
        self._wake.set()

    async def run(self, *, concurrency: int = 8) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            deadline = asyncio.get_running_loop().time() + self._max_defer  # events wait max_defer at most
            while self._queue:
                left = deadline - asyncio.get_running_loop().time()
                if self._defer_to is not None and _must_defer(self._defer_to, left):
                    self.deferrals += 1
                    await _wait_set(self._defer_to, left)
                batch = [self._queue.popleft() for _ in range(min(concurrency, len(self._queue)))]
                await asyncio.gather(*(self._emit(*item) for item in batch))

    async def drain(self) -> None:
        while self._queue:
            item = self._queue.popleft()
            await self._emit(*item)

    async def _emit(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        key = (ref.namespace, ref.name, ref.uid, reason, message)
        now = now_rfc3339()
        try:
            seen = self._seen.get(key)
            if seen is not None:
                name, count = seen
                path = resource_path(group="", version="v1", plural="events", namespace=ref.namespace, name=name)
                await self._client.patch(path, {"count": count + 1, "lastTimestamp": now})
                self._seen[key] = (name, count + 1)
                return
            name = f"{ref.name}.{uuid.uuid4().hex[:16]}"
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": ref.namespace},
                "involvedObject": {
                    "kind": ref.kind,
                    "apiVersion": ref.api_version,
                    "namespace": ref.namespace,
                    "name": ref.name,
                    "uid": ref.uid,
                },
                "reason": reason,
                "message": message,
                "type": type_,
                "count": 1,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "source": {"component": self._component},
                "reportingComponent": self._component,
                "reportingInstance": self._instance,
            }
            await self._client.create(resource_path(group="", version="v1", plural="events", namespace=ref.namespace), body)
            self._seen[key] = (name, 1)
        except ApiError as exc:
            self.errors += 1
            self._seen.pop(key, None)
            log.warning("could not record event %s on %s/%s: %s", reason, ref.namespace, ref.name, exc)
