"""No process-wide mutable state in gangsched.core (issue 23 item 3): every scheduler's memory is its own.

Every module of the core is imported and its module-level names checked: no ClassRegistry (the interned scheduling
classes are each SchedulerState's: `state.classes`), no method bound to one (the aliases `scheduling_class = ...`
that made one registry the process's), no mutable container but the constant tables listed (read, never written).
"""

from __future__ import annotations

import importlib
import pkgutil

import gangsched.core as core
from gangsched.core.records import records
from gangsched.core.records.records import ClassRegistry


def test_core_keeps_no_class_registry_or_mutable_table_at_module_level() -> None:
    """Issue 23 item 3 ("no process-wide mutable state in core/"): no module of gangsched.core holds a
    ClassRegistry, a method bound to one, or a mutable container, but for the constant tables listed here (read,
    never written)."""
    constant_tables = {
        "gangsched.core.devices.cel_runtime": {"FUNCTIONS", "_TYPE_NAMES", "base_functions"},  # CEL's functions
        "gangsched.core.gang.coming_fit": {"_NONE"},  # an empty mapping shared as "no requests"
        "gangsched.core.transaction.fit_counts": {"_NONE"},
        "gangsched.core.memory.podstate": {"_DECISIONS", "_OBSERVED_TARGET", "TABLE"},  # the transition table
        "gangsched.core.memory.store": {"TABLE"},
        "gangsched.core.values.resources": {"_BINARY", "_DECIMAL"},  # quantity suffixes
    }
    assert not hasattr(records, "CLASSES")
    found = []
    for info in pkgutil.walk_packages(core.__path__, "gangsched.core."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            bound_to = getattr(value, "__self__", None)
            mutable = isinstance(value, (dict, list, set, bytearray)) and name not in constant_tables.get(info.name, ())
            if isinstance(value, ClassRegistry) or isinstance(bound_to, ClassRegistry) or mutable:
                found.append(f"{info.name}.{name}")
    assert found == []
