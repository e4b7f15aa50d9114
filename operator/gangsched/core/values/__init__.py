"""Values: what the core knows of nodes, pods and gangs, as plain data and arithmetic.

The lowest package of the core: records of nodes and pods (the interned scheduling classes they share, and the
selectors, pod terms and spread constraints they declare), Kubernetes quantities and resource arithmetic in
canonical units, the normalized gang declaration, the scheduler's tunables, scheduling-unit keys, natural name
order and the one error type for bad input. Parsers (models/) build
these values; every other package of the core reads them.
"""

from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, StalePolicy, TopologyMode, gang_key
from gangsched.core.values.gangtree import DomainKey, GangTree, TreeNode
from gangsched.core.values.naming import natural_key
from gangsched.core.values.records import (
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
    register_label_keys,
    scheduling_class,
    with_required,
)
from gangsched.core.values.resources import Resources, add, add_into, canonical, maximum, parse_quantity, resource_list
from gangsched.core.values.units import UnitKey

__all__ = [
    "DomainKey",
    "GangMode",
    "GangSpec",
    "GangTree",
    "HostPort",
    "InvalidField",
    "LabelSelector",
    "NetworkTopology",
    "NodeRecord",
    "PodRecord",
    "PodSelector",
    "PodTerm",
    "Requirement",
    "Resources",
    "SchedulerConfig",
    "SchedulingClass",
    "SpreadConstraint",
    "StalePolicy",
    "Taint",
    "Term",
    "Toleration",
    "TopologyMode",
    "TreeNode",
    "UnitKey",
    "add",
    "add_into",
    "canonical",
    "gang_key",
    "maximum",
    "natural_key",
    "parse_quantity",
    "register_label_keys",
    "resource_list",
    "scheduling_class",
    "with_required",
]
