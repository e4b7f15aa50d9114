"""PodGroups as the operator writes them: status through the status subresource, and the PodGroups of
annotation-only gangs.

Contract:
- `write_statuses()` drains the cache's `dirty_gangs` and hands each PodGroup whose status changed (computed by
  state/status.py's GangStatusBook) to the coalescing PatchWriter as a merge patch of `/status`. Gangs without a
  PodGroup object are skipped (their status is written once the object exists).
- `sync_owned(spawn)` creates a PodGroup for every annotation-only gang the cache lists (labelled
  `app.kubernetes.io/managed-by: gangsched`, its spec mirroring the annotations), owned by the gang's member
  pods so the garbage collector deletes it with the last of them; when new members join such a gang, their pods
  are added to its ownerReferences. `spawn(coro)` runs the API calls in the background.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from gangsched.core.gangspec import GangSpec
from gangsched.k8s.client import ApiError, KubeClient, resource_path
from gangsched.k8s.writer import PatchWriter
from gangsched.models.podgroup import API_VERSION, GROUP, PLURAL, VERSION
from gangsched.state.cache import ClusterCache
from gangsched.state.status import GangStatusBook

log = logging.getLogger(__name__)

MANAGED_BY = "app.kubernetes.io/managed-by"
Spawn = Callable[[Coroutine[Any, Any, None]], None]


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def podgroup_path(namespace: str, name: str | None = None, *, status: bool = False) -> str:
    return resource_path(
        group=GROUP,
        version=VERSION,
        plural=PLURAL,
        namespace=namespace,
        name=name,
        subresource="status" if status else None,
    )


def podgroup_for(spec: GangSpec, owners: list[dict[str, str]]) -> dict[str, Any]:
    """The PodGroup object of an annotation-only gang."""
    body: dict[str, Any] = {"minMember": spec.min_member}
    if spec.total_member is not None:
        body["totalMember"] = spec.total_member
    body["mode"] = str(spec.mode)
    if spec.wait_seconds:
        body["scheduleTimeoutSeconds"] = int(spec.wait_seconds)
    if spec.group:
        body["gangGroup"] = list(spec.group)
    if spec.network_topology is not None:
        nt = spec.network_topology
        body["networkTopology"] = {"mode": str(nt.mode), "groupSize": nt.group_size}
        if nt.highest_tier_allowed is not None:
            body["networkTopology"]["highestTierAllowed"] = nt.highest_tier_allowed
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": {MANAGED_BY: "gangsched"},
            "annotations": {"gangsched.io/created-for": "annotation-only gang"},
            "ownerReferences": owners,
        },
        "spec": body,
    }


class PodGroupReporter:
    def __init__(
        self, *, client: KubeClient, cache: ClusterCache, writer: PatchWriter, create_for_annotation_gangs: bool
    ) -> None:
        self.client = client
        self.cache = cache
        self.writer = writer
        self.statuses = GangStatusBook()
        self.create_for_annotation_gangs = create_for_annotation_gangs
        self._creating: set[str] = set()

    def _owners(self, key: str) -> list[dict[str, str]]:
        return [
            {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid}
            for pod in self.cache.members(key)
            if pod.uid
        ]

    def sync_owned(self, spawn: Spawn, gangs: set[str]) -> None:
        if not self.create_for_annotation_gangs:
            return
        self._creating.intersection_update(self.cache.podgroups_to_create)  # created (seen) or gone: forget
        for key, spec in list(self.cache.podgroups_to_create.items()):
            if key not in self._creating:
                self._creating.add(key)
                spawn(self._create(key, spec))
        for key in gangs:
            pg = self.cache.podgroup(key)
            if pg is None or not pg.owned_by_us:
                continue
            owners = self._owners(key)
            if owners and not {o["uid"] for o in owners} <= pg.owners:
                ns, name = split_key(key)
                self.writer.patch(podgroup_path(ns, name), {"metadata": {"ownerReferences": owners}})

    async def _create(self, key: str, spec: GangSpec) -> None:
        ns, _ = split_key(key)
        try:
            await self.client.create(podgroup_path(ns), podgroup_for(spec, self._owners(key)))
        except ApiError as exc:
            if exc.status != 409:
                log.warning("creating PodGroup %s for an annotation-only gang: %s", key, exc)
                self._creating.discard(key)  # try again next round

    def write_statuses(self, dirty: set[str]) -> None:
        cluster = self.cache.cluster
        now = now_iso()
        in_flight: dict[str, int] = {}
        if dirty:
            for pod_key, _node in cluster.bindings_in_flight():
                pod = cluster.pods.get(pod_key)
                if pod is not None and pod.gang in dirty and not pod.node_name:
                    in_flight[pod.gang] = in_flight.get(pod.gang, 0) + 1
        for key in dirty:
            pg = self.cache.podgroup(key)
            if pg is None:
                continue  # no PodGroup object (yet): nothing to write to
            if pg.schedule_start_iso is not None:  # (a restart does not move scheduleStartTime)
                self.statuses.seed_start(key, pg.schedule_start_iso)
            gs = cluster.gangs.get(key)
            spec = gs.spec if gs is not None else None
            min_member = spec.min_member if spec is not None else (pg.spec.min_member if pg.spec else 1)
            members = self.cache.members(key)
            held = 0
            for member in members:
                reservation = cluster.reservation_of(member.key)
                if reservation is not None and not reservation[1]:
                    held += 1
            body = self.statuses.status_of(
                key,
                min_member=min_member,
                members=members,
                generation=pg.generation,
                decided=gs.last_status if gs is not None else None,
                satisfied=bool(gs and gs.satisfied),
                timed_out=bool(gs and gs.timed_out),
                invalid=pg.error,
                in_flight=in_flight.get(key, 0),
                now_iso=now,
                held=held,
            )
            if body is not None:
                ns, name = split_key(key)
                self.writer.patch(podgroup_path(ns, name, status=True), {"status": body})
