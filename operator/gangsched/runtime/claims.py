"""DRA claims around the bindings: assumed when decided, written before the Binding, undone when it fails.

Contract (oracle: kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go: Reserve keeps
the allocation in memory, PreBind writes status.allocation and reservedFor before the Binding, Unreserve takes it
back): `assume(fits)` as the plan is carried out (the cache's DraBook holds them until their events arrive);
`await reserve(bindings, fits) -> {pod_key: reason}`: each pod's claims written (k8s/claims.py), pods in parallel;
a pod whose claims could not be written, or no longer fit the node it was reserved on, is not bound and what was
written for it is undone; `await release(pod_keys, fits)`: for pods whose binding failed. The consumer is the pod,
or the PodGroup for a PodGroup's claim (1.37; a PodGroup's reservation is never taken back here: it serves the
group's other pods, the resourceclaim controller drops it with the PodGroup).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gangsched.core.devices import AllocationResult, PodFit
from gangsched.k8s.claims import ClaimWriter
from gangsched.models.dra import allocation_to_api
from gangsched.state.cache import ClusterCache


class DeviceClaims:
    def __init__(self, writer: ClaimWriter, cache: ClusterCache) -> None:
        self.writer = writer
        self.cache = cache

    def _consumer(self, pod_key: str, claim_key: str) -> dict[str, Any]:
        pod = self.cache.cluster.pods.get(pod_key)
        return self.cache.dra.consumer(claim_key, pod_key, pod.uid if pod is not None else "")

    def assume(self, fits: Mapping[str, PodFit]) -> None:
        for fit in fits.values():
            if fit.fits:
                self.cache.dra.assume_fit(fit)
        if fits:
            self.cache.devices_dirty = True

    async def reserve(self, bindings: Sequence[tuple[str, str]], fits: Mapping[str, PodFit]) -> dict[str, str]:
        todo = [key for key, _node in bindings if key in fits]
        # a claim shared by pods of the batch is allocated by one fit: any of them may write it first
        made = {claim: result for fit in fits.values() for claim, result in fit.new.items()}
        reasons = await asyncio.gather(*(self._reserve_pod(key, fits[key], made) for key in todo))
        refused = {key: why for key, why in zip(todo, reasons, strict=True) if why is not None}
        if refused:
            self.cache.devices_dirty = True
        return refused

    async def _reserve_pod(self, pod_key: str, fit: PodFit, made: Mapping[str, AllocationResult]) -> str | None:
        if not fit.fits:  # (decided when its reservation was bound: core/transaction/session.py bind)
            return fit.reason or "its claims do not fit its node"
        done: list[str] = []
        for claim_key in fit.claims:
            new = made.get(claim_key)
            consumer = self._consumer(pod_key, claim_key)
            why = await self.writer.reserve(claim_key, allocation_to_api(new) if new else None, consumer)
            if why is not None:
                for key in done:
                    await self.writer.release(key, self._consumer(pod_key, key), ours=key in fit.new)
                for key in fit.claims:
                    self.cache.dra.unassume(key)
                return why
            done.append(claim_key)
        return None

    async def release(self, pod_keys: Iterable[str], fits: Mapping[str, PodFit]) -> None:
        jobs = []
        for pod_key in pod_keys:
            fit = fits.get(pod_key)
            if fit is None:
                continue
            for key in fit.claims:
                consumer = self._consumer(pod_key, key)
                if consumer["resource"] == "pods":  # (a PodGroup's reservation serves its other pods too)
                    jobs.append(self.writer.release(key, consumer, ours=key in fit.new))
            for key in fit.claims:
                self.cache.dra.unassume(key)
        if jobs:
            await asyncio.gather(*jobs)
            self.cache.devices_dirty = True
