"""The resource.k8s.io/v1 kinds' strategies, as pkg/registry/resource/<kind>/strategy.go and validation.go shape them.

Contract (pure; problems `(field path, detail, cause reason)`, answered as 422 Invalid by the registry):
- DeviceClass: selectors, config, extendedResourceName; selectors compiled again on update only if changed.
- ResourceClaim: status cleared on create, v1 defaults, spec validated and immutable; the status subresource
  checked (`claim_status`). ResourceClaimTemplate: spec.spec validated as a claim spec; immutable.
- ResourceSlice: driver, pool, counts, exactly one node selection, devices and their attributes within the API's
  limits; driver, pool.name and nodeName immutable. More: docs/modules.md#simdrastrategiespy.
"""

from __future__ import annotations

from typing import Any

import gangsched.sim.dra.rules as r
from gangsched.sim.scheduling import fields as f

Obj = dict[str, Any]
Problem = f.Problem
VALUE_KEYS = ("bool", "int", "string", "version", "bools", "ints", "strings", "versions")


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _keep_status(cur: Obj, new: Obj) -> None:
    if "status" in cur:
        new["status"] = cur["status"]
    else:
        new.pop("status", None)


def immutable_spec(cur: Obj, new: Obj) -> list[Problem]:
    if _spec(cur) == _spec(new):
        return []
    return [f.invalid("spec", "<spec>", "field is immutable")]


# ---------------------------------------------------------------- DeviceClass
def device_class_validate(obj: Obj, old: Obj | None = None) -> list[Problem]:
    spec, old_spec = _spec(obj), _spec(old) if old is not None else None
    problems: list[Problem] = []
    if old_spec is None or spec.get("selectors") != old_spec.get("selectors"):
        problems.extend(r.selectors("spec.selectors", spec.get("selectors")))
    config = spec.get("config")
    problems.extend(r.too_many("spec.config", config, r.MAX_CONFIG))
    for i, item in enumerate(config if isinstance(config, list) else ()):
        if isinstance(item, dict):
            problems.extend(r.opaque(f"spec.config[{i}].opaque", item.get("opaque")))
    if spec.get("extendedResourceName") is not None:
        problems.extend(r.extended_resource_name("spec.extendedResourceName", spec["extendedResourceName"]))
    return problems


# ---------------------------------------------------------------- ResourceClaim
def claim_prepare_create(obj: Obj) -> None:
    obj.pop("status", None)
    r.default_requests(_spec(obj).get("devices"))


def claim_validate(obj: Obj) -> list[Problem]:
    return r.device_claim("spec.devices", _spec(obj).get("devices"))


def claim_prepare_update(cur: Obj, new: Obj) -> None:
    _keep_status(cur, new)
    r.default_requests(_spec(new).get("devices"))


