"""The binder: binds pods to nodes through `pods/binding`, many at once, with a bounded number in flight.

Contract: `await binder.bind_all([(namespace, name, node, uid), ...])` returns one BindResult per binding, in
order, and never raises for a single pod. Every Binding carries the pod's UID (`metadata.uid`, when given) as a
precondition, as kube-scheduler's DefaultBinder does, so a pod deleted and re-created under the same name is
never bound on a decision taken for the old one. Outcomes:
- "bound": the server accepted the binding;
- "already-bound": 409, and the pod (same UID) turned out to be bound to that same node (a retry after a lost
  answer);
- "conflict": 409, the pod is bound to another node (someone else bound it), or the server refused the binding
  for good (another 4xx);
- "gated": 409, the pod still has spec.schedulingGates (kube-apiserver refuses to bind it until they are
  removed); the caller puts it back without retrying at once;
- "gone": 404, or the pod was re-created (another UID), or it is being deleted, or its namespace is terminating
  (403 "because it is being terminated");
- "failed": transient errors (429, 5xx, broken connections) persisted through every retry.
A 409 is reconciled by reading the pod (its current state decides the outcome), never retried blindly; a 409
whose pod turns out bindable after all (e.g. its gates were just removed) is tried again within the attempts.
Transient errors are retried under the operator's one retry policy (k8s/retry.py: full-jitter backoff, never sooner
than the server's Retry-After), `BIND_RETRY` by default, or the policy given to `bind_all(..., retry=)` (the
runtime passes NO_RETRY for a gang whose binding failed before: its backoff is the scheduler's,
runtime/bind_backoff.py); `BindResult.status` is the HTTP status behind a failure (403: forbidden). The client
itself does not retry a binding (each attempt is `retry=NO_RETRY`), so the two never multiply.
`errors` counts the bindings that ended in "conflict" or "failed"; `in_flight` counts bindings under way; `idle` (an
asyncio.Event) is set whenever none is, so that lower-priority writers (events, status patches) can stay out of the
bindings' way (see k8s/coalescing.py, `defer_to`).
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
