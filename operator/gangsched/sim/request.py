"""The context of one API request, and what the emulator's in-process controllers call back on the registry.

Contract: `RequestContext` carries a request's dryRun flag and fieldValidation mode (Strict | Warn | Ignore) and
collects its warnings; every verb of `Registry` (registry.py) takes one. `RegistryCalls` is the part of the
registry that the controllers it constructs (namespace_controller.py, termination.py) call: typed here, below
the registry, so that they need not import the module that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gangsched.sim.store import Entry, Store
from gangsched.sim.types import ResourceType


@dataclass
class RequestContext:
    dry_run: bool = False
    field_validation: str = "Warn"  # Strict | Warn | Ignore
    warnings: list[str] = field(default_factory=list)


class RegistryCalls(Protocol):
    """What the namespace controller and the pod terminator call on the registry (sim/registry.py `Registry`)."""

    @property
    def store(self) -> Store: ...
    def now(self) -> str: ...
    def resolve(self, group: str, version: str, plural: str) -> ResourceType | None: ...
    def namespaced_storage_types(self) -> list[ResourceType]: ...
    def remove_entry(self, rtype: ResourceType, entry: Entry) -> Entry: ...
    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        ctx: RequestContext,
        *,
        options: dict[str, Any] | None = None,
    ) -> Entry: ...
