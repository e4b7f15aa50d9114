"""The scheduler's memory: its in-memory model of the cluster, kept between cycles, and the Plan it records.

`SchedulerState` is the facade over the store (nodes, pods, each pod's lifecycle state and the resource accounting
that follows), the gang table, the scheduling queue, the victim book and the gang-health records. A cycle reads it
through the `StateView` protocols and returns a `Plan` (decisions as data); `SchedulerState.apply(plan)` records
it, and the runtime carries the Plan out against the API and reports the answers back.
"""

from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.health_book import DegradedCondition, GangHealth, HealthBook
from gangsched.core.memory.plan import (
    CapacityHold,
    Deadlock,
    Event,
    GangStatus,
    GangTimeout,
    Plan,
    PodCondition,
    ReachMemo,
    UnitBackoff,
)
from gangsched.core.memory.podstate import PodState
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.memory.store import ClusterStore
from gangsched.core.memory.views import StateView, StoreView

__all__ = [
    "CapacityHold",
    "ClusterStore",
    "Deadlock",
    "DegradedCondition",
    "Event",
    "GangHealth",
    "GangState",
    "GangStatus",
    "GangTimeout",
    "HealthBook",
    "Plan",
    "PodCondition",
    "PodState",
    "ReachMemo",
    "SchedulerState",
    "StateView",
    "StoreView",
    "UnitBackoff",
]
