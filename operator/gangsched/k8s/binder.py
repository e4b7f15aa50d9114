"""The binder: binds pods to nodes through `pods/binding`, many at once, with a bounded number in flight.

Contract: `await binder.bind_all([(namespace, name, node, uid), ...])` returns one BindResult per binding, in order,
and never raises for a single pod. Each Binding carries the pod's UID as a precondition (DefaultBinder's). Outcomes:
"bound"; "already-bound" (409, same pod on that node); "conflict" (409 on another node, or another 4xx); "gated"
(409, scheduling gates left); "gone" (404, re-created, being deleted, namespace terminating); "failed" (transient
errors through every retry). A 409 is reconciled by reading the pod, never retried blindly. Transient errors are
retried under k8s/retry.py's policy (`BIND_RETRY`, or `bind_all(..., retry=)`); the client itself never retries a
binding. `BindResult.status` is the HTTP status behind a failure. `errors` counts "conflict" and "failed";
`in_flight` the bindings under way; `idle` (an asyncio.Event) is set when none is, so lower-priority writers stay
out of the bindings' way (k8s/coalescing.py `defer_to`). More: docs/modules.md#k8sbinderpy.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

from gangsched.k8s.client import ApiError, KubeClient, resource_path
from gangsched.k8s.retry import NO_RETRY, RetryPolicy

BIND_RETRY = RetryPolicy(initial_backoff=0.05, max_backoff=2.0, max_attempts=5, max_elapsed=30.0)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BindResult:
    namespace: str
    name: str
    node: str
    outcome: str  # bound | already-bound | conflict | gated | gone | failed
    message: str = ""
    status: int = 0  # the HTTP status of the last answer that decided a failure (403: forbidden), 0 otherwise

    @property
    def ok(self) -> bool:
        return self.outcome in ("bound", "already-bound")


class Binder:
    def __init__(
        self,
        client: KubeClient,
        *,
        concurrency: int = 64,
        retry: RetryPolicy = BIND_RETRY,
    ) -> None:
        self._client = client
        self._slots = asyncio.Semaphore(concurrency)
        self._retry = retry
        self.errors = 0
        self.in_flight = 0
        self.idle = asyncio.Event()
        self.idle.set()

    async def bind_all(
        self, bindings: Sequence[tuple[str, ...]], *, retry: RetryPolicy | None = None
    ) -> list[BindResult]:
        """(namespace, name, node) or (namespace, name, node, uid) per pod; one result each, in order. `retry`
        replaces the binder's policy for these (NO_RETRY: one POST each)."""
        return list(await asyncio.gather(*(self.bind(*binding, retry=retry) for binding in bindings)))

    async def bind(
        self, namespace: str, name: str, node: str, uid: str = "", *, retry: RetryPolicy | None = None
    ) -> BindResult:
        self.in_flight += 1
        self.idle.clear()
        try:
            return await self._bind(namespace, name, node, uid, retry or self._retry)
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self.idle.set()

    async def _bind(self, namespace: str, name: str, node: str, uid: str, retry: RetryPolicy) -> BindResult:
        meta: dict[str, str] = {"name": name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = resource_path(
            group="", version="v1", plural="pods", namespace=namespace, name=name, subresource="binding"
        )
        last = ""
        attempts = retry.max_attempts or 5
        status = 0
        for attempt in range(attempts):
            error: ApiError | None = None
            try:
                async with self._slots:
                    await self._client.create(path, body, retry=NO_RETRY)
                return BindResult(namespace, name, node, "bound")
            except ApiError as exc:
                error = exc
                last, status = str(exc), exc.status
                if exc.status == 404:
                    return BindResult(namespace, name, node, "gone", exc.message)
                if exc.status == 403 and "because it is being terminated" in exc.message:
                    return BindResult(namespace, name, node, "gone", exc.message)
                if exc.status == 409:
                    result = await self._reconcile_conflict(namespace, name, node, uid, exc)
                    if result is not None:
                        return result
                elif not exc.transient:
                    self.errors += 1
                    return BindResult(namespace, name, node, "conflict", exc.message, exc.status)
            if attempt + 1 < attempts:
                await asyncio.sleep(retry.delay(attempt, error, random.random))
        self.errors += 1
        return BindResult(namespace, name, node, "failed", last, status)

    async def _reconcile_conflict(
        self, namespace: str, name: str, node: str, uid: str, exc: ApiError
    ) -> BindResult | None:
        """The outcome of a 409 from the pod's current state; None: the pod is bindable, try again."""
        try:
            pod = await self._client.get(
                resource_path(group="", version="v1", plural="pods", namespace=namespace, name=name)
            )
        except ApiError as read_exc:
            if read_exc.status == 404:
                return BindResult(namespace, name, node, "gone", read_exc.message)
            self.errors += 1
            return BindResult(namespace, name, node, "conflict", f"{exc.message}; then reading the pod: {read_exc}")
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if uid and meta.get("uid") != uid:
            return BindResult(
                namespace, name, node, "gone", f"the pod was re-created (uid {meta.get('uid')}, not {uid})"
            )
        bound_to = spec.get("nodeName")
        if bound_to == node:
            return BindResult(namespace, name, node, "already-bound")
        if bound_to:
            self.errors += 1
            return BindResult(namespace, name, node, "conflict", f"pod is bound to {bound_to!r}: {exc.message}")
        if meta.get("deletionTimestamp"):
            return BindResult(namespace, name, node, "gone", exc.message)
        if spec.get("schedulingGates"):
            return BindResult(namespace, name, node, "gated", exc.message)
        return None
