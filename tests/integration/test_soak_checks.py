"""The soak's end check `unbound_now` (test_soak.py) on hand-made clusters: what it must report and what it must
not (issue 13 item 13: "ever had minMember bound" is not satisfaction; a gang preempted whole must reach its quorum
again). No cluster runs here: the check is a function of pods, PodGroups and node capacity."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from tests.integration.test_soak import PROFILES, GangPlan, quantity, unbound_now

NODES = {f"n{i}": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "8", "pods": "16"} for i in range(2)}
ALLOCATABLE = {n: {r: quantity(v) for r, v in a.items()} for n, a in NODES.items()}


def pod(name: str, *, profile: str = "gpu4", node: str | None = None, phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "annotations": {}},
        "spec": {"nodeName": node, "containers": [{"resources": {"requests": dict(PROFILES[profile])}}]},
        "status": {"phase": phase},
    }


def pg(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": 2}}


def check(plan: GangPlan, pods: list[dict[str, Any]], alloc: dict[str, dict[str, Fraction]] = ALLOCATABLE) -> list[str]:
    return unbound_now([], [plan], set(), pods, [pg("g")], alloc)


def test_a_gang_below_its_quorum_whose_quorum_does_not_fit_is_not_reported() -> None:
    """Satisfied once (two members bound), then both preempted (gone): its late third member fits alone but the
    gang needs two again, and only one fits next to the blocker's 12 GPUs."""
    plan = GangPlan("default/g", 2, ["default/g-0", "default/g-1", "default/g-2"])
    blocker = [pod("b-0", profile="gpu8", node="n0"), pod("b-1", profile="gpu4", node="n1")]
    assert check(plan, [pod("g-2"), *blocker]) == []


def test_a_gang_below_its_quorum_whose_quorum_fits_is_reported() -> None:
    plan = GangPlan("default/g", 2, ["default/g-0", "default/g-1", "default/g-2"])
    problems = check(plan, [pod("g-1"), pod("g-2")])
    assert len(problems) == 1 and "gang default/g (2 pending, 0 bound or finished" in problems[0]


def test_a_satisfied_gangs_pending_member_that_fits_alone_is_reported() -> None:
    plan = GangPlan("default/g", 2, ["default/g-0", "default/g-1", "default/g-2"])
    bound = [pod("g-0", node="n0", phase="Running"), pod("g-1", node="n0", phase="Succeeded")]
    problems = check(plan, [*bound, pod("g-2")])
    assert len(problems) == 1 and "member default/g-2 of satisfied gang" in problems[0]


def test_members_being_deleted_do_not_keep_a_gang_satisfied() -> None:
    """minMember 3: one member bound, one being deleted (it still holds its GPUs), two pending; one more fits, so the
    gang needs two and waits. Counting the leaving member as bound would call it satisfied and report g-2."""
    plan = GangPlan("default/g", 3, [f"default/g-{i}" for i in range(4)])
    leaving = pod("g-0", node="n0", phase="Running")
    leaving["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    others = [pod("g-1", node="n0", phase="Running"), pod("g-2"), pod("g-3"), pod("b-0", node="n1")]
    assert check(plan, [leaving, *others]) == []
