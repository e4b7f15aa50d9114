"""gangsched.core: the pure scheduling core, and the one door other layers use to reach it.

`plan = run_cycle(state, now, config)` is one scheduling cycle (core/cycle): `schedule` decides, and `state`, the
scheduler's memory (`SchedulerState`, core/memory), records the Plan (`state.apply(plan)`) before the caller carries
out its API side. The parsers (models/) build the values the core reads: node and pod records, gang declarations,
resources, label selectors and pod terms, topology trees, PodDisruptionBudgets, the scheduler's tunables.

Contract: every layer outside core imports core only through this package or its packages' exported names
(`gangsched.core.<package>`, each package's `__all__`), never a module below them (tests/unit/test_core_api.py).
No I/O, no asyncio, no clock reads, no randomness anywhere below (import-linter: core-pure, core-no-io).
"""

from gangsched.core.cycle import run_cycle, schedule
from gangsched.core.memory import (
    Deadlock,
    DegradedCondition,
    Event,
    GangState,
    GangStatus,
    GangTimeout,
    Plan,
    PodCondition,
    SchedulerState,
)
from gangsched.core.preemption import PdbBudget, pdb_protects
from gangsched.core.records import (
    ClassRegistry,
    HostPort,
    LabelSelector,
    NodeRecord,
    PodRecord,
    PodSelector,
    PodTerm,
    Requirement,
    SchedulingClass,
    SpreadConstraint,
    Taint,
    Term,
    Toleration,
)
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values import (
    DomainKey,
    GangMode,
    GangSpec,
    GangTree,
    InvalidField,
    NetworkTopology,
    Resources,
    SchedulerConfig,
    StalePolicy,
    TopologyMode,
    TreeNode,
    UnitKey,
    add,
    add_into,
    canonical,
    gang_key,
    maximum,
    natural_key,
    parse_quantity,
    resource_list,
)

__all__ = [
    "ClassRegistry",
    "Deadlock",
    "DegradedCondition",
    "Domain",
    "DomainKey",
    "Event",
    "GangMode",
    "GangSpec",
    "GangState",
    "GangStatus",
    "GangTimeout",
    "GangTree",
    "HostPort",
    "InvalidField",
    "LabelSelector",
    "NetworkTopology",
    "NodeRecord",
    "PdbBudget",
    "Plan",
    "PodCondition",
    "PodRecord",
    "PodSelector",
    "PodTerm",
    "Requirement",
    "Resources",
    "SchedulerConfig",
    "SchedulerState",
    "SchedulingClass",
    "SpreadConstraint",
    "StalePolicy",
    "Taint",
    "Term",
    "Toleration",
    "TopologyMode",
    "TopologyTree",
    "TreeNode",
    "UnitKey",
    "add",
    "add_into",
    "canonical",
    "gang_key",
    "maximum",
    "natural_key",
    "parse_quantity",
    "pdb_protects",
    "resource_list",
    "run_cycle",
    "schedule",
]
