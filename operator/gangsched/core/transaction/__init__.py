"""One cycle's transaction: the session over the scheduler's memory, and the messages a cycle writes.

A `CycleSession` reads the memory, places and undoes tentatively (`Checkpoint`s: Volcano's Statement, commit or
discard) and writes every decision into the cycle's Plan (core/memory/plan.py): bindings, reservations, evictions,
nominations, status, events, conditions, and the bookkeeping `SchedulerState.apply` records. The messages module
words PodGroup status, events, pod conditions and backoff.
"""

from gangsched.core.transaction.session import Checkpoint, CycleSession

__all__ = ["Checkpoint", "CycleSession"]
