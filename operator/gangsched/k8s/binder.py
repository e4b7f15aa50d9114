"""The binder: binds pods to nodes through `pods/binding`, many at once, with a bounded number in flight.

Contract: `await binder.bind_all([(namespace, name, node), ...])` returns one BindResult per binding, in order,
and never raises for a single pod:
- "bound": the server accepted the binding;
- "already-bound": 409, and the pod turned out to be bound to that same node (a retry after a lost answer);
- "conflict": 409, the pod is bound to another node (someone else bound it) or the server refused it for good;
- "gone": 404, the pod no longer exists;
- "failed": transient errors (429, 5xx, broken connections) persisted through every retry.
A 409 is reconciled by reading the pod, never retried blindly. Transient errors are retried with capped
exponential backoff.
`in_flight` counts bindings under way; `idle` (an asyncio.Event) is set whenever none is, so that lower-priority
writers (events, status patches) can stay out of the bindings' way (see k8s/writer.py, `defer_to`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from gangsched.k8s.client import ApiError, KubeClient, resource_path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BindResult:
    namespace: str
    name: str
    node: str
    outcome: str  # bound | already-bound | conflict | gone | failed
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome in ("bound", "already-bound")


class Binder:
    def __init__(
        self,
        client: KubeClient,
        *,
        concurrency: int = 64,
        attempts: int = 5,
        initial_backoff: float = 0.05,
    ) -> None:
        self._client = client
        self._slots = asyncio.Semaphore(concurrency)
        self._attempts = attempts
        self._initial_backoff = initial_backoff
        self.errors = 0
        self.in_flight = 0
        self.idle = asyncio.Event()
        self.idle.set()

    async def bind_all(self, bindings: Sequence[tuple[str, str, str]]) -> list[BindResult]:
        return list(await asyncio.gather(*(self.bind(ns, name, node) for ns, name, node in bindings)))

    async def bind(self, namespace: str, name: str, node: str) -> BindResult:
        self.in_flight += 1
        self.idle.clear()
        try:
            return await self._bind(namespace, name, node)
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self.idle.set()

    async def _bind(self, namespace: str, name: str, node: str) -> BindResult:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = resource_path(group="", version="v1", plural="pods", namespace=namespace, name=name, subresource="binding")
        backoff = self._initial_backoff
        last = ""
        for attempt in range(self._attempts):
            try:
                async with self._slots:
                    await self._client.create(path, body)
                return BindResult(namespace, name, node, "bound")
            except ApiError as exc:
                last = str(exc)
                if exc.status == 404:
                    return BindResult(namespace, name, node, "gone", exc.message)
                if exc.status == 409:
                    return await self._reconcile_conflict(namespace, name, node, exc)
                if not exc.transient:
                    self.errors += 1
                    return BindResult(namespace, name, node, "conflict", exc.message)
            if attempt + 1 < self._attempts:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
        self.errors += 1
        return BindResult(namespace, name, node, "failed", last)

    async def _reconcile_conflict(self, namespace: str, name: str, node: str, exc: ApiError) -> BindResult:
        try:
            pod = await self._client.get(resource_path(group="", version="v1", plural="pods", namespace=namespace, name=name))
        except ApiError as read_exc:
            if read_exc.status == 404:
                return BindResult(namespace, name, node, "gone", read_exc.message)
            self.errors += 1
            return BindResult(namespace, name, node, "conflict", f"{exc.message}; then reading the pod: {read_exc}")
        bound_to = (pod.get("spec") or {}).get("nodeName")
        if bound_to == node:
            return BindResult(namespace, name, node, "already-bound")
        self.errors += 1
        return BindResult(namespace, name, node, "conflict", f"pod is bound to {bound_to!r}: {exc.message}")
