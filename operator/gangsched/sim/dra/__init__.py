"""Dynamic Resource Allocation (resource.k8s.io/v1) in the emulator: the kinds, their strategies, the resourceclaim
controller (claims.py) and a simulated GPU driver (driver.py).

Contract (pure data and functions):
- `served_types(gates) -> list[ResourceType]`: DeviceClass, ResourceSlice, ResourceClaim (with status) and
  ResourceClaimTemplate, under every API profile.
- `warnings(kind, obj) -> list[str]`: a create's Warning headers: a DeviceClass's `extendedResourceName` is stored
  but not served from its devices (said, not ignored).
- `strategy_for(group, kind) -> scheduling.Strategy | None`: the kind's strategy (strategies.py), called by the
  registry on every write; problems are answered as 422 Invalid. More: docs/modules.md#simdra__init__py.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.dra import strategies as s
from gangsched.sim.features import FeatureGates
from gangsched.sim.scheduling import Strategy
from gangsched.sim.scheduling.fields import Problem
from gangsched.sim.types import ResourceType

GROUP = "resource.k8s.io"
VERSION = "v1"
_STATUS = frozenset({"status"})

DEVICE_CLASS = ResourceType(GROUP, VERSION, "DeviceClass", "deviceclasses", "deviceclass", False)
RESOURCE_SLICE = ResourceType(GROUP, VERSION, "ResourceSlice", "resourceslices", "resourceslice", False)
RESOURCE_CLAIM = ResourceType(GROUP, VERSION, "ResourceClaim", "resourceclaims", "resourceclaim", True, (), _STATUS)
CLAIM_TEMPLATE = ResourceType(
    GROUP, VERSION, "ResourceClaimTemplate", "resourceclaimtemplates", "resourceclaimtemplate", True
)
TYPES = (DEVICE_CLASS, RESOURCE_SLICE, RESOURCE_CLAIM, CLAIM_TEMPLATE)

Obj = dict[str, Any]


def _none(*args: Any) -> None:
    return None


def _no_problems(*args: Any) -> list[Problem]:
    return []


STRATEGIES: dict[str, Strategy] = {
    "DeviceClass": Strategy(
        _none,
        lambda obj, gates: s.device_class_validate(obj),
        _none,
        lambda cur, new, gates: s.device_class_validate(new, cur),
        _no_problems,
    ),
    "ResourceSlice": Strategy(
        _none,
        lambda obj, gates: s.slice_validate(obj),
        _none,
        lambda cur, new, gates: s.slice_validate(new, cur),
        _no_problems,
    ),
    "ResourceClaim": Strategy(
        lambda obj, gates: s.claim_prepare_create(obj),
        lambda obj, gates: s.claim_validate(obj),
        lambda cur, new, gates: s.claim_prepare_update(cur, new),
        lambda cur, new, gates: s.immutable_spec(cur, new),
        s.claim_validate_status_update,
    ),
    "ResourceClaimTemplate": Strategy(
        lambda obj, gates: s.template_prepare(obj),
        lambda obj, gates: s.template_validate(obj),
        lambda cur, new, gates: s.template_prepare(new),
        lambda cur, new, gates: s.immutable_spec(cur, new),
        _no_problems,
    ),
}


def served_types(gates: FeatureGates) -> list[ResourceType]:
    """See module docstring."""
    return list(TYPES)


def warnings(kind: tuple[str, str], obj: Obj) -> list[str]:
    """See module docstring."""
    name = (obj.get("spec") or {}).get("extendedResourceName") if kind == (GROUP, "DeviceClass") else None
    if not name:
        return []
    return [
        (
            f"spec.extendedResourceName {name!r} is stored but not served by this emulator: pods requesting {name} "
            "are not given devices of this class (DRAExtendedResource is not simulated)"
        )
    ]


def strategy_for(group: str, kind: str) -> Strategy | None:
    return STRATEGIES.get(kind) if group == GROUP else None
