"""Leader election through a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Contract:
- `LeaderElector.run()` loops forever: it creates the Lease if absent, renews it while it holds it, and takes it
  over when the holder's renewTime + leaseDurationSeconds has passed. Every write carries the resourceVersion it
  read, so two replicas racing for an expired lease cannot both win (the loser gets 409 Conflict).
- `is_leader` is true only while the last successful renewal is younger than `renew_deadline` (monotonic clock),
  so a replica cut off from the API server stops acting as leader before another can take over
  (renew_deadline < lease_duration).
- `leading` (asyncio.Event) is set while leader; `changed` is awaited by whoever wants to react to changes.
- A problem only the user can fix -- the namespace does not exist (404 on create), or the ServiceAccount may not
  read or write the Lease (403) -- is logged once as an ERROR naming the fix and kept in `problem` (None once a
  renewal succeeds again); other failures are WARNINGs as before.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import Any

from gangsched.k8s.client import ApiError, KubeClient, resource_path

log = logging.getLogger(__name__)

MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"


def _format(ts: dt.datetime) -> str:
    return ts.strftime(MICRO)


def _parse(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    for fmt in (MICRO, "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.timezone.utc)
        except ValueError:
            continue
    return None


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
    ) -> None:
        if not renew_deadline < lease_duration:
            raise ValueError(f"renew_deadline ({renew_deadline}) must be shorter than lease_duration ({lease_duration})")
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._renewed_at: float | None = None
        self.problem: str | None = None  # a problem the user must fix (see module docstring)
        self.leading = asyncio.Event()
        self.changed = asyncio.Event()
        self._path = resource_path(group="coordination.k8s.io", version="v1", plural="leases", namespace=namespace, name=name)

    @property
    def is_leader(self) -> bool:
        return self._renewed_at is not None and time.monotonic() - self._renewed_at < self.renew_deadline

    def _set_leading(self, leading: bool) -> None:
        if leading != self.leading.is_set():
            log.info("%s %s leadership of lease %s/%s", self.identity, "acquired" if leading else "lost", self.namespace, self.name)
            if leading:
                self.leading.set()
            else:
                self.leading.clear()
            self.changed.set()

    async def run(self) -> None:
        while True:
            try:
                ok = await self.try_acquire_or_renew()
            except ApiError as exc:
                self._report(exc)
                ok = False
            if ok:
                self._renewed_at = time.monotonic()
                self.problem = None
            self._set_leading(self.is_leader)
            await asyncio.sleep(self.retry_period)

    def _report(self, exc: ApiError) -> None:
        problem = None
        if exc.status == 404 and "namespaces" in exc.message:
            problem = (f"leader election: namespace {self.namespace} does not exist ({exc.message}): create it, "
                       f"e.g. kubectl apply -f manifests/namespace.yaml")
        elif exc.status in (401, 403):
            problem = (f"leader election: not allowed to use Lease {self.namespace}/{self.name} ({exc.message}): grant "
                       f"get/update (and create) on leases in {self.namespace} to this ServiceAccount, "
                       f"e.g. kubectl apply -f manifests/rbac.yaml")
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
        self._set_leading(False)
        try:
            lease = await self._client.get(self._path)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["renewTime"] = None
                await self._client.replace(self._path, lease)
        except ApiError as exc:
            log.info("releasing lease %s/%s: %s", self.namespace, self.name, exc)

    async def try_acquire_or_renew(self) -> bool:
        now = dt.datetime.now(dt.timezone.utc)
        try:
            lease = await self._client.get(self._path)
        except ApiError as exc:
            if exc.status != 404:
                raise
            return await self._create(now)
        spec: dict[str, Any] = lease.setdefault("spec", {})
        holder = spec.get("holderIdentity")
        if holder and holder != self.identity:
            renewed = _parse(spec.get("renewTime")) or _parse(spec.get("acquireTime"))
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if renewed is not None and (now - renewed).total_seconds() < duration:
                return False
        if holder != self.identity:
            spec["acquireTime"] = _format(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = int(self.lease_duration)
        spec["renewTime"] = _format(now)
        try:
            await self._client.replace(self._path, lease)
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    async def _create(self, now: dt.datetime) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration),
                "acquireTime": _format(now),
                "renewTime": _format(now),
                "leaseTransitions": 0,
            },
        }
        try:
            await self._client.create(
                resource_path(group="coordination.k8s.io", version="v1", plural="leases", namespace=self.namespace), body
            )
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        return True
