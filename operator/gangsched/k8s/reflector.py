"""A lean list+watch loop (a "reflector") feeding a cache from one collection, in one task.

Contract:
- `run()` lists the collection (paged), hands it whole to `on_list(items)`, then watches from its resourceVersion
  and hands each event to `on_event(type, obj)`; a watch that ends resumes from the last resourceVersion seen.
- 410 Gone relists at once; a transient error resumes the watch after a backoff; any other error relists after it.
  The backoff (`WatchBackoff`): 0.05 s doubling to 10 s per failure without progress (an event delivered, or a
  watch open 120 s); `retry_delay` is the last delay slept.
- `synced` after the first list; `relists`, `watch_restarts`, `sink_errors` count; `down_since` is when no watch
  has been open since (None while one is).
- Raw dicts, no per-object workers; a sink that raises on one object is logged and counted, the stream goes on.
More: docs/modules.md#k8sreflectorpy.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.k8s.client import ApiError, KubeClient

log = logging.getLogger(__name__)

OnList = Callable[[list[dict[str, Any]]], None]
OnEvent = Callable[[str, dict[str, Any]], None]


@dataclass(slots=True)
class WatchBackoff:
    """The delay before the next list or watch after a failure (see the module docstring)."""

    initial: float = 0.05
    maximum: float = 10.0
    reset_after: float = 120.0
    failures: int = 0

    def after_failure(self, *, delivered: int, open_for: float) -> float:
        """The delay after a failed list or watch that delivered `delivered` events while open `open_for` s."""
        if delivered or open_for >= self.reset_after:
            self.failures = 0
        self.failures += 1
        return float(min(self.maximum, self.initial * 2.0 ** min(self.failures - 1, 62)))

    def reset(self) -> None:
        self.failures = 0


class Reflector:
    def __init__(
        self,
        client: KubeClient,
        path: str,
        *,
        on_list: OnList,
        on_event: OnEvent,
        params: Mapping[str, str] | None = None,
        watch_timeout_seconds: int = 300,
        max_backoff: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._path = path
        self._on_list = on_list
        self._on_event = on_event
        self._params = dict(params or {})
        self._watch_timeout = watch_timeout_seconds
        self._clock = clock
        self.backoff = WatchBackoff(maximum=max_backoff)
        self.synced = asyncio.Event()
        self.sink_errors = 0
        self.relists = 0  # lists after the first (watch expired or failed)
        self.watch_restarts = 0  # watch requests after the first one of a list
        self.retry_delay = 0.0
        self.down_since: float | None = clock()
        self._opened_at: float | None = None
        self._rv = ""  # the last resourceVersion seen ("": list first)
        self._delivered = 0

    def _opened(self) -> None:
        self._opened_at = self._clock()
        self.down_since = None

    def _closed(self) -> float:
        """The watch (if one was open) ended: how long it was open."""
        now = self._clock()
        open_for = 0.0 if self._opened_at is None else now - self._opened_at
        self._opened_at = None
        if self.down_since is None:
            self.down_since = now
        return open_for

    async def run(self) -> None:
        self._rv = ""
        watched = False
        while True:
            self._delivered = 0
            try:
                if not self._rv:
                    self._rv = await self._list()
                    watched = False
                if watched:
                    self.watch_restarts += 1
                watched = True
                await self._watch()
                self._closed()
                self.backoff.reset()
                self.retry_delay = 0.0
            except asyncio.CancelledError:
                self._closed()
                raise
            except ApiError as exc:
                open_for = self._closed()
                if exc.status == 410:
                    log.info("watch of %s expired (410 Gone); relisting", self._path)
                    self._rv = ""
                    continue
                delay = self._delay(open_for)
                log.warning("watch of %s failed: %s; retrying in %.2fs", self._path, exc, delay)
                if exc.status not in (0, 429, 500, 502, 503, 504):
                    self._rv = ""
                await asyncio.sleep(delay)
            except Exception:
                delay = self._delay(self._closed())
                log.exception("listing %s failed; relisting in %.2fs", self._path, delay)
                self._rv = ""
                await asyncio.sleep(delay)

    def _delay(self, open_for: float) -> float:
        self.retry_delay = self.backoff.after_failure(delivered=self._delivered, open_for=open_for)
        return self.retry_delay

    async def _list(self) -> str:
        if self.synced.is_set():
            self.relists += 1
        items, resource_version = await self._client.list_all(self._path, params=self._params)
        self._on_list(items)
        self.synced.set()
        return resource_version

    async def _watch(self) -> None:
        """One watch request from the last resourceVersion seen, which each event advances."""
        async for kind, obj in self._client.watch(
            self._path,
            resource_version=self._rv,
            params=self._params,
            timeout_seconds=self._watch_timeout,
            on_open=self._opened,
        ):
            self._delivered += 1
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self._rv = rv
            if kind == "BOOKMARK":
                continue
            try:
                self._on_event(kind, obj)
            except Exception:  # one bad object never stops the stream
                self.sink_errors += 1
                log.exception("cache rejected a %s event from %s", kind, self._path)
