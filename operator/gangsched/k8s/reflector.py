"""A lean list+watch loop (a "reflector") feeding a cache from one collection, in one task.

Contract:
- `run()` lists the collection (paged), hands the whole list to `on_list(items)` (the sink replaces what it had:
  objects missing from the list were deleted while nobody watched), then watches from the list's
  resourceVersion and hands each ADDED/MODIFIED/DELETED event to `on_event(type, obj)`.
- A watch that ends is resumed from the last seen resourceVersion (BOOKMARKs advance it). 410 Gone leads to a
  fresh list at once; a transient error (no answer, 429, 5xx) resumes the watch after a capped exponential
  backoff; any other error leads to a fresh list after that backoff. `synced` is set after the first list;
  `relists`, `watch_restarts` and `sink_errors` count what happened (runtime/metrics.py).
- No per-object workers, no models: raw dicts parsed by orjson; a sink that raises on one object does not stop
  the stream (the error is logged and counted).
This exists because Kopf's per-object machinery costs about 1 ms per event, which would cap pod ingest near
1,000 events/s (bench/bench_ingest.py measures it; docs/architecture.md, "From a watch event to a binding").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from gangsched.k8s.client import ApiError, KubeClient

log = logging.getLogger(__name__)

OnList = Callable[[list[dict[str, Any]]], None]
OnEvent = Callable[[str, dict[str, Any]], None]


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
    ) -> None:
        self._client = client
        self._path = path
        self._on_list = on_list
        self._on_event = on_event
        self._params = dict(params or {})
        self._watch_timeout = watch_timeout_seconds
        self._max_backoff = max_backoff
        self.synced = asyncio.Event()
        self.sink_errors = 0
        self.relists = 0  # lists after the first (watch expired or failed)
        self.watch_restarts = 0  # watch requests after the first one of a list

    async def run(self) -> None:
        backoff = 0.05
        resource_version = ""
        watched = False
        while True:
            try:
                if not resource_version:
                    if self.synced.is_set():
                        self.relists += 1
                    items, resource_version = await self._client.list_all(self._path, params=self._params)
                    self._on_list(items)
                    self.synced.set()
                    watched = False
                if watched:
                    self.watch_restarts += 1
                watched = True
                async for kind, obj in self._client.watch(
                    self._path,
                    resource_version=resource_version,
                    params=self._params,
                    timeout_seconds=self._watch_timeout,
                ):
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        resource_version = rv
                    if kind == "BOOKMARK":
                        continue
                    try:
                        self._on_event(kind, obj)
                    except Exception:  # one bad object never stops the stream
                        self.sink_errors += 1
                        log.exception("cache rejected a %s event from %s", kind, self._path)
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                if exc.status == 410:
                    log.info("watch of %s expired (410 Gone); relisting", self._path)
                    resource_version = ""
                    continue
                log.warning("watch of %s failed: %s; retrying in %.2fs", self._path, exc, backoff)
                if exc.status not in (0, 429, 500, 502, 503, 504):
                    resource_version = ""
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
            except Exception:
                log.exception("listing %s failed; relisting in %.2fs", self._path, backoff)
                resource_version = ""
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
