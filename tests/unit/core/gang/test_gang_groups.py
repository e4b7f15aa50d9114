"""Gang groups (issue 13 item 6): a gang of a group reserves nothing and starts no waiting time until every gang
of the group exists with at least its minMember pods; the message names the gang missing or short.

Oracle: Koordinator's coscheduling, pkg/scheduler/plugins/coscheduling/core/core.go, `basicGangRequirementsCheck`
(called from `PreFilter`: every gang of the gang group must exist, be initialised and have collected its
minimum number of children, else the pod is rejected before any reservation: "memberGangs ... doesn't
exists", "... child pod not collect enough"), and its `Permit` (the group waits until every gang's assumed pods
reach its minimum, then the whole group is allowed); core/core_test.go `TestPreFilter` case
"pod count less than minMember".
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from tests.builders import add_gang, add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=10, default_wait_seconds=10.0)
GROUP = ("default/a", "default/b")


def _wait_start(c: SchedulerState, gang: str) -> float | None:
    return c.gangs[gang].first_reserved


def test_group_waits_for_its_partners_pods_without_reserving_or_timing() -> None:
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    a = add_gang(c, "a", 2, group=GROUP, created=1.0, gpu=8)
    b = add_gang(c, "b", 1, min_member=2, group=GROUP, created=2.0, gpu=8)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations and not plan.first_reserved
    status = plan.gang_status["default/a"]
    assert status.reason == "WaitingForGangGroup"
    assert status.message == "waiting for gang group: default/b has 1 of minMember 2 pods"
    assert {x.pod_key for x in plan.conditions if x.reason == "WaitingForGangGroup"} == set(a)
    assert c.gangs["default/a"].first_reserved is None
    assert not step(c, CFG, 100.0).timeouts  # long after the waiting time: nothing ran
    b.append(add_pod(c, "b-1", gang="default/b", rank=1, gpu=8))  # the partner's pods arrive late
    plan = step(c, CFG, 200.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(a + b)
    assert set(plan.satisfied) == set(GROUP) and not plan.timeouts


def test_missing_partner_is_named() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    add_gang(c, "a", 2, group=GROUP, gpu=8)
    plan = step(c, CFG, 0.0)
    assert not plan.reservations
    assert plan.gang_status["default/a"].message == "waiting for gang group: default/b does not exist"


def test_partner_losing_its_pods_releases_the_groups_reservations() -> None:
    """a holds 2 reservations (its third member never fits and keeps it queued); b then loses a pod: at a's next
    attempt the check fails again and a gives everything back (its waiting time stops)."""
    c = SchedulerState()
    add_nodes(c, 3, gpu=8)
    a = add_gang(c, "a", 2, group=GROUP, created=1.0, gpu=8)
    add_pod(c, "a-big", gang="default/a", rank=2, gpu=16)
    b = add_gang(c, "b", 2, group=GROUP, created=2.0, gpu=8)  # 1 node left: b does not fit beside a
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.reservations) == a and _wait_start(c, "default/a") == 0.0
    c.remove_pod(b[1])
    plan = step(c, CFG, 5.0)
    assert sorted(plan.releases) == a and not plan.reservations
    assert _wait_start(c, "default/a") is None
    assert plan.gang_status["default/a"].message == "waiting for gang group: default/b has 1 of minMember 2 pods"
    assert sum(u.get("nvidia.com/gpu", 0) for u in c.used.values()) == 0


def test_satisfied_partner_passes_the_check() -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 4, gpu=8)
    c.upsert_gang(GangSpec("default", "b", 2, group=GROUP))
    for i in range(2):  # b runs (its pods hold its quorum); a comes later
        add_pod(c, f"b-{i}", gang="default/b", rank=i, node=nodes[i], phase="Running", gpu=8)
    assert c.gangs["default/b"].satisfied
    a = add_gang(c, "a", 2, group=GROUP, gpu=8)
    assert sorted(k for k, _ in step(c, CFG, 0.0).bindings) == a
