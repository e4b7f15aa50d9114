"""One cycle as every driver runs it: schedule, then record the Plan in the scheduler's memory.

Contract: `run_cycle(state, now, config) -> Plan` calls `schedule(state, now, config)` (core/cycle/scheduler.py),
then `state.apply(plan)` (core/memory/scheduler_state.py), so the next cycle never hands the same capacity out
again, and returns the Plan. Its API side (bindings, evictions, nominations and their clears, timeouts, pod
conditions, events, PodGroup status, health) is what the caller carries out, reporting the binder's answers back
(`bind_succeeded` / `bind_failed`): the operator against the API server (runtime/operator.py), the pure driver at
once (core/cycle/simulate.py). Pure: the state is mutated, nothing else.
"""

from __future__ import annotations

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig


def run_cycle(state: SchedulerState, now: float, config: SchedulerConfig) -> Plan:
    """One cycle: schedule, and record the plan in `state`; the caller carries out its API side."""
    plan = schedule(state, now, config)
    state.apply(plan)
    return plan
