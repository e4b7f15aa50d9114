"""A pure driver: run scheduling cycles against a SchedulerState until nothing changes (tests, benchmarks, what-if).

Contract: `run_until_quiet(cluster, config, *, now=0.0, max_cycles=100_000, advance_timers=False) -> SimResult`
runs cycles (`run_cycle`: schedule, then apply the plan to the cluster) and treats every binding as succeeded at once
(`bind_succeeded`). It stops when a plan is empty (no decision left at this time). With `advance_timers`,
instead of stopping it jumps `now` to the plan's next_wakeup (backoff ends, waiting-time expiry) and goes
on, until there is no timer left. The cluster is mutated (it is the simulation's state); nothing else is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gangsched.core.cycle.run import run_cycle
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig


@dataclass(slots=True)
class SimResult:
    cycles: int = 0
    now: float = 0.0
    plans: list[Plan] = field(default_factory=list)

    @property
    def bound(self) -> list[tuple[str, str]]:
        return [b for p in self.plans for b in p.bindings]


def step(cluster: SchedulerState, config: SchedulerConfig, now: float) -> Plan:
    """One cycle (`run_cycle`: schedule, apply), and bind every binding at once."""
    plan = run_cycle(cluster, now, config)
    for key, _node in plan.bindings:
        cluster.bind_succeeded(key)
    return plan


def run_until_quiet(
    cluster: SchedulerState,
    config: SchedulerConfig,
    *,
    now: float = 0.0,
    max_cycles: int = 100_000,
    advance_timers: bool = False,
    keep_plans: bool = True,
) -> SimResult:
    result = SimResult(now=now)
    while result.cycles < max_cycles:
        plan = step(cluster, config, result.now)
        result.cycles += 1
        if keep_plans:
            result.plans.append(plan)
        if plan.empty:
            if advance_timers and plan.next_wakeup is not None and plan.next_wakeup > result.now:
                result.now = plan.next_wakeup
                continue
            break
    return result
