"""Leader election through a coordination.k8s.io/v1 Lease, with client-go's semantics (leaderelection.go).

Contract:
- Durations are measured on the injectable `Clock`'s monotonic time; wall time only fills the Lease's timestamps.
- A follower takes the Lease over only when it has no holder or its record has not changed for
  `leaseDurationSeconds` of our monotonic clock; writes carry the resourceVersion read (one winner).
- A leader is leader only while its last successful renewal is younger than `renew_deadline` (checked by
  `is_leader` itself); then `term` is bumped and `on_stopped_leading` callbacks run synchronously.
- `leading` (asyncio.Event) is set while leader; `term` counts leaderships won (a fence token).
- `release()` empties holderIdentity, within `release_timeout`. Problems only the user can fix (404, 401/403) are
  logged once as an ERROR and kept in `problem`. Requests are never retried by the client (`retry=NO_RETRY`).
More: docs/modules.md#k8sleasepy.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gangsched.k8s.client import ApiError, KubeClient, resource_path
from gangsched.k8s.retry import NO_RETRY
from gangsched.models.timestamps import format_micro_time

log = logging.getLogger(__name__)


class Clock(Protocol):
    def now(self) -> dt.datetime: ...
    def monotonic(self) -> float: ...


class SystemClock:
    """The real clocks; `offset` skews the wall clock (tests of skewed replicas), never the monotonic one."""

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.offset)

    def monotonic(self) -> float:
        return time.monotonic()


def format_micro(ts: dt.datetime) -> str:
    return format_micro_time(ts)


@dataclass(frozen=True, slots=True)
class _Observed:
    holder: str
    duration: float
    record: tuple[Any, ...]  # the whole spec, to see any change (client-go compares the raw record)


def _observe(spec: dict[str, Any], default_duration: float) -> _Observed:
    holder = str(spec.get("holderIdentity") or "")
    duration = float(spec.get("leaseDurationSeconds") or default_duration)
    record = tuple(sorted((k, str(v)) for k, v in spec.items()))
    return _Observed(holder, duration, record)


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_timeout: float = 2.0,
        clock: Clock | None = None,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError(
                f"need retry_period ({retry_period}) < renew_deadline ({renew_deadline}) < lease_duration "
                f"({lease_duration})"
            )
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_timeout = release_timeout
        self.clock: Clock = clock or SystemClock()
        self._renewed_at: float | None = None  # monotonic start of the last successful renewal while leading
        self._observed: _Observed | None = None
        self._observed_at = 0.0  # monotonic time at which _observed was last seen to change
        self.term = 0
        self._stops = 0  # leaderships ended (a write prepared before one ended is not sent)
        self.problem: str | None = None  # a problem the user must fix (see module docstring)
        self.leading = asyncio.Event()
        self.changed = asyncio.Event()  # set on every transition (kept for callers that wait on it)
        self.on_started_leading: list[Callable[[], None]] = []
        self.on_stopped_leading: list[Callable[[], None]] = []
        self.transitions = 0
        self._path = resource_path(
            group="coordination.k8s.io", version="v1", plural="leases", namespace=namespace, name=name
        )

    @property
    def path(self) -> str:
        return self._path

    @property
    def is_leader(self) -> bool:
        """Whether this replica may act as leader now; ends leadership the moment the renewal is too old."""
        if self._renewed_at is None:
            return False
        if self.clock.monotonic() - self._renewed_at < self.renew_deadline:
            return True
        self._stop_leading("renewal older than renewDeadline")
        return False

    def holds_lease(self) -> bool:
        """`is_leader` without its side effect (safe to call from another thread, e.g. the metrics server)."""
        renewed = self._renewed_at
        return renewed is not None and self.clock.monotonic() - renewed < self.renew_deadline

    @property
    def observed_holder(self) -> str:
        return self._observed.holder if self._observed else ""

    def _start_leading(self) -> None:
        self.term += 1
        self.transitions += 1
        log.info("%s acquired lease %s/%s (term %d)", self.identity, self.namespace, self.name, self.term)
        self.leading.set()
        self.changed.set()
        for callback in list(self.on_started_leading):
            callback()

    def _stop_leading(self, why: str) -> None:
        if self._renewed_at is None:
            return
        self._renewed_at = None
        self._stops += 1
        log.warning("%s lost lease %s/%s (term %d): %s", self.identity, self.namespace, self.name, self.term, why)
        self.leading.clear()
        self.changed.set()
        for callback in list(self.on_stopped_leading):
            callback()

    async def run(self) -> None:
        while True:
            await self.step()
            await asyncio.sleep(self.retry_period)

    async def step(self) -> bool:
        """One attempt to acquire or renew, bounded by the renew deadline while leading; returns success."""
        started = self.clock.monotonic()
        leader = self.is_leader
        budget = (
            self.renew_deadline - (started - self._renewed_at)
            if leader and self._renewed_at is not None
            else self.renew_deadline
        )
        try:
            async with asyncio.timeout(max(budget, 0.001)):  # not wait_for: it may swallow a cancel (Python 3.11)
                ok = await self.try_acquire_or_renew()
        except TimeoutError:
            log.warning("lease %s/%s: no answer within %.2fs", self.namespace, self.name, budget)
            ok = False
        except ApiError as exc:
            self._report(exc)
            ok = False
        if ok:
            self.problem = None
            if self._renewed_at is None:
                self._renewed_at = started
                self._start_leading()
            elif self.is_leader:  # still within the deadline: extend it from this attempt's start
                self._renewed_at = started
        else:
            _ = self.is_leader  # ends leadership if the deadline passed
        return ok

    def _report(self, exc: ApiError) -> None:
        problem = None
        if exc.status == 404 and "namespaces" in exc.message:
            problem = (
                f"leader election: namespace {self.namespace} does not exist ({exc.message}): create it, "
                f"e.g. kubectl apply -f manifests/namespace.yaml"
            )
        elif exc.status in (401, 403):
            problem = (
                f"leader election: not allowed to use Lease {self.namespace}/{self.name} ({exc.message}): grant "
                f"get/update (and create) on leases in {self.namespace} to this ServiceAccount, "
                f"e.g. kubectl apply -f manifests/rbac.yaml"
            )
        if problem is None:
            log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
        elif problem != self.problem:
            log.error("%s", problem)
        else:
            log.debug("%s", problem)
        self.problem = problem

    async def release(self) -> None:
        """Give the lease up (on shutdown), so another replica need not wait for it to expire."""
        if not self.is_leader:
            return
        self._renewed_at = None
        self.leading.clear()
        self.changed.set()
        try:
            async with asyncio.timeout(self.release_timeout):
                await self._give_up()
        except TimeoutError:
            log.warning(
                "lease %s/%s not released within %.1fs (API unresponsive): it expires after its duration",
                self.namespace,
                self.name,
                self.release_timeout,
            )
        except ApiError as exc:
            log.info("releasing lease %s/%s: %s", self.namespace, self.name, exc)

    async def _give_up(self) -> None:
        timeout = self.release_timeout
        lease = await self._client.get(self._path, retry=NO_RETRY, timeout=timeout)
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") == self.identity:
            spec["holderIdentity"] = None
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = format_micro(self.clock.now())
            lease["spec"] = spec
            await self._client.replace(self._path, lease, retry=NO_RETRY, timeout=timeout)

    def _lease_seconds(self) -> int:
        return max(1, math.ceil(self.lease_duration))

    async def try_acquire_or_renew(self) -> bool:
        now = format_micro(self.clock.now())
        stops = self._stops
        try:
            lease = await self._client.get(self._path, retry=NO_RETRY)
        except ApiError as exc:
            if exc.status != 404:
                raise
            return await self._create(now)
        spec: dict[str, Any] = lease.get("spec") or {}
        observed = _observe(spec, self.lease_duration)
        mono = self.clock.monotonic()
        if self._observed is None or observed.record != self._observed.record:
            self._observed, self._observed_at = observed, mono
        mine = observed.holder == self.identity
        if observed.holder and not mine and mono - self._observed_at < observed.duration:
            return False  # held by another, and it has not gone unchanged for a lease duration of OUR clock
        if not mine:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        elif not spec.get("acquireTime"):
            spec["acquireTime"] = now
        if self._stops != stops or (self._renewed_at is not None and not self.is_leader):
            return False  # leadership ended while we waited for the read (a freeze): that read is stale
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = self._lease_seconds()
        spec["renewTime"] = now
        lease["spec"] = spec
        try:
            written = await self._client.replace(self._path, lease, retry=NO_RETRY)
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        self._observed, self._observed_at = (
            _observe(written.get("spec") or spec, self.lease_duration),
            self.clock.monotonic(),
        )
        return True

    async def _create(self, now: str) -> bool:
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._lease_seconds(),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }
        try:
            await self._client.create(
                resource_path(group="coordination.k8s.io", version="v1", plural="leases", namespace=self.namespace),
                body,
                retry=NO_RETRY,
            )
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        self._observed, self._observed_at = _observe(spec, self.lease_duration), self.clock.monotonic()
        return True
