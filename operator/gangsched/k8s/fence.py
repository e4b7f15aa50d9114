"""Fencing: a view of the KubeClient that refuses to send writes unless this replica may write right now.

Contract:
- `FencedClient(inner, may_write)` is a KubeClient: reads (GET, list, watch) go straight through; every other
  request (bindings, evictions, status/condition/annotation patches, events, PodGroup creates) first calls
  `may_write()` synchronously, before asking for a connection and again once the connection is in hand, right
  before aiohttp writes the request (KubeClient.request's `before_send` hook: no wait in between), and raises
  `NotLeader` (an ApiError with status 0 and reason "NotLeader") instead of sending it when that is false.
- `may_write` is typically the leader elector's `is_leader`, which also ends leadership (and runs its
  callbacks, which cancel the replica's work) the first time it finds the last renewal older than renewDeadline:
  a process that resumes after a freeze refuses its first write before anything else happens.
- `refused` counts the writes refused. The inner client is owned by the caller (`close()` does nothing here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from gangsched.k8s.client import JSON, ApiError, KubeClient
from gangsched.k8s.retry import RetryPolicy


class NotLeader(ApiError):
    """A write refused before it was sent: this replica does not hold a fresh Lease."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(0, "NotLeader", f"{method} {path} not sent: this replica does not hold the lease")

    @property
    def transient(self) -> bool:
        return False


class FencedClient(KubeClient):
    def __init__(self, inner: KubeClient, may_write: Callable[[], bool]) -> None:  # no session of its own
        self.settings = inner.settings
        self._inner = inner
        self._may_write = may_write
        self.refused = 0

    async def close(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        """Everything else (request counters, credentials, retrier, limiter) is the inner client's."""
        return getattr(self._inner, name)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = 30.0,
        retry: RetryPolicy | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        if method == "GET":
            return await self._inner.request(
                method,
                path,
                params=params,
                body=body,
                content_type=content_type,
                timeout=timeout,
                retry=retry,
                before_send=before_send,
            )

        def check() -> None:
            if not self._may_write():
                self.refused += 1
                raise NotLeader(method, path)
            if before_send is not None:
                before_send()

        check()  # refused at once, without even waiting for a connection
        # ...and again once the connection is in hand, right before the request is written: a replica frozen
        # while it waited for a connection finds its Lease too old when it resumes and sends nothing
        return await self._inner.request(
            method,
            path,
            params=params,
            body=body,
            content_type=content_type,
            timeout=timeout,
            retry=retry,
            before_send=check,
        )

    async def watch(
        self,
        path: str,
        *,
        resource_version: str,
        params: Mapping[str, str] | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[], None] | None = None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        async for item in self._inner.watch(
            path, resource_version=resource_version, params=params, timeout_seconds=timeout_seconds, on_open=on_open
        ):
            yield item
