"""PodGroup status describes the present (issue 13 item 11): `Scheduled` only once the quorum's bindings succeeded
(not when the plan was made), a gang bound below minMember is not Scheduled, and messages never read "2 of 1".

Oracle: scheduler-plugins' PodGroup controller, pkg/controllers/podgroup_controller.go: the phase moves to
Scheduled only when `pg.Status.Scheduled >= pg.Spec.MinMember`, where Scheduled counts pods whose spec.nodeName
is set (bound through the API), never pods the scheduler has only decided on; coscheduling's `PostBind` is where
the count moves, after the binding succeeded.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.plan import GangStatus
from gangsched.core.records.records import PodRecord
from gangsched.core.values.config import SchedulerConfig
from gangsched.state.cache import ClusterCache
from gangsched.state.status import GangStatusBook, MemberCounts, podgroup_phase
from tests.builders import member_obj, node_obj, pod_obj, pod_record, podgroup_obj

BINDING = GangStatus(4, 0, 0, "Binding", "4 members bound or binding (minMember 4)")


def _member(name: str, node: str | None = None, phase: str = "Pending") -> PodRecord:
    return pod_record(pod_obj(name, node=node, phase=phase), gang="default/g", ours=True)


def _status(members: list[PodRecord], **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "min_member": 4,
        "members": members,
        "generation": 1,
        "decided": BINDING,
        "satisfied": True,
        "timed_out": False,
        "invalid": None,
        "in_flight": 0,
        "now_iso": "2024-01-01T00:00:00Z",
    }
    args.update(kw)
    body = GangStatusBook().status_of("default/g", **args)
    assert body is not None
    return body


def test_not_scheduled_while_the_bindings_are_in_flight() -> None:
    """The core marked the gang satisfied when it decided the binds; the API shows none bound yet."""
    body = _status([_member(f"g-{i}") for i in range(4)], in_flight=4)
    assert body["phase"] == "Scheduling"
    scheduled = body["conditions"][0]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Binding")
    assert body["scheduled"] == 4  # members bound or being bound (scheduler-plugins' count, with ours in flight)


def test_scheduled_once_the_bindings_succeeded() -> None:
    body = _status([_member(f"g-{i}", node=f"n{i}") for i in range(4)])
    assert body["phase"] == "Scheduled"
    assert body["conditions"][0]["status"] == "True"


def test_partially_bound_gang_is_not_scheduled() -> None:
    """A crashed leader's PodGroup said Scheduled: 2 of 4 bound, the others pending."""
    members = [_member(f"g-{i}", node=f"n{i}" if i < 2 else None) for i in range(4)]
    decided = GangStatus(2, 0, 2, "Unschedulable", "Strict gang cannot reach its quorum")
    body = _status(members, satisfied=False, decided=decided)
    assert body["phase"] not in {"Scheduled", "Running"}
    assert body["conditions"][0]["status"] == "False"


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        pytest.param(MemberCounts(scheduled=4), "Scheduling", id="decided-not-bound"),
        pytest.param(MemberCounts(scheduled=4, bound=4), "Scheduled", id="bound"),
        pytest.param(MemberCounts(scheduled=4, bound=3), "Scheduling", id="one-still-binding"),
        pytest.param(MemberCounts(scheduled=2, bound=2), "Pending", id="partial-nothing-in-flight"),
        pytest.param(MemberCounts(scheduled=4, bound=4, running=4), "Running", id="running"),
    ],
)
def test_phase_counts_only_bound_members(counts: MemberCounts, expected: str) -> None:
    phase = podgroup_phase(counts, min_member=4, satisfied=True, timed_out=False, reserved=0)
    if expected == "Pending":
        phase = podgroup_phase(counts, min_member=4, satisfied=False, timed_out=False, reserved=0)
    assert phase.value == expected


def test_message_without_a_decision_never_reads_more_present_than_the_minimum() -> None:
    """Was "2 of 1 members present" (the PodGroup's minMember was unknown, or smaller than the members)."""
    body = _status([_member("g-0"), _member("g-1")], min_member=1, decided=None, satisfied=False)
    message = body["conditions"][0]["message"]
    assert "2 of 1" not in message
    assert message == "2 members present (minMember 1); not scheduled yet"


def test_invalid_podgroup_never_shows_a_made_up_minimum() -> None:
    members = [dataclasses.replace(_member(f"g-{i}", node=f"n{i}", phase="Running")) for i in range(2)]
    body = _status(members, min_member=1, decided=None, satisfied=False, invalid="spec.minMember: -1: must be >= 1")
    assert body["message"] == "spec.minMember: -1: must be >= 1"
    for condition in body["conditions"]:
        assert "minMember 1" not in condition["message"] and "2 of 1" not in condition["message"]


@pytest.mark.parametrize("podgroup_first", [True, False], ids=["podgroup-first", "pods-first"])
def test_pods_of_an_invalid_podgroup_are_told_it_is_invalid_not_missing(podgroup_first: bool) -> None:
    """Was "PodGroup default/g does not exist yet" on the pods while the PodGroup existed (invalid minMember)."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0", gpu=8))
    bad = podgroup_obj("g", min_member=-1)

    def pods() -> None:
        for i in range(2):
            cache.on_pod_event("ADDED", member_obj(f"g-{i}", group="g"))

    if podgroup_first:
        cache.on_podgroup("ADDED", bad)
        pods()
    else:
        pods()
        cache.on_podgroup("ADDED", bad)
    plan = schedule(cache.cluster, 0.0, SchedulerConfig())
    messages = {c.message for c in plan.conditions}
    assert len(messages) == 1
    (message,) = messages
    assert "does not exist" not in message and "is invalid" in message and "minMember" in message
    cache.on_podgroup("DELETED", bad)  # gone now: the message says so again
    plan = schedule(cache.cluster, 1.0, SchedulerConfig())
    assert {c.message for c in plan.conditions} == {"PodGroup default/g does not exist yet"}
    assert cache.cluster.sizes()["no_spec_reasons"] == 0
