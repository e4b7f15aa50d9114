"""A pod moved to another gang (issue 22 item 1) in the core, and the PodGroup status once members are gone (item 6).

Oracles: Koordinator's gang cache follows a pod's gang label/annotation update (pkg/scheduler/plugins/coscheduling/
core/gang_cache.go onPodUpdate: deleted from the old gang, added to the new); a pod that leaves a gang while it waits
in Permit is unreserved (kube-scheduler pkg/scheduler/framework/interface.go ReservePlugin.Unreserve); a bound pod is
never moved by a scheduler. scheduler-plugins' PodGroup controller (pkg/controllers/podgroup_controller.go) counts
the pods it lists on every reconcile, so a status never counts a member that is gone.
"""

from __future__ import annotations

import dataclasses

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.plan import GangStatus
from gangsched.core.memory.podstate import BOUND, PENDING, RESERVED
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.records.records import PodRecord
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.state.cache import ClusterCache
from gangsched.state.status import GangStatusBook
from tests.builders import add_gang, add_nodes, member_obj, pod_obj, pod_record, podgroup_obj

CFG = SchedulerConfig(max_units_per_cycle=4)


def _satisfied(c: SchedulerState) -> set[str]:
    return {key for key, gang in c.gangs.items() if gang.satisfied}


def _moved(c: SchedulerState, key: str, gang: str) -> None:
    c.upsert_pod(dataclasses.replace(c.pods[key], gang=gang))


def test_reserved_pod_moved_to_another_gang_is_released_and_scheduled_there() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    e = add_gang(c, "e", 3, mode=GangMode.NON_STRICT, wait=60.0, gpu=8)
    step(c, CFG, 0.0)
    assert {c.state_of(k) for k in e[:2]} == {RESERVED}  # two of three fit: NonStrict keeps them
    reserved = c.reservation_of(e[0])
    assert reserved is not None
    c.upsert_gang(GangSpec("default", "solo", 1))
    _moved(c, e[0], "default/solo")
    assert c.state_of(e[0]) is PENDING  # its reservation was e's: released
    assert e[0] not in c.gangs["default/e"].members and e[0] in c.gangs["default/solo"].members
    plan = step(c, CFG, 1.0)
    assert plan.bindings == [(e[0], reserved[0])]  # solo's member, on the capacity it held for e
    assert c.gangs["default/solo"].satisfied and not c.gangs["default/e"].satisfied
    assert c.state_of(e[1]) is RESERVED  # e keeps what it holds until its waiting time ends


def test_bound_pod_moved_to_another_gang_stays_bound_and_holds_the_new_gangs_quorum() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    b = add_gang(c, "b", 2, gpu=8)
    step(c, CFG, 0.0)
    for key in b:
        c.upsert_pod(dataclasses.replace(c.pods[key], phase="Running"))
    assert _satisfied(c) == {"default/b"}
    node = c.pods[b[0]].node_name
    c.upsert_gang(GangSpec("default", "single", 1))
    _moved(c, b[0], "default/single")
    assert c.state_of(b[0]) is BOUND and c.pods[b[0]].node_name == node
    assert _satisfied(c) == {"default/single"}  # b is below its minMember now
    plan = step(c, CFG, 1.0)
    assert not plan.preemptions and not plan.bindings  # nothing evicted, nothing moved


def _record(name: str, node: str | None = None, phase: str = "Pending") -> PodRecord:
    return pod_record(pod_obj(name, node=node, phase=phase), gang="default/g", ours=True)


def test_status_ignores_a_decision_that_counted_members_now_gone() -> None:
    """The binding decision counted 3 members bound or binding; one was deleted (or moved away) since."""
    decided = GangStatus(3, 0, 0, "Binding", "3 members bound or binding (minMember 3)")
    members = [_record("g-0", "n0"), _record("g-1", "n1", phase="Running")]
    body = GangStatusBook().status_of(
        "default/g",
        min_member=3,
        members=members,
        generation=1,
        decided=decided,
        satisfied=False,
        timed_out=False,
        invalid=None,
        in_flight=0,
        now_iso="2024-01-01T00:00:00Z",
    )
    assert body is not None and body["scheduled"] == 2
    assert body["message"] == "2 of 2 members bound or binding, below minMember 3; 1 running"
    assert body["conditions"][0]["reason"] == "BelowMinMember"


def test_cache_wakes_the_scheduler_when_a_bound_pod_changes_gang() -> None:
    """`kubectl label pod b-0 --overwrite scheduling.x-k8s.io/pod-group=single`: the node and phase do not move, but
    both gangs' quorum and status do, so the cache calls on_change (was: nothing until an unrelated event)."""
    changes: list[str] = []
    cache = ClusterCache(scheduler_name="gangsched", on_change=lambda: changes.append("change"))
    for name, size in (("b", 2), ("single", 1)):
        cache.on_podgroup("ADDED", podgroup_obj(name, min_member=size))
    for i in range(2):
        cache.on_pod_event("ADDED", member_obj(f"b-{i}", group="b", node="n0", phase="Running"))
    changes.clear()
    cache.dirty_gangs.clear()
    cache.on_pod_event("MODIFIED", member_obj("b-0", group="single", node="n0", phase="Running"))
    assert changes and {"default/b", "default/single"} <= cache.dirty_gangs
    assert [p.key for p in cache.members("default/single")] == ["default/b-0"]
    assert cache.cluster.gangs["default/single"].satisfied and not cache.cluster.gangs["default/b"].satisfied
