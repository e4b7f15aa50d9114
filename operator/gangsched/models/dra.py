"""DRA objects (resource.k8s.io/v1) read into core/devices records, and an allocation written back as API JSON.

Contract:
- `slice_from_api(obj) -> Parsed[ResourceSlice]`, `device_class_from_api(obj) -> Parsed[DeviceClass]`,
  `claim_from_api(obj) -> Parsed[ClaimInfo]` (the spec as a core `Claim`, `status.allocation` as an
  `AllocationResult` or None, the number of `status.reservedFor` consumers). `Parsed.unsupported`: the field
  paths set that gangsched does not evaluate (device taints and tolerations, counters, binding conditions,
  list-valued attributes, distinctAttribute, capacity requests, extendedResourceName, ...), for the caller to
  report; a selector, request or constraint of an unknown kind is kept as None (the allocator reports it).
- `allocation_to_api(result) -> dict`: a claim's `status.allocation` (devices.results, devices.config,
  nodeSelector).
Bad input raises InvalidField naming the field path, e.g. `spec.devices[0].attributes.model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gangsched.core import InvalidField, Term, parse_quantity
from gangsched.core.devices import (
    AllocationResult,
    AttrValue,
    Claim,
    ClaimConfig,
    ConfigResult,
    Constraint,
    Device,
    DeviceClass,
    DeviceRequest,
    DeviceResult,
    ExactRequest,
    OpaqueConfig,
    ResourceSlice,
)
from gangsched.models.fields import as_list, as_object
from gangsched.models.selectors import node_selector_term

T = TypeVar("T")
_ATTR_KINDS = {"int": "int", "bool": "bool", "string": "string", "version": "version"}
_LIST_KINDS = ("ints", "bools", "strings", "versions")
_DEVICE_UNSUPPORTED = (
    "taints", "consumesCounters", "bindingConditions", "bindingFailureConditions", "bindsToNode", "nodeName",
    "nodeSelector", "allNodes",
)  # fmt: skip
_REQUEST_UNSUPPORTED = ("tolerations", "capacity")


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    value: T
    unsupported: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    claim: Claim
    allocation: AllocationResult | None
    consumers: int  # entries of status.reservedFor


def _key(obj: Mapping[str, Any]) -> str:
    meta = as_object(obj.get("metadata"), field="metadata")
    name, namespace = str(meta.get("name", "")), meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def _string(value: Any, *, field: str, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise InvalidField(field, value, "must be a non-empty string")
    return value


def _int(value: Any, *, field: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidField(field, value, "must be an integer >= 0")
    return value


def _attribute(raw: Any, *, field: str, unsupported: list[str]) -> AttrValue | None:
    attr = as_object(raw, field=field)
    kinds = [k for k in _ATTR_KINDS if k in attr]
    if not kinds and any(k in attr for k in _LIST_KINDS):
        unsupported.append(field)  # DRAListTypeAttributes
        return None
    if len(kinds) != 1:
        raise InvalidField(field, dict(attr), "must set exactly one of int, bool, string, version")
    kind, value = kinds[0], attr[kinds[0]]
    expected = {"int": int, "bool": bool, "string": str, "version": str}[kind]
    if not isinstance(value, expected) or (kind == "int" and isinstance(value, bool)):
        raise InvalidField(f"{field}.{kind}", value, f"must be a {expected.__name__}")
    return AttrValue(kind, value)  # type: ignore[arg-type]


def _device(raw: Any, *, field: str, unsupported: list[str]) -> Device:
    dev = as_object(raw, field=field)
    attributes: dict[str, AttrValue] = {}
    for name, value in as_object(dev.get("attributes"), field=f"{field}.attributes").items():
        attr = _attribute(value, field=f"{field}.attributes.{name}", unsupported=unsupported)
        if attr is not None:
            attributes[str(name)] = attr
    capacity = {}
    for name, value in as_object(dev.get("capacity"), field=f"{field}.capacity").items():
        cap = as_object(value, field=f"{field}.capacity.{name}")
        if "requestPolicy" in cap:
            unsupported.append(f"{field}.capacity.{name}.requestPolicy")
        capacity[str(name)] = parse_quantity(cap.get("value", ""), field=f"{field}.capacity.{name}.value")
    unsupported += [f"{field}.{k}" for k in _DEVICE_UNSUPPORTED if dev.get(k) not in (None, [], False)]
    multi = dev.get("allowMultipleAllocations") is True
    if multi:
        unsupported.append(f"{field}.allowMultipleAllocations")
    return Device(_string(dev.get("name"), field=f"{field}.name"), attributes, capacity, multi)


def slice_from_api(obj: Mapping[str, Any]) -> Parsed[ResourceSlice]:
    spec = as_object(obj.get("spec"), field="spec")
    pool = as_object(spec.get("pool"), field="spec.pool")
    unsupported: list[str] = []
    devices = tuple(
        _device(d, field=f"spec.devices[{i}]", unsupported=unsupported)
        for i, d in enumerate(as_list(spec.get("devices"), field="spec.devices"))
    )
    if spec.get("sharedCounters"):
        unsupported.append("spec.sharedCounters")
    selector: tuple[Term, ...] | None = None
    if spec.get("nodeSelector") is not None:
        terms = as_object(spec["nodeSelector"], field="spec.nodeSelector").get("nodeSelectorTerms")
        selector = tuple(
            node_selector_term(t, field=f"spec.nodeSelector.nodeSelectorTerms[{i}]")
            for i, t in enumerate(as_list(terms, field="spec.nodeSelector.nodeSelectorTerms"))
        )
    per_device = spec.get("perDeviceNodeSelection") is True
    if per_device:
        unsupported.append("spec.perDeviceNodeSelection")
    s = ResourceSlice(
        name=_string(as_object(obj.get("metadata"), field="metadata").get("name"), field="metadata.name"),
        driver=_string(spec.get("driver"), field="spec.driver"),
        pool=_string(pool.get("name"), field="spec.pool.name"),
        generation=_int(pool.get("generation"), field="spec.pool.generation", default=0),
        slice_count=_int(pool.get("resourceSliceCount"), field="spec.pool.resourceSliceCount", default=1),
        node_name=spec.get("nodeName") or None,
        node_selector=selector,
        all_nodes=spec.get("allNodes") is True,
        per_device_node_selection=per_device,
        devices=devices,
    )
    return Parsed(s, tuple(unsupported))


def _selectors(raw: Any, *, field: str) -> tuple[str | None, ...]:
    out: list[str | None] = []
    for i, sel in enumerate(as_list(raw, field=field)):
        cel = as_object(sel, field=f"{field}[{i}]").get("cel")
        expr = as_object(cel, field=f"{field}[{i}].cel").get("expression") if cel is not None else None
        out.append(_string(expr, field=f"{field}[{i}].cel.expression") if expr is not None else None)
    return tuple(out)


def _opaque(raw: Any, *, field: str) -> OpaqueConfig | None:
    opaque = as_object(raw, field=field).get("opaque")
    if opaque is None:
        return None
    o = as_object(opaque, field=f"{field}.opaque")
    return OpaqueConfig(_string(o.get("driver"), field=f"{field}.opaque.driver"), o.get("parameters"))


def device_class_from_api(obj: Mapping[str, Any]) -> Parsed[DeviceClass]:
    spec = as_object(obj.get("spec"), field="spec")
    unsupported = ["spec.extendedResourceName"] if spec.get("extendedResourceName") else []
    configs = tuple(
        c
        for i, raw in enumerate(as_list(spec.get("config"), field="spec.config"))
        if (c := _opaque(raw, field=f"spec.config[{i}]")) is not None
    )
    name = _string(as_object(obj.get("metadata"), field="metadata").get("name"), field="metadata.name")
    return Parsed(
        DeviceClass(name, _selectors(spec.get("selectors"), field="spec.selectors"), configs), tuple(unsupported)
    )


def _exact(raw: Any, name: str, *, field: str, unsupported: list[str]) -> ExactRequest:
    r = as_object(raw, field=field)
    unsupported += [f"{field}.{k}" for k in _REQUEST_UNSUPPORTED if r.get(k)]
    mode = r.get("allocationMode") or "ExactCount"
    return ExactRequest(
        name=name,
        device_class=_string(r.get("deviceClassName"), field=f"{field}.deviceClassName", required=False),
        selectors=_selectors(r.get("selectors"), field=f"{field}.selectors"),
        mode=str(mode),
        count=_int(r.get("count"), field=f"{field}.count", default=1 if mode == "ExactCount" else 0),
        admin_access=r.get("adminAccess") is True,
    )


def _request(raw: Any, *, field: str, unsupported: list[str]) -> DeviceRequest:
    r = as_object(raw, field=field)
    name = _string(r.get("name"), field=f"{field}.name")
    if r.get("firstAvailable"):
        subs = []
        for i, sub in enumerate(as_list(r["firstAvailable"], field=f"{field}.firstAvailable")):
            sub_name = _string(
                as_object(sub, field=f"{field}.firstAvailable[{i}]").get("name"),
                field=f"{field}.firstAvailable[{i}].name",
            )
            subs.append(_exact(sub, sub_name, field=f"{field}.firstAvailable[{i}]", unsupported=unsupported))
        return DeviceRequest(name, first_available=tuple(subs))
    if r.get("exactly") is None:
        return DeviceRequest(name)  # a request of an unknown kind: the allocator reports it
    return DeviceRequest(name, _exact(r["exactly"], name, field=f"{field}.exactly", unsupported=unsupported))


def _claim_spec(obj: Mapping[str, Any], unsupported: list[str]) -> Claim:
    devices = as_object(as_object(obj.get("spec"), field="spec").get("devices"), field="spec.devices")
    requests = tuple(
        _request(r, field=f"spec.devices.requests[{i}]", unsupported=unsupported)
        for i, r in enumerate(as_list(devices.get("requests"), field="spec.devices.requests"))
    )
    constraints = []
    for i, raw in enumerate(as_list(devices.get("constraints"), field="spec.devices.constraints")):
        c = as_object(raw, field=f"spec.devices.constraints[{i}]")
        if c.get("distinctAttribute"):
            unsupported.append(f"spec.devices.constraints[{i}].distinctAttribute")
        names = tuple(str(n) for n in as_list(c.get("requests"), field=f"spec.devices.constraints[{i}].requests"))
        attr = c.get("matchAttribute")
        constraints.append(
            Constraint(names, _string(attr, field=f"spec.devices.constraints[{i}].matchAttribute") if attr else None)
        )
    configs = []
    for i, raw in enumerate(as_list(devices.get("config"), field="spec.devices.config")):
        opaque = _opaque(raw, field=f"spec.devices.config[{i}]")
        f = f"spec.devices.config[{i}]"
        names = tuple(str(n) for n in as_list(as_object(raw, field=f).get("requests"), field=f"{f}.requests"))
        if opaque is not None:
            configs.append(ClaimConfig(names, opaque))
    return Claim(_key(obj), requests, tuple(constraints), tuple(configs))


def _allocation(raw: Any) -> AllocationResult | None:
    if raw is None:
        return None
    alloc = as_object(raw, field="status.allocation")
    devices = as_object(alloc.get("devices"), field="status.allocation.devices")
    results = []
    for i, r in enumerate(as_list(devices.get("results"), field="status.allocation.devices.results")):
        f = f"status.allocation.devices.results[{i}]"
        d = as_object(r, field=f)
        results.append(
            DeviceResult(
                _string(d.get("request"), field=f"{f}.request"), _string(d.get("driver"), field=f"{f}.driver"),
                _string(d.get("pool"), field=f"{f}.pool"), _string(d.get("device"), field=f"{f}.device"),
                d.get("adminAccess") is True,
            )
        )  # fmt: skip
    selector = None
    if alloc.get("nodeSelector") is not None:
        terms = as_object(alloc["nodeSelector"], field="status.allocation.nodeSelector").get("nodeSelectorTerms")
        f = "status.allocation.nodeSelector.nodeSelectorTerms"
        selector = tuple(node_selector_term(t, field=f"{f}[{i}]") for i, t in enumerate(as_list(terms, field=f)))
    return AllocationResult(tuple(results), selector)


def claim_from_api(obj: Mapping[str, Any]) -> Parsed[ClaimInfo]:
    unsupported: list[str] = []
    claim = _claim_spec(obj, unsupported)
    status = as_object(obj.get("status"), field="status")
    consumers = len(as_list(status.get("reservedFor"), field="status.reservedFor"))
    return Parsed(ClaimInfo(claim, _allocation(status.get("allocation")), consumers), tuple(unsupported))


def _term_to_api(term: Term) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if term.expressions:
        out["matchExpressions"] = [
            {"key": r.key, "operator": r.operator, "values": list(r.values)} for r in term.expressions
        ]
    if term.fields:
        out["matchFields"] = [{"key": r.key, "operator": r.operator, "values": list(r.values)} for r in term.fields]
    return out


def _config_to_api(c: ConfigResult) -> dict[str, Any]:
    out: dict[str, Any] = {"source": c.source, "opaque": {"driver": c.config.driver, "parameters": c.config.parameters}}
    if c.requests:
        out["requests"] = list(c.requests)
    return out


def allocation_to_api(result: AllocationResult) -> dict[str, Any]:
    results = []
    for d in result.devices:
        entry: dict[str, Any] = {"request": d.request, "driver": d.driver, "pool": d.pool, "device": d.device}
        if d.admin_access:
            entry["adminAccess"] = True
        results.append(entry)
    devices: dict[str, Any] = {"results": results}
    if result.config:
        devices["config"] = [_config_to_api(c) for c in result.config]
    out: dict[str, Any] = {"devices": devices}
    if result.node_selector is not None:
        out["nodeSelector"] = {"nodeSelectorTerms": [_term_to_api(t) for t in result.node_selector]}
    return out
