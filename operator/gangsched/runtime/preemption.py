"""Carrying out the preemption part of a Plan: evictions, nominations, and the PodDisruptionBudget feed.

Contract:
- `Preemptions(client=..., cache=..., writer=..., events=..., wake=...)`; `carry_out(plan)` never blocks:
  - every `plan.evictions` pod is evicted through the Eviction API (`POST pods/{name}/eviction`, policy/v1
    Eviction), all at once in the background. 201 or 404 (already gone): done, the pod's deletion arrives
    through the watch. 429 (a PodDisruptionBudget would be violated) or an error that persists through the
    retries: `Cluster.eviction_failed(pod)` (the core chooses again, avoiding that pod), a Warning event
    `EvictionRefused` on the pod, and the loop is woken;
  - `plan.nominations` patch `status.nominatedNodeName` through pods/status, `plan.nomination_clears` patch
    it to null (both through the coalescing PatchWriter); so does a binding of a pod this replica nominated
    or whose status shows a nomination, so that a nomination written late never outlives the binding.
- `clear_nominations(pod_keys)`: patches status.nominatedNodeName to null (stale nominations found at restore).
- `await on_pdb(kind, obj)`: hands the PDB to the cache, then lists the PDB's namespace's pods so the pods it
  selects are marked protected (the cache keeps no labels).
- `await drain()`: waits for the evictions in flight (tests, shutdown); `stop()` cancels them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from gangsched.core.plan import Plan
from gangsched.k8s.client import MERGE_PATCH, ApiError, KubeClient, resource_path
from gangsched.k8s.writer import EventRecorder, ObjectRef, PatchWriter
from gangsched.state.cache import ClusterCache

log = logging.getLogger(__name__)


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


class Preemptions:
    def __init__(
        self,
        *,
        client: KubeClient,
        cache: ClusterCache,
        writer: PatchWriter,
        events: EventRecorder,
        wake: Callable[[], None],
        attempts: int = 3,
        initial_backoff: float = 0.1,
    ) -> None:
        self._client = client
        self._cache = cache
        self._writer = writer
        self._events = events
        self._wake = wake
        self._attempts = attempts
        self._initial_backoff = initial_backoff
        self._tasks: set[asyncio.Task[Any]] = set()
        self.evicted = 0  # evictions the API accepted (the tests' witness)
        self.refused = 0
        self._nominated: set[str] = set()  # pods whose nominatedNodeName this replica set and has not cleared

    def carry_out(self, plan: Plan) -> None:
        if len(self._nominated) > 4096:  # forget pods deleted while nominated
            self._nominated &= self._cache.cluster.pods.keys()
        clears = list(plan.nomination_clears)
        pods = self._cache.cluster.pods
        for key, _node in plan.bindings:  # (the status may come from before a restart)
            pod = pods.get(key)
            if key in self._nominated or (pod is not None and pod.nominated_node):
                clears.append(key)
        for key in clears:
            self._nominated.discard(key)
            ns, name = _split(key)
            self._writer.patch(self._status_path(ns, name), {"status": {"nominatedNodeName": None}}, content_type=MERGE_PATCH)
        for key, node in plan.nominations:
            self._nominated.add(key)
            ns, name = _split(key)
            self._writer.patch(self._status_path(ns, name), {"status": {"nominatedNodeName": node}}, content_type=MERGE_PATCH)
        for key in plan.evictions:
            task = asyncio.create_task(self._evict(key), name=f"gangsched-evict-{key}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def clear_nominations(self, pod_keys: list[str]) -> None:
        for key in pod_keys:
            self._nominated.discard(key)
            ns, name = _split(key)
            self._writer.patch(self._status_path(ns, name), {"status": {"nominatedNodeName": None}}, content_type=MERGE_PATCH)

    @staticmethod
    def _status_path(namespace: str, name: str) -> str:
        return resource_path(group="", version="v1", plural="pods", namespace=namespace, name=name, subresource="status")

    async def _evict(self, key: str) -> None:
        ns, name = _split(key)
        path = resource_path(group="", version="v1", plural="pods", namespace=ns, name=name, subresource="eviction")
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
        backoff = self._initial_backoff
        message = ""
        for attempt in range(self._attempts):
            try:
                await self._client.create(path, body)
                self.evicted += 1
                return
            except ApiError as exc:
                if exc.status == 404:
                    return
                message = exc.message
                if exc.status == 429 or not exc.transient:
                    break
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection trouble: retried, then treated as refused
                message = f"{type(exc).__name__}: {exc}"
            if attempt + 1 < self._attempts:
                await asyncio.sleep(backoff)
                backoff *= 2
        self.refused += 1
        log.info("eviction of %s refused: %s", key, message)
        self._cache.cluster.eviction_failed(key)
        pod = self._cache.cluster.pods.get(key)
        self._events.record(ObjectRef("Pod", "v1", ns, name, pod.uid if pod else ""), "Warning", "EvictionRefused",
                            f"preemption could not evict it: {message}; the scheduler chooses again")
        self._wake()

    async def on_pdb(self, kind: str | None, obj: dict[str, Any]) -> None:
        self._cache.on_pdb(kind, obj)
        ns = (obj.get("metadata") or {}).get("namespace") or "default"
        try:
            pods, _ = await self._client.list_all(f"/api/v1/namespaces/{ns}/pods")
        except ApiError as exc:
            log.warning("listing pods of %s after a PodDisruptionBudget change: %s", ns, exc)
            return
        self._cache.recheck_pdb(pods)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel(self) -> list[asyncio.Task[Any]]:
        """Cancel the evictions in flight now (synchronously: leadership lost); returns the cancelled tasks."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        return tasks

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
