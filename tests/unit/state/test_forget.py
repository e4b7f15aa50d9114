"""Deleted gangs leave nothing behind in state/: 1,000 gangs are created (PodGroups with labelled members, and
annotation-only gangs whose PodGroup the operator creates), get a status body written, and are deleted in every
order (PodGroup first, pods first, pods only); every per-gang structure returns to its size before them."""

from __future__ import annotations

from typing import Any

from gangsched.state.cache import ClusterCache
from tests.builders import member_obj, podgroup_obj

GANGS = 1_000  # every deletion order 250 times: a structure that keeps anything per gang shows it
KOORD = "gang.scheduling.koordinator.sh/"


def sizes(cache: ClusterCache) -> dict[str, int]:
    return {
        **cache.gang_structure_sizes(),
        "cluster_gangs": len(cache.cluster.gangs),
        "pods": len(cache.cluster.pods),
    }


def write_status(cache: ClusterCache, key: str) -> None:
    info = cache.podgroup(key)
    gang = cache.cluster.gangs.get(key)
    body = cache.statuses.status_of(
        key,
        min_member=2,
        members=cache.members(key),
        generation=info.generation if info else 1,
        decided=gang.last_status if gang else None,
        satisfied=False,
        timed_out=False,
        invalid=None,
        in_flight=0,
        now_iso="2024-01-01T00:00:00Z",
    )
    assert body is not None


def create(cache: ClusterCache, i: int) -> list[dict[str, Any]]:
    """Gang i with two members; even gangs have a PodGroup, odd ones are declared by annotations only."""
    name = f"g{i}"
    if i % 2 == 0:
        cache.on_podgroup("ADDED", podgroup_obj(name, min_member=2))
        pods = [member_obj(f"{name}-{r}", group=name, cpu="1") for r in range(2)]
    else:
        decl = {KOORD + "name": name, KOORD + "min-available": "2"}
        pods = [member_obj(f"{name}-{r}", annotations=decl, cpu="1") for r in range(2)]
    for pod in pods:
        cache.on_pod_event("ADDED", pod)
    if i % 4 == 3:  # the operator created the annotation-only gang's PodGroup, and sees it
        cache.on_podgroup("ADDED", podgroup_obj(name, min_member=2))
    return pods


def delete(cache: ClusterCache, i: int, pods: list[dict[str, Any]]) -> None:
    pg = podgroup_obj(f"g{i}", min_member=2)
    if i % 4 == 0:  # the PodGroup first, then its pods
        cache.on_podgroup("DELETED", pg)
    for pod in pods:
        cache.on_pod_event("DELETED", pod)
    if i % 4 in (2, 3):  # the pods first (e.g. garbage collection of an owned PodGroup follows them)
        cache.on_podgroup("DELETED", pg)


def test_a_thousand_deleted_gangs_leave_every_per_gang_structure_at_its_baseline() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup("ADDED", podgroup_obj("stays", min_member=1))  # a gang that lives on through it all
    cache.on_pod_event("ADDED", member_obj("stays-0", group="stays", cpu="1"))
    write_status(cache, "default/stays")
    cache.dirty_gangs.clear()  # (the runtime drains it)
    baseline = sizes(cache)
    for i in range(GANGS):
        pods = create(cache, i)
        if cache.podgroup(f"default/g{i}") is not None:
            write_status(cache, f"default/g{i}")
        delete(cache, i, pods)
    assert sizes(cache) == baseline
    assert "default/stays" in cache.cluster.gangs and cache.podgroup("default/stays") is not None


def test_every_structure_holds_the_gangs_alive() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    baseline = sizes(cache)
    for i in range(8):
        create(cache, i)
        if cache.podgroup(f"default/g{i}") is not None:
            write_status(cache, f"default/g{i}")
    grown = sizes(cache)
    assert grown["sources"] == grown["members"] == grown["cluster_gangs"] == 8
    assert grown["statuses"] == 6  # the gangs whose PodGroup exists (even ones, and i % 4 == 3)
    assert grown["podgroups_to_create"] == 2  # annotation-only gangs whose PodGroup is not seen yet
    assert grown["pods"] == baseline["pods"] + 16


def test_a_podgroup_deleted_while_members_remain_gets_its_status_afresh_when_created_again() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup("ADDED", podgroup_obj("g", min_member=2))
    cache.on_pod_event("ADDED", member_obj("g-0", group="g", cpu="1"))
    write_status(cache, "default/g")
    cache.on_podgroup("DELETED", podgroup_obj("g", min_member=2))
    assert cache.statuses.tracked() == 0 and cache.gang_structure_sizes()["members"] == 1
    cache.on_podgroup("ADDED", podgroup_obj("g", min_member=2))
    write_status(cache, "default/g")  # not None: the new object has no status yet


def test_a_pod_that_leaves_its_gang_for_another_is_counted_once() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", member_obj("p", group="a", cpu="1"))
    moved = member_obj("p", group="b", cpu="1")
    cache.on_pod_event("MODIFIED", moved)
    assert cache.gang_structure_sizes()["members"] == 1
    cache.on_pod_event("DELETED", moved)
    assert cache.gang_structure_sizes() == {
        "sources": 0,
        "members": 0,
        "listed_by": 0,
        "podgroups_to_create": 0,
        "dirty_gangs": 0,
        "statuses": 0,
        "notices": 0,
    }
