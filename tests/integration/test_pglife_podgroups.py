"""PodGroup lifecycle (issue 13 item 9), the operator against the emulator: the PodGroup gangsched creates for an
annotation-only gang is deleted with its last pod and never comes back without an owner; a PodGroup deleted and
created again under the same name gets its status written again; the deleted gang leaves nothing in the cache.

The deletion itself is the garbage collector's (kube-controller-manager, pkg/controller/garbagecollector:
garbagecollector.go attemptToDeleteItem deletes a dependent whose ownerReferences are all dangling, i.e. whose
owners no longer exist, and graph_builder.go makes a "virtual" node for an owner it has never seen, so a dependent
created after its owners are gone is collected too); the emulator's registry does the same (sim/registry.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.api import KubeApi
from gangsched.k8s.client import KubeClient
from gangsched.k8s.coalescing import PatchWriter
from gangsched.k8s.writes import Writes
from gangsched.runtime.operator import Operator
from gangsched.runtime.podgroups import PodGroupReporter
from gangsched.sim.serve import Cluster, running_cluster
from gangsched.state.cache import ClusterCache
from tests.builders import NODE_8_GPUS, koordinator_annotations
from tests.integration.harness import (
    PG,
    append_all,
    create,
    eventually,
    get_podgroup,
    on_replica,
    phase_of,
    pod,
    pods,
    replica,
)

NODE = NODE_8_GPUS


@pytest.fixture
async def cluster2() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


@contextlib.asynccontextmanager
async def podgroup_events(k: KubeClient) -> AsyncIterator[list[tuple[str, dict[str, Any]]]]:
    """Every PodGroup watch event (all namespaces) from now until the block ends."""
    listed = await k.get(f"{PG}/podgroups")
    events: list[tuple[str, dict[str, Any]]] = []
    task = asyncio.create_task(
        append_all(k.watch(f"{PG}/podgroups", resource_version=listed["metadata"]["resourceVersion"]), events)
    )
    try:
        yield events
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def history(events: list[tuple[str, dict[str, Any]]], name: str) -> list[str]:
    return [kind for kind, obj in events if kind != "BOOKMARK" and obj["metadata"]["name"] == name]


async def forgotten(op: Operator, key: str) -> bool:
    def check() -> bool:
        sizes = op.cache.gang_structure_sizes()
        return (
            op.cache.podgroup(key) is None
            and key not in op.cache.cluster.gangs
            and key not in op.cache.podgroups_to_create
            and sizes["statuses"] == 0
        )

    return on_replica(op, check)


async def _settled_after(k: KubeClient, events: list[tuple[str, dict[str, Any]]], marker: str) -> None:
    """A later annotation-only gang's PodGroup created and seen: whatever the operator decided about the earlier
    gang before that has reached the API by now."""
    await create(k, pod(f"{marker}-0", annotations=koordinator_annotations(marker, 1)))
    await eventually(lambda: _seen(events, marker), what=f"PodGroup {marker} created")


async def _seen(events: list[tuple[str, dict[str, Any]]], name: str) -> bool:
    return "ADDED" in history(events, name)


@pytest.mark.parametrize("placed", [True, False], ids=["bound", "pending"])
async def test_created_podgroup_goes_with_its_last_pod_and_stays_gone(cluster2: Cluster, placed: bool) -> None:
    """Bound members terminate gracefully (kubelet), pending ones go at once (pkg/registry/core/pod/strategy.go
    CheckGracefulDelete: an unscheduled pod is deleted immediately); either way the PodGroup follows its last pod
    and the operator does not create it again (neither without owners nor owned by pods already gone)."""
    k = cluster2.client
    gpu = 1 if placed else 16  # 16 GPUs: no node has them, the gang stays pending
    async with replica(cluster2.kubeconfig) as op, podgroup_events(k) as events:
        for i in range(2):
            await create(k, pod(f"job-{i}", gpu=gpu, annotations=koordinator_annotations("job", 2)))
        pg = await eventually(lambda: get_podgroup(k, "job"), what="PodGroup created for the gang")
        assert {o["kind"] for o in pg["metadata"]["ownerReferences"]} == {"Pod"}
        if placed:
            await eventually(lambda: _phase_is(k, "job", "Running"), what="job Running")
        else:
            await eventually(lambda: _phase_is(k, "job", "Pending"), what="job Pending written")
        for i in range(2):
            await k.delete(f"/api/v1/namespaces/default/pods/job-{i}")

        async def gone() -> bool:
            return await get_podgroup(k, "job") is None and not any(n.startswith("job-") for n in await pods(k))

        await eventually(gone, what="pods and PodGroup gone")
        await eventually(lambda: forgotten(op, "default/job"), what="the operator forgot the gang")
        await _settled_after(k, events, "marker")
        assert await get_podgroup(k, "job") is None
        assert history(events, "job")[-1] == "DELETED", history(events, "job")


async def test_podgroup_deleted_by_hand_comes_back_owned_while_members_live(cluster2: Cluster) -> None:
    """A user deleting the PodGroup of a live annotation-only gang gets it back (the gang still exists), owned by
    the members, with its status written again (the status memory of the old object does not suppress it)."""
    k = cluster2.client
    async with replica(cluster2.kubeconfig):
        for i in range(2):
            await create(k, pod(f"live-{i}", annotations=koordinator_annotations("live", 2)))
        await eventually(lambda: _phase_is(k, "live", "Running"), what="live Running")
        first = await get_podgroup(k, "live")
        assert first is not None
        await k.delete(f"{PG}/namespaces/default/podgroups/live")

        async def recreated() -> dict[str, Any] | None:
            pg = await get_podgroup(k, "live")
            return pg if pg is not None and pg["metadata"]["uid"] != first["metadata"]["uid"] else None

        again = await eventually(recreated, what="PodGroup created again")
        assert {o["name"] for o in again["metadata"]["ownerReferences"]} == {"live-0", "live-1"}
        await eventually(lambda: _phase_is(k, "live", "Running"), what="status written on the new PodGroup")


async def test_podgroup_recreated_by_the_user_gets_its_status_again(cluster2: Cluster) -> None:
    """A PodGroup deleted and created again under the same name (same spec) gets its status: neither the status
    book nor the writer's "already written" memory of the old object skips it."""
    k = cluster2.client
    spec = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
    body = {**spec, "metadata": {"name": "re", "namespace": "default"}, "spec": {"minMember": 2}}
    async with replica(cluster2.kubeconfig):
        await create(k, body, *(pod(f"re-{i}", group="re") for i in range(2)))
        await eventually(lambda: _phase_is(k, "re", "Running"), what="re Running")
        for _ in range(5):  # quickly, within the second of the last status write: the same body (timestamps too)
            await k.delete(f"{PG}/namespaces/default/podgroups/re")
            await eventually(lambda: _absent(k, "re"), what="re deleted")
            await create(k, body)
            await eventually(lambda: _phase_is(k, "re", "Running"), what="status written on the re-created PodGroup")


