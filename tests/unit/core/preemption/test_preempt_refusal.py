"""Refused evictions (issue 13 item 7 (c)): a refusal frees nothing, so it ends no backoff; the refused victim is
not chosen again for that preemptor until its budget, the pod, or the cluster's nodes change.

Oracles: the Eviction API answers 429 TooManyRequests when a PodDisruptionBudget refuses
(pkg/registry/core/pod/storage/eviction.go); kube-scheduler's preemption treats a victim whose eviction would
violate a budget as a last resort (pkg/scheduler/framework/preemption/preemption.go `filterPodsWithPDBViolation`)
and a failed preemption attempt sends the preemptor back to the queue with backoff
(pkg/scheduler/schedule_one.go `handleSchedulingFailure`): only a cluster event that may make it schedulable moves
it early (pkg/scheduler/internal/queue/scheduling_queue.go `MoveAllToActiveOrBackoffQueue`), and a refused
eviction is no such event.
"""

from __future__ import annotations

import dataclasses

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=4)
LATER = 100.0  # past any backoff, within the default waiting time (600 s)


def running(c: SchedulerState, name: str, nodes: list[str]) -> list[str]:
    c.upsert_gang(GangSpec("default", name, len(nodes)))
    c.mark_satisfied(f"default/{name}")
    return [
        add_pod(c, f"{name}-{i}", gang=f"default/{name}", rank=i, node=n, phase="Running", gpu=8)
        for i, n in enumerate(nodes)
    ]


def pending(c: SchedulerState, name: str, n: int, priority: int = 1000) -> list[str]:
    c.upsert_gang(GangSpec("default", name, n))
    return [add_pod(c, f"{name}-{i}", gang=f"default/{name}", rank=i, gpu=8, priority=priority) for i in range(n)]


def refused_setup() -> tuple[SchedulerState, list[str], list[str]]:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    low = running(c, "low", ["node0", "node1"])
    high = pending(c, "high", 2)
    assert sorted(step(c, CFG, 0.0).evictions) == low
    for key in low:
        c.eviction_failed(key)
    return c, low, high


def test_a_refusal_frees_nothing_and_ends_no_backoff() -> None:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    low = running(c, "low", ["node0", "node1"])
    pending(c, "high", 2)
    step(c, CFG, 0.0)
    gen = c.store.freed_gen
    for key in low:
        c.eviction_failed(key)
    assert c.store.freed_gen == gen
    plan = step(c, CFG, 0.01)
    assert not plan.evictions and not plan.gang_status  # still backed off: not attempted at all


def test_a_refused_victim_is_not_chosen_again_for_that_preemptor() -> None:
    c, low, _ = refused_setup()
    assert c.refused_for("default/high") == set(low)
    plans = [step(c, CFG, t) for t in (LATER, 2 * LATER, 3 * LATER)]
    assert not any(plan.evictions for plan in plans)
    events = [e for e in plans[-1].events if e.reason == "PreemptionRefused"]
    assert events and "refused (PodDisruptionBudget)" in events[0].message


def test_another_preemptor_may_still_ask_as_a_last_resort_under_pdb_prefer() -> None:
    prefer = dataclasses.replace(CFG, preemption_pdb="prefer")
    c, low, high = refused_setup()
    step(c, prefer, LATER)  # high finds nothing to preempt: its nominations go
    assert all(c.nomination_of(k) is None for k in high)
    pending(c, "other", 1, priority=2000)
    plan = step(c, prefer, 2 * LATER)
    assert plan.preemptions.get("default/other") and set(plan.preemptions["default/other"]) <= set(low)


def test_under_pdb_respect_no_preemptor_asks_a_victim_gang_with_a_refused_member() -> None:
    """Issue 22 item 2: evicting the others would leave the gang below its quorum."""
    c, _low, _high = refused_setup()
    step(c, CFG, LATER)
    pending(c, "other", 1, priority=2000)
    plan = step(c, CFG, 2 * LATER)
    assert not plan.evictions and "default/other" not in plan.preemptions


def test_the_budget_allowing_it_again_lifts_the_refusal() -> None:
    c, low, _high = refused_setup()
    assert not step(c, CFG, LATER).evictions
    c.set_protected(low[0], False)  # its PDB now allows it (state/budgets.py)
    c.set_protected(low[1], False)
    assert c.refused_for("default/high") == set()
    assert sorted(step(c, CFG, 2 * LATER).evictions) == low


def test_the_victim_changing_lifts_the_refusal() -> None:
    c, low, _ = refused_setup()
    pod = c.pods[low[0]]
    c.upsert_pod(dataclasses.replace(pod, priority=pod.priority - 1))
    assert c.refused_for("default/high") == {low[1]}


def test_a_node_change_lifts_the_refusal() -> None:
    c, _low, _ = refused_setup()
    add_nodes(c, 1, prefix="extra", gpu=1)
    assert c.refused_for("default/high") == set()


def test_refusals_are_forgotten_with_the_pod_or_the_preemptor() -> None:
    c, low, _ = refused_setup()
    c.remove_pod(low[0])
    assert c.refused_for("default/high") == {low[1]}
    c.remove_gang("default/high")
    assert c.victims.sizes()["refused"] == 0
