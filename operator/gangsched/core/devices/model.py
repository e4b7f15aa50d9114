"""Structured device allocation (DRA, resource.k8s.io/v1) as data: slices, devices, classes, claims and results.

Contract: frozen records built by the models layer from API JSON (or by tests). Names follow the API:
`Device` (attributes keyed by their qualified name as published, "memory" or "domain/id"; capacity as exact
`Fraction`s), `ResourceSlice` (one pool's slice: nodeName / nodeSelector terms / allNodes), `DeviceClass`,
`ExactRequest` (spec.devices.requests[].exactly, and each firstAvailable subrequest), `DeviceRequest`,
`Constraint` (matchAttribute), `Claim` and the output `AllocationResult` (results, nodeSelector, config).
A selector is its CEL expression, or None for a selector of an unknown kind (reported by the allocator).
`AllocationError` carries upstream's message (staging/src/k8s.io/dynamic-resource-allocation/structured).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, NamedTuple

from gangsched.core.records.records import Term

MAX_DEVICES_PER_CLAIM = 32  # resourceapi.AllocationResultsMaxSize
MAX_CONSUMERS = 256  # resourceapi.ResourceClaimReservedForMaxSize
EXACT_COUNT = "ExactCount"
ALL = "All"
AttrKind = Literal["int", "bool", "string", "version"]


class AllocationError(Exception):
    """A claim that cannot be allocated because of its own content or the slices' (not a lack of devices)."""


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class AttrValue(NamedTuple):
    """One device attribute: exactly one of int, bool, string, version (a semver string)."""

    kind: AttrKind
    value: int | bool | str


class CelKey:
    """What a selector can see of a device (attributes, capacity, allowMultipleAllocations), hashed once: selector
    results are kept per key, and 40,000 devices share a handful of them."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: tuple[Any, ...]) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelKey) and other._hash == self._hash and other.value == self.value


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    capacity: dict[str, Fraction] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    cel_key: CelKey = field(init=False, compare=False, repr=False)  # what a selector can see of it

    def __post_init__(self) -> None:
        key = (
            tuple(sorted(self.attributes.items())),
            tuple(sorted(self.capacity.items())),
            self.allow_multiple_allocations,
        )
        object.__setattr__(self, "cel_key", CelKey(key))


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    generation: int = 1
    slice_count: int = 1
    node_name: str | None = None
    node_selector: tuple[Term, ...] | None = None  # spec.nodeSelector.nodeSelectorTerms
    all_nodes: bool = False
    per_device_node_selection: bool = False  # DRAPartitionableDevices: not in the stable feature set
    devices: tuple[Device, ...] = ()


@dataclass(frozen=True, slots=True)
class OpaqueConfig:
    driver: str
    parameters: Any  # the opaque JSON, passed through


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str | None, ...] = ()
    config: tuple[OpaqueConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class ExactRequest:
    name: str
    device_class: str
    selectors: tuple[str | None, ...] = ()
    mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None = None
    first_available: tuple[ExactRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class Constraint:
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None  # a fully qualified name "domain/id"; None: a constraint of unknown kind


@dataclass(frozen=True, slots=True)
class ClaimConfig:
    requests: tuple[str, ...]
    config: OpaqueConfig


@dataclass(frozen=True, slots=True)
class Claim:
    key: str  # "namespace/name" (or the name alone), as upstream's klog.KObj prints it
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    config: tuple[ClaimConfig, ...] = ()


class DeviceResult(NamedTuple):
    request: str  # "request" or "request/subrequest"
    driver: str
    pool: str
    device: str
    admin_access: bool = False


class ConfigResult(NamedTuple):
    source: Literal["FromClass", "FromClaim"]
    requests: tuple[str, ...]
    config: OpaqueConfig


@dataclass(frozen=True, slots=True)
class AllocationResult:
    devices: tuple[DeviceResult, ...]
    node_selector: tuple[Term, ...] | None  # None: the devices are reachable from every node
    config: tuple[ConfigResult, ...] = ()
    dedicated: tuple[DeviceID, ...] | None = field(default=None, compare=False, repr=False)  # (a cache)

    def device_ids(self) -> tuple[DeviceID, ...]:
        return tuple(DeviceID(d.driver, d.pool, d.device) for d in self.devices)

    def taken(self) -> tuple[DeviceID, ...]:
        """The devices the allocation takes for itself (adminAccess ones stay usable by other claims)."""
        if self.dedicated is None:
            ids = tuple(DeviceID(d.driver, d.pool, d.device) for d in self.devices if not d.admin_access)
            object.__setattr__(self, "dedicated", ids)
            return ids
        return self.dedicated


@dataclass(frozen=True, slots=True)
class Features:
    """The DRA feature gates the allocator honours (both on by default since Kubernetes 1.34)."""

    admin_access: bool = True
    prioritized_list: bool = True