async def test_deletion_handled_after_the_recreated_podgroup_still_gets_its_status(cluster2: Cluster) -> None:
    """The flake of the test above, made deterministic: Kopf handles each object's events in its own worker, keyed
    by uid (kopf/_core/reactor/queueing.py get_uid, worker), so the re-created PodGroup's ADDED may be handled before
    the old one's DELETED. That deletion must not make the operator forget the live object: its status is written."""
    k = cluster2.client
    spec = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
    body = {**spec, "metadata": {"name": "late", "namespace": "default"}, "spec": {"minMember": 1}}
    await create(k, body, pod("late-0", group="late"))
    cache = ClusterCache(scheduler_name="gangsched")
    writer = PatchWriter(k, settle=0.0, min_gap=0.0)
    reporter = PodGroupReporter(api=KubeApi(k), cache=cache, writes=Writes(writer), create_for_annotation_gangs=False)
    cache.on_pod_event("ADDED", await k.get("/api/v1/namespaces/default/pods/late-0"))
    old = await get_podgroup(k, "late")
    assert old is not None
    cache.on_podgroup("ADDED", old)
    reporter.write_statuses({"default/late"})
    await writer.flush(everything=True)
    assert await phase_of(k, "late") == "Pending"
    await k.delete(f"{PG}/namespaces/default/podgroups/late")
    await create(k, body)
    new = await get_podgroup(k, "late")
    assert new is not None and await phase_of(k, "late") is None
    cache.on_podgroup("ADDED", new)
    cache.on_podgroup("DELETED", old)  # the old object's worker ran late
    reporter.write_statuses({"default/late"})
    await writer.flush(everything=True)
    assert await phase_of(k, "late") == "Pending"


