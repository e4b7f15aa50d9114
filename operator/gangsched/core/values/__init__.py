"""Values: what the core knows of resources and gangs, as plain data and arithmetic.

The lowest package of the core: Kubernetes quantities and resource arithmetic in canonical units, the normalized
gang declaration and gang tree, the scheduler's tunables, scheduling-unit keys, natural name order and the one
error type for bad input. Parsers (models/) build these values; every other package of the core reads them (node
and pod records: core/records, one floor up).
"""

from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, StalePolicy, TopologyMode, gang_key
from gangsched.core.values.gangtree import DomainKey, GangTree, TreeNode
from gangsched.core.values.naming import natural_key
from gangsched.core.values.resources import Resources, add, add_into, canonical, maximum, parse_quantity, resource_list
from gangsched.core.values.units import UnitKey

__all__ = [
    "DomainKey",
    "GangMode",
    "GangSpec",
    "GangTree",
    "InvalidField",
    "NetworkTopology",
    "Resources",
    "SchedulerConfig",
    "StalePolicy",
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
    "resource_list",
]
