"""Builders that mirror upstream's allocator test helpers, and the runner of a table case.

Oracle: staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/allocator_testing.go
(its `class`, `claimWithRequest(s)`, `request`, `subRequest`, `requestWithPrioritizedList`, `device`,
`sliceWithDevices`, `node`, `localNodeSelector`, `nodeLabelSelector`, `deviceAllocationResult`,
`allocationResult` and `RunTestAllocator`: results compared order-free, errors by substring).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from gangsched.core.devices import (
    ALL,
    AllocationError,
    AllocationResult,
    Allocator,
    AttrValue,
    CelCache,
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
    Inventory,
    OpaqueConfig,
    ResourceSlice,
)
from gangsched.core.records.records import Requirement, Term
from gangsched.core.values.resources import parse_quantity

REGION1, REGION2, NODE1, NODE2 = "region-1", "region-2", "node-1", "node-2"
CLASS_A, CLASS_B, DRIVER_A, DRIVER_B = "class-a", "class-b", "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3, SLICE4 = "slice-1", "slice-2", "slice-3", "slice-4"
DEV0, DEV1, DEV2, DEV3, DEV4 = "device-0", "device-1", "device-2", "device-3", "device-4"
ALL_NODES = "nodeSelectionAll"
INT_ATTR, VERSION_ATTR = f"{DRIVER_A}/numa", f"{DRIVER_A}/driverVersion"
STRING_ATTR, BOOL_ATTR = f"{DRIVER_A}/stringAttribute", f"{DRIVER_A}/boolAttribute"
NON_EXISTENT_ATTR = f"{DRIVER_A}/NonExistentAttribute"
MAX = 32  # resourceapi.AllocationResultsMaxSize
Node = tuple[str, dict[str, str]]


def node(name: str, region: str) -> Node:
    return name, {"region": region, "planet": "earth"}


def class_(name: str, driver: str, config: str | None = None) -> DeviceClass:
    cfg = (OpaqueConfig(driver, {config: config + "Value"}),) if config else ()
    return DeviceClass(name, (f'device.driver == "{driver}"',), cfg)


def request(name: str, cls: str, count: int, *selectors: str | None, admin: bool = False) -> DeviceRequest:
    return DeviceRequest(name, ExactRequest(name, cls, tuple(selectors), "ExactCount", count, admin))


def all_request(name: str, cls: str, *selectors: str, admin: bool = False) -> DeviceRequest:
    return DeviceRequest(name, ExactRequest(name, cls, tuple(selectors), ALL, 0, admin))


def sub_request(name: str, cls: str, count: int, *selectors: str, mode: str = "ExactCount") -> ExactRequest:
    return ExactRequest(name, cls, tuple(selectors), mode, count)


def prioritized(name: str, *subs: ExactRequest) -> DeviceRequest:
    return DeviceRequest(name, first_available=subs)


def claim(name: str, *requests: DeviceRequest, constraints: Sequence[Constraint] = (), config: Any = ()) -> Claim:
    return Claim(name, tuple(requests), tuple(constraints), tuple(config))


def claim_with_request(name: str, req: str, cls: str, *constraints: Constraint) -> Claim:
    return claim(name, request(req, cls, 1), constraints=constraints)


def match(attribute: str, *requests: str) -> Constraint:
    return Constraint(tuple(requests), attribute)


def claim_config(requests: Sequence[str], driver: str, attribute: str) -> ClaimConfig:
    return ClaimConfig(tuple(requests), OpaqueConfig(driver, {attribute: attribute + "Value"}))


def memory(q: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{q}")) >= 0'


def device(name: str, capacity: Mapping[str, str] | None = None, attributes: Mapping[str, Any] | None = None) -> Device:
    attrs: dict[str, AttrValue] = {}
    for k, v in (attributes or {}).items():
        attrs[k] = v if isinstance(v, AttrValue) else AttrValue(_kind(v), v)
    caps = {k: parse_quantity(q, field=k) for k, q in (capacity or {}).items()}
    return Device(name, attrs, caps)


def _kind(v: Any) -> Any:
    return "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "string"


def version(v: str) -> AttrValue:
    return AttrValue("version", v)


def slice_(
    name: str, where: Any, pool: str | tuple[str, int], driver: str, *devices: Device, gen: int = 1
) -> ResourceSlice:
    pool_name, count = (pool, 1) if isinstance(pool, str) else pool
    s = ResourceSlice(name, driver, pool_name, gen, count, devices=devices)
    if where == ALL_NODES:
        return replace(s, all_nodes=True)
    if isinstance(where, tuple):
        return replace(s, node_selector=where)
    return replace(s, node_name=where)


def one_device(name: str, where: Any, pool: str | tuple[str, int], driver: str) -> ResourceSlice:
    return slice_(name, where, pool, driver, device(DEV1))


def many_devices(name: str, where: Any, pool: str, driver: str, count: int) -> ResourceSlice:
    return slice_(name, where, pool, driver, *(device(f"device-{i}") for i in range(count)))


def label_selector(key: str, *values: str) -> tuple[Term, ...]:
    return (Term((Requirement(key, "In", values),), ()),)


def local_selector(name: str) -> tuple[Term, ...]:
    return (Term((), (Requirement("metadata.name", "In", (name,)),)),)


def res(req: str, driver: str, pool: str, dev: str, admin: bool = False) -> DeviceResult:
    return DeviceResult(req, driver, pool, dev, admin)


def many_results(req: str, driver: str, pool: str, count: int, start: int) -> list[DeviceResult]:
    return [res(req, driver, pool, f"device-{i}") for i in range(start, start + count)]


@dataclass(frozen=True)
class Expect:
    selector: tuple[Term, ...] | None
    devices: tuple[DeviceResult, ...]
    config: tuple[ConfigResult, ...] = ()


def alloc(selector: tuple[Term, ...] | None, *devices: DeviceResult, config: Sequence[ConfigResult] = ()) -> Expect:
    return Expect(selector, devices, tuple(config))


def class_cfg(requests: Sequence[str], driver: str, attribute: str, source: str = "FromClass") -> ConfigResult:
    return ConfigResult(source, tuple(requests), OpaqueConfig(driver, {attribute: attribute + "Value"}))  # type: ignore[arg-type]


NONE = Features(admin_access=False, prioritized_list=False)  # upstream's zero Features{}
ADMIN = Features(admin_access=True, prioritized_list=False)
PRIORITIZED = Features(admin_access=False, prioritized_list=True)


@dataclass(frozen=True)
class Case:
    claims: Sequence[Claim] = ()
    classes: Sequence[DeviceClass] = ()
    slices: Sequence[ResourceSlice] = ()
    node: Node = field(default_factory=lambda: node(NODE1, REGION1))
    allocated: Sequence[DeviceID] = ()
    features: Features = NONE
    expect: Sequence[Expect] | None = None  # None: nothing allocated
    error: str | None = None  # a substring of the error expected


def _canonical_selector(sel: tuple[Term, ...] | None) -> Any:
    if sel is None:
        return None
    return frozenset(
        (
            frozenset((r.key, r.operator, frozenset(r.values)) for r in t.expressions),
            frozenset((r.key, r.operator, frozenset(r.values)) for r in t.fields),
        )
        for t in sel
    )


def _canonical(selector: tuple[Term, ...] | None, devices: Sequence[DeviceResult], config: Any) -> Any:
    cfg = tuple((c.source, c.requests, c.config.driver, repr(c.config.parameters)) for c in config)
    return (_canonical_selector(selector), tuple(sorted(devices)), cfg)


def run_case(case: Case) -> None:
    """RunTestAllocator: allocate the claims on the node; compare results order-free, errors by substring."""
    classes = {c.name: c for c in case.classes}
    allocator = Allocator(Inventory(case.slices), classes, CelCache(), case.features)
    name, labels = case.node
    if case.error is not None:
        with pytest.raises(AllocationError, match=None) as info:
            allocator.allocate(name, labels, case.claims, set(case.allocated))
        assert case.error in str(info.value), str(info.value)
        return
    got: list[AllocationResult] | None = allocator.allocate(name, labels, case.claims, set(case.allocated))
    if not case.expect:
        assert not got
        return
    assert got is not None, "expected an allocation"
    have = Counter(_canonical(r.node_selector, r.devices, r.config) for r in got)
    want = Counter(_canonical(e.selector, e.devices, e.config) for e in case.expect)
    assert have == want