def claim_status(status: Obj, old_status: Obj, spec: Obj, deleting: bool) -> list[Problem]:
    """ValidateResourceClaimStatusUpdate (see module docstring)."""
    reserved = status.get("reservedFor")
    problems = r.too_many("status.reservedFor", reserved, r.MAX_RESERVED_FOR)
    uids: set[Any] = set()
    for i, ref in enumerate(reserved if isinstance(reserved, list) else ()):
        if not isinstance(ref, dict):
            continue
        for key in ("resource", "name", "uid"):
            if not ref.get(key):
                problems.append(r.required(f"status.reservedFor[{i}].{key}"))
        if ref.get("uid") in uids:
            problems.append(
                (f"status.reservedFor[{i}]", f"Duplicate value: {f.quote(ref.get('uid'))}", "FieldValueDuplicate")
            )
        uids.add(ref.get("uid"))
    allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
    if reserved and allocation is None:
        problems.append(f.forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
    if reserved and deleting:
        old_uids = {x.get("uid") for x in old_status.get("reservedFor") or () if isinstance(x, dict)}
        if uids - old_uids:
            problems.append(
                f.forbidden(
                    "status.reservedFor",
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                )
            )
    if old_allocation is not None and allocation is not None:
        if allocation != old_allocation:
            problems.append(f.invalid("status.allocation", "<allocation>", "field is immutable"))
    elif isinstance(allocation, dict):
        names = r.request_names(_spec({"spec": spec}).get("devices") or {})
        results = (allocation.get("devices") or {}).get("results")
        problems.extend(r.too_many("status.allocation.devices.results", results, r.MAX_RESULTS))
        for i, result in enumerate(results if isinstance(results, list) else ()):
            if isinstance(result, dict):
                problems.extend(_result(f"status.allocation.devices.results[{i}]", result, names))
    return problems


def _result(path: str, result: Obj, names: dict[str, set[str]]) -> list[Problem]:
    request = str(result.get("request") or "")
    parts = request.split("/")
    problems: list[Problem] = []
    if len(parts) > 2 or parts[0] not in names or (len(parts) == 2 and parts[1] not in names[parts[0]]):
        problems.append(f.invalid(f"{path}.request", request, r.REF_DETAIL))
    problems.extend(r.driver_name(f"{path}.driver", result.get("driver")))
    problems.extend(_pool_name(f"{path}.pool", result.get("pool")))
    device = result.get("device")
    problems.extend([r.required(f"{path}.device")] if not device else f.short_name(f"{path}.device", device))
    return problems


def claim_validate_status_update(cur: Obj, new: Obj) -> list[Problem]:
    status = new.get("status") if isinstance(new.get("status"), dict) else {}
    old_status = cur.get("status") if isinstance(cur.get("status"), dict) else {}
    assert isinstance(status, dict) and isinstance(old_status, dict)
    deleting = bool((new.get("metadata") or {}).get("deletionTimestamp"))
    return claim_status(status, old_status, _spec(new), deleting)


# ---------------------------------------------------------------- ResourceClaimTemplate
def template_prepare(obj: Obj) -> None:
    r.default_requests((_spec(obj).get("spec") or {}).get("devices"))


def template_validate(obj: Obj) -> list[Problem]:
    inner = _spec(obj).get("spec")
    if not isinstance(inner, dict):
        return [r.required("spec.spec")]
    return r.device_claim("spec.spec.devices", inner.get("devices"))


# ---------------------------------------------------------------- ResourceSlice
def _pool_name(path: str, name: Any) -> list[Problem]:
    text = str(name or "")
    if not text:
        return [r.required(path)]
    problems: list[Problem] = []
    if len(text) > 253:
        problems.append((path, "Too long: may not be more than 253 bytes", "FieldValueTooLong"))
    for part in text.split("/"):
        problems.extend(f.long_name(path, part))
    return problems


def slice_validate(obj: Obj, old: Obj | None = None) -> list[Problem]:
    spec = _spec(obj)
    problems = r.driver_name("spec.driver", spec.get("driver"))
    pool = spec.get("pool") if isinstance(spec.get("pool"), dict) else {}
    assert isinstance(pool, dict)
    problems.extend(_pool_name("spec.pool.name", pool.get("name")))
    if int(pool.get("resourceSliceCount") or 0) <= 0:
        problems.append(
            f.invalid("spec.pool.resourceSliceCount", pool.get("resourceSliceCount") or 0, "must be greater than zero")
        )
    if int(pool.get("generation") or 0) < 0:
        problems.append(f.invalid("spec.pool.generation", pool.get("generation"), "must be greater than or equal to 0"))
    if old is not None:
        old_spec = _spec(old)
        old_pool = old_spec.get("pool") if isinstance(old_spec.get("pool"), dict) else {}
        assert isinstance(old_pool, dict)
        for path, new_value, old_value in (
            ("spec.pool.name", pool.get("name"), old_pool.get("name")),
            ("spec.driver", spec.get("driver"), old_spec.get("driver")),
            ("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName")),
        ):
            if new_value != old_value:
                problems.append(f.invalid(path, new_value, "field is immutable"))
    problems.extend(_node_selection(spec))
    problems.extend(_devices(spec.get("devices")))
    return problems


def _node_selection(spec: Obj) -> list[Problem]:
    set_fields: list[str] = []
    problems: list[Problem] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name:
            set_fields.append("`nodeName`")
            problems.extend(f.long_name("spec.nodeName", node_name))
        else:
            problems.append(f.invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        terms = (spec.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
        if len(terms) != 1:
            problems.append(
                f.invalid("spec.nodeSelector.nodeSelectorTerms", "<terms>", "must have exactly one node selector term")
            )
    for key in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(key) is not None:
            if spec[key] is True:
                set_fields.append(f"`{key}`")
            else:
                problems.append(f.invalid(f"spec.{key}", spec[key], "must be either unset or set to true"))
    allowed = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not set_fields:
        problems.append(r.required("spec", allowed))
    elif len(set_fields) > 1:
        problems.append(f.invalid("spec", "{" + ", ".join(set_fields) + "}", f"{allowed}, but multiple fields are set"))
    return problems


def _devices(devices: Any) -> list[Problem]:
    problems = r.too_many("spec.devices", devices, r.MAX_SLICE_DEVICES)
    seen: set[str] = set()
    for i, device in enumerate(devices if isinstance(devices, list) else ()):
        if not isinstance(device, dict):
            continue
        at = f"spec.devices[{i}]"
        name = str(device.get("name") or "")
        problems.extend([r.required(f"{at}.name")] if not name else f.short_name(f"{at}.name", name))
        if name in seen:
            problems.append((f"{at}.name", f"Duplicate value: {f.quote(name)}", "FieldValueDuplicate"))
        seen.add(name)
        attributes = device.get("attributes") or {}
        capacity = device.get("capacity") or {}
        if len(attributes) + len(capacity) > r.MAX_ATTRIBUTES:
            problems.append(
                (
                    at,
                    (
                        f"Too many: {len(attributes) + len(capacity)}: must have at most {r.MAX_ATTRIBUTES} "
                        "attributes and capacities combined"
                    ),
                    "FieldValueTooMany",
                )
            )
        for key, value in attributes.items():
            given = [k for k in VALUE_KEYS if isinstance(value, dict) and value.get(k) is not None]
            if len(given) != 1:
                problems.append(
                    f.invalid(f"{at}.attributes[{key}]", "<attribute>", "exactly one value must be specified")
                )
    return problems
