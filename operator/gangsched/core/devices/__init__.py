"""Structured device allocation (DRA, resource.k8s.io/v1): CEL selectors, pools, the allocator and its ledger.

Pure: slices, classes and claims come in as data (core/devices/model.py), allocations go out as data. The
allocator follows upstream's structured allocator (stable feature set: adminAccess, firstAvailable,
matchAttribute, ExactCount / All, multi-node pools); `DeviceBook` keeps a gang transaction's tentative devices
and shared claims, undone through the cycle's Workspace (core/fit/capacity.py `take_devices`).
"""

from gangsched.core.devices.allocator import Allocator
from gangsched.core.devices.cel import CelCache, CelCompileError, CelRuntimeError
from gangsched.core.devices.index import Shapes
from gangsched.core.devices.ledger import ClaimState, DeviceBook, DeviceState, PodFit
from gangsched.core.devices.model import (
    ALL,
    MAX_CONSUMERS,
    AllocationError,
    AllocationResult,
    AttrValue,
    Claim,
    ClaimConfig,
    ConfigResult,
    Constraint,
    Device,
    DeviceClass,
    DeviceID,
    DeviceRequest,
    DeviceResult,
    ExactRequest,
    Features,
    OpaqueConfig,
    ResourceSlice,
)
from gangsched.core.devices.pools import Inventory, Pool

__all__ = [
    "ALL",
    "MAX_CONSUMERS",
    "AllocationError",
    "AllocationResult",
    "Allocator",
    "AttrValue",
    "CelCache",
    "CelCompileError",
    "CelRuntimeError",
    "Claim",
    "ClaimConfig",
    "ClaimState",
    "ConfigResult",
    "Constraint",
    "Device",
    "DeviceBook",
    "DeviceClass",
    "DeviceID",
    "DeviceRequest",
    "DeviceResult",
    "DeviceState",
    "ExactRequest",
    "Features",
    "Inventory",
    "OpaqueConfig",
    "PodFit",
    "Pool",
    "ResourceSlice",
    "Shapes",
]