async def _absent(k: KubeClient, name: str) -> bool:
    return await get_podgroup(k, name) is None


async def _phase_is(k: KubeClient, name: str, phase: str) -> bool:
    return await phase_of(k, name) == phase


async def test_podgroup_deleted_before_its_pods_are_seen_gone_is_not_recreated_ownerless(cluster2: Cluster) -> None:
    """The zombie's sequence, with the watch events in the order that makes it: the members are deleted, the
    garbage collector deletes the PodGroup, and the operator sees the PodGroup's DELETED before its pods' (two
    watches, no order between them). The gang still has members then, so the reporter decides to create its PodGroup
    again; the members' DELETED arrive before that create is sent. The PodGroup must not come back without owners:
    the reporter takes the owners when it decides (pods that lived then), so the garbage collector collects it again
    (garbagecollector.go attemptToDeleteItem: all ownerReferences dangling)."""
    k = cluster2.client
    for i in range(2):
        await create(k, pod(f"z-{i}", annotations=koordinator_annotations("z", 2)))
    members = [await k.get(f"/api/v1/namespaces/default/pods/z-{i}") for i in range(2)]
    cache = ClusterCache(scheduler_name="gangsched")
    writer = PatchWriter(k, settle=0.0, min_gap=0.0)
    reporter = PodGroupReporter(api=KubeApi(k), cache=cache, writes=Writes(writer), create_for_annotation_gangs=True)
    spawned: list[asyncio.Task[None]] = []

    def spawn(coro: Any) -> None:
        spawned.append(asyncio.ensure_future(coro))

    for obj in members:
        cache.on_pod_event("ADDED", obj)
    reporter.sync_owned(spawn, {"default/z"})
    await asyncio.gather(*spawned)
    pg = await get_podgroup(k, "z")
    assert pg is not None
    cache.on_podgroup("ADDED", pg)
    reporter.sync_owned(spawn, {"default/z"})  # a round with the PodGroup seen: nothing to create
    for i in range(2):  # unbound pods: deleted at once; the PodGroup follows them (garbage collector)
        await k.delete(f"/api/v1/namespaces/default/pods/z-{i}")
    await eventually(lambda: _absent(k, "z"), what="PodGroup collected")
    cache.on_podgroup("DELETED", pg)  # seen before the pods' DELETED
    spawned.clear()
    reporter.sync_owned(spawn, {"default/z"})
    for obj in members:
        cache.on_pod_event("DELETED", obj)  # ... which arrive before the create is sent
    await asyncio.gather(*spawned)

    async def not_there() -> bool:
        return await get_podgroup(k, "z") is None

    await eventually(not_there, what="no PodGroup left for the deleted gang")
    assert cache.gang_structure_sizes()["sources"] == 0


