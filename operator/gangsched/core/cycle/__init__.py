"""The scheduling cycle: `schedule(state, now, config) -> Plan`, its recheck and timers, and a pure driver.

`schedule` rechecks reservations and nominations, expires waiting times, then attempts the units of the queue in
order and returns the Plan. `run_cycle` is one cycle as every driver runs it: schedule, then record the plan in
the memory (`state.apply(plan)`). `step` and `run_until_quiet` drive cycles against a SchedulerState until nothing
changes (tests, benchmarks, what-if), with no API in between.
"""

from gangsched.core.cycle.run import run_cycle
from gangsched.core.cycle.scheduler import queue_order, schedule
from gangsched.core.cycle.simulate import SimResult, run_until_quiet, step

__all__ = ["SimResult", "queue_order", "run_cycle", "run_until_quiet", "schedule", "step"]
