"""state/: the cache over the core's Cluster (sources merged, bad input reported once) and PodGroup status."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.memory.plan import GangStatus
from gangsched.state.cache import ClusterCache
from gangsched.state.status import GangStatusBook
from tests.builders import member_obj, node_obj, pod_obj, pod_record, podgroup_obj

K = "gang.scheduling.koordinator.sh/"


def test_pods_of_other_schedulers_only_consume_capacity() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0", cpu="4"))
    other = member_obj("other", cpu="3", node="n0")
    other["spec"]["schedulerName"] = "default-scheduler"
    cache.on_pod_event("ADDED", other)
    assert cache.cluster.used["n0"]["cpu"] == 3000
    assert not cache.cluster.gangs


def test_annotations_win_over_the_podgroup() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup(None, podgroup_obj("g", min_member=4))
    cache.on_pod_event("ADDED", member_obj("g-0", group="g", annotations={K + "min-available": "2"}))
    spec = cache.cluster.gangs["default/g"].spec
    assert spec is not None and spec.min_member == 2 and spec.source == "podgroup+annotations"


def test_annotation_only_gang_asks_for_a_podgroup_until_one_exists() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    koord = {K + "name": "k", K + "min-available": "2"}
    cache.on_pod_event("ADDED", member_obj("k-0", annotations=koord))
    assert set(cache.podgroups_to_create) == {"default/k"}
    cache.on_podgroup("ADDED", podgroup_obj("k", min_member=2))
    assert cache.podgroups_to_create == {}


def test_a_bad_declaration_is_reported_once_and_the_pod_is_not_scheduled() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    bad = member_obj("b-0", annotations={K + "name": "b", K + "min-available": "abc"})
    cache.on_pod_event("ADDED", bad)
    cache.on_pod_event("MODIFIED", bad)
    assert [(p.kind, p.name, p.reason) for p in cache.problems] == [("Pod", "b-0", "InvalidGangDeclaration")]
    assert K + "min-available" in cache.problems[0].message and '"abc"' in cache.problems[0].message
    assert "default/b-0" not in cache.cluster.pods


def test_an_invalid_podgroup_stops_its_gang_and_is_reported() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", member_obj("g-0", group="g"))
    cache.on_podgroup("ADDED", podgroup_obj("g", min_member=2, totalMember=1))
    assert cache.cluster.gangs["default/g"].spec is None
    assert [p.reason for p in cache.problems] == ["InvalidSpec"]
    assert "spec.totalMember" in cache.problems[0].message


@pytest.mark.parametrize("podgroup_first", [True, False], ids=["podgroup-first", "pods-first"])
@pytest.mark.parametrize(("bound", "satisfied"), [(3, True), (2, False), (0, False)])
def test_a_podgroup_saying_running_is_believed_only_with_its_members_bound(
    podgroup_first: bool, bound: int, satisfied: bool
) -> None:
    """Issue 13 item 5: on startup satisfaction is derived from the pods, never from status.phase alone."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0"))
    pods = [member_obj(f"g-{i}", group="g", node="n0" if i < bound else None) for i in range(3)]
    if podgroup_first:
        cache.on_podgroup(None, podgroup_obj("g", min_member=3, phase="Running"))
        cache.on_pod_list(pods)
    else:
        cache.on_pod_list(pods)
        cache.on_podgroup(None, podgroup_obj("g", min_member=3, phase="Running"))
    assert cache.cluster.gangs["default/g"].satisfied is satisfied


def test_pod_list_replaces_what_was_cached() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0"))
    cache.on_pod_event("ADDED", member_obj("gone", cpu="2", node="n0"))
    cache.on_pod_list([member_obj("kept", cpu="1", node="n0")])
    assert set(cache.cluster.pods) == {"default/kept"}
    assert cache.cluster.used["n0"]["cpu"] == 1000


def record(name: str, *, node: str | None = None, phase: str = "Pending") -> Any:
    return pod_record(pod_obj(name, node=node, phase=phase), gang="default/g", ours=True)


WAITING = GangStatus(0, 0, 3, "WaitingForPods", "2 of minMember 3 pods exist")
RESERVING = GangStatus(0, 2, 1, "Unschedulable", "holding 2 of minMember 3")


@pytest.mark.parametrize(
    ("members", "decided", "satisfied", "timed_out", "phase"),
    [
        pytest.param([record("a"), record("b")], WAITING, False, False, "Pending", id="pending"),
        pytest.param([record("a"), record("b"), record("c")], RESERVING, False, False, "Scheduling", id="reserving"),
        pytest.param([record("a"), record("b"), record("c")], RESERVING, False, True, "Timeout", id="timed-out"),
        pytest.param([record(n, node="n0") for n in "abc"], None, True, False, "Scheduled", id="bound"),
        pytest.param(
            [record(n, node="n0", phase="Running") for n in "abc"], None, True, False, "Running", id="running"
        ),
        pytest.param(
            [record(n, node="n0", phase="Succeeded") for n in "abc"], None, True, False, "Succeeded", id="succeeded"
        ),
        pytest.param(
            [
                record("a", node="n0", phase="Failed"),
                record("b", node="n0", phase="Running"),
                record("c", node="n0", phase="Running"),
            ],
            None,
            True,
            False,
            "Failed",
            id="member-failed-below-quorum",
        ),
        pytest.param(  # the gang's satisfaction ended with the failure (issue 13 item 5): still Failed
            [
                record("a", node="n0", phase="Failed"),
                record("b", node="n0", phase="Running"),
                record("c", node="n0", phase="Running"),
            ],
            None,
            False,
            False,
            "Failed",
            id="member-failed-satisfaction-lost",
        ),
    ],
)
def test_phase(members: list[Any], decided: GangStatus | None, satisfied: bool, timed_out: bool, phase: str) -> None:
    body = GangStatusBook().status_of(
        "default/g",
        min_member=3,
        members=members,
        generation=2,
        decided=decided,
        satisfied=satisfied,
        timed_out=timed_out,
        invalid=None,
        in_flight=0,
        now_iso="2024-01-01T00:00:00Z",
    )
    assert body is not None and body["phase"] == phase
    assert body["observedGeneration"] == 2


def test_status_is_written_only_on_change_and_transition_times_only_move_on_transitions() -> None:
    book = GangStatusBook()
    args: dict[str, Any] = {
        "min_member": 3,
        "generation": 1,
        "decided": WAITING,
        "satisfied": False,
        "timed_out": False,
        "invalid": None,
        "in_flight": 0,
    }
    first = book.status_of("default/g", members=[record("a")], now_iso="2024-01-01T00:00:00Z", **args)
    assert first is not None
    assert book.status_of("default/g", members=[record("a")], now_iso="2024-01-01T00:00:05Z", **args) is None
    args["decided"] = GangStatus(0, 0, 3, "Unschedulable", "needs 3 x {cpu: 1}; 2 nodes fit")
    second = book.status_of("default/g", members=[record(n) for n in "abc"], now_iso="2024-01-01T00:00:09Z", **args)
    assert second is not None and second["message"] == "needs 3 x {cpu: 1}; 2 nodes fit"
    assert second["conditions"][0]["lastTransitionTime"] == "2024-01-01T00:00:00Z"  # still Scheduled=False
    args.update(decided=None, satisfied=True)
    third = book.status_of(
        "default/g", members=[record(n, node="n0") for n in "abc"], now_iso="2024-01-01T00:00:12Z", **args
    )
    assert third is not None and third["conditions"][0]["status"] == "True"
    assert third["conditions"][0]["lastTransitionTime"] == "2024-01-01T00:00:12Z"