async def test_reporter_creates_nothing_for_a_gang_whose_members_are_all_leaving(cluster2: Cluster) -> None:
    """Members being deleted (metadata.deletionTimestamp set: a bound pod's graceful deletion, or a finalizer) do
    not get a new PodGroup when theirs is deleted: it would outlive them by a create sent after they go."""
    k = cluster2.client
    body = pod("fin-0", annotations=koordinator_annotations("fin", 1))
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await create(k, body)
    await k.delete("/api/v1/namespaces/default/pods/fin-0")
    leaving = await k.get("/api/v1/namespaces/default/pods/fin-0")
    assert leaving["metadata"].get("deletionTimestamp")
    cache = ClusterCache(scheduler_name="gangsched")
    reporter = PodGroupReporter(
        api=KubeApi(k), cache=cache, writes=Writes(PatchWriter(k)), create_for_annotation_gangs=True
    )
    cache.on_pod_event("ADDED", leaving)
    assert "default/fin" in cache.podgroups_to_create
    spawned: list[Any] = []
    reporter.sync_owned(spawned.append, {"default/fin"})
    assert spawned == []
    await k.patch("/api/v1/namespaces/default/pods/fin-0", {"metadata": {"finalizers": None}})


async def test_dependent_created_with_owners_already_gone_is_collected(cluster2: Cluster) -> None:
    """The emulator's garbage collector, as kube-controller-manager's (pkg/controller/garbagecollector:
    graph_builder.go addDependentToOwners adds a virtual node for an unseen owner; garbagecollector.go
    attemptToDeleteItem finds it absent and deletes the dependent, none of whose owners is solid): an object
    created, or updated, with ownerReferences to objects that no longer exist is deleted; one owner alive keeps it."""
    k = cluster2.client
    await create(k, pod("owner-a"), pod("owner-b"))
    a = await k.get("/api/v1/namespaces/default/pods/owner-a")
    b = await k.get("/api/v1/namespaces/default/pods/owner-b")
    await k.delete("/api/v1/namespaces/default/pods/owner-a")  # unbound: removed at once
    await eventually(lambda: _pod_absent(k, "owner-a"), what="owner-a gone")

    def ref(p: dict[str, Any]) -> dict[str, str]:
        return {"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}

    def cm(name: str, owners: list[dict[str, str]]) -> dict[str, Any]:
        meta = {"name": name, "namespace": "default", "ownerReferences": owners}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}

    await create(k, cm("dangling", [ref(a)]), cm("half", [ref(a), ref(b)]), cm("later", []))
    await k.patch("/api/v1/namespaces/default/configmaps/later", {"metadata": {"ownerReferences": [ref(a)]}})
    cms = "/api/v1/namespaces/default/configmaps"

    async def collected() -> bool:
        names = {c["metadata"]["name"] for c in (await k.get(cms))["items"]}
        return "dangling" not in names and "later" not in names

    await eventually(collected, what="dependents of a gone owner collected")
    assert (await k.get(f"{cms}/half"))["metadata"]["name"] == "half"  # owner-b lives: kept


async def test_writer_sends_an_unchanged_status_again_to_a_recreated_podgroup(cluster2: Cluster) -> None:
    """The writer skips a patch equal to the last one it wrote to a path; after `forget_podgroup` (the reporter calls
    it when the PodGroup's uid changed, state/status.py adopt) the same body reaches the new object."""
    k = cluster2.client
    body = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "w"}}
    body["spec"] = {"minMember": 1}
    writer = PatchWriter(k, settle=0.0, min_gap=0.0)
    writes = Writes(writer)
    await create(k, body)
    writes.set_podgroup_status("default", "w", {"phase": "Running"})
    await writer.flush(everything=True)
    assert await phase_of(k, "w") == "Running"
    await k.delete(f"{PG}/namespaces/default/podgroups/w")
    await create(k, body)
    writes.set_podgroup_status("default", "w", {"phase": "Running"})
    await writer.flush(everything=True)
    assert await phase_of(k, "w") is None  # skipped: "already written" (to the old object)
    writes.forget_podgroup("default", "w")
    writes.set_podgroup_status("default", "w", {"phase": "Running"})
    await writer.flush(everything=True)
    assert await phase_of(k, "w") == "Running"


async def _pod_absent(k: KubeClient, name: str) -> bool:
    return name not in await pods(k)
