"""resource.k8s.io/v1 field rules, ported from kubernetes pkg/apis/resource/validation/validation.go (the main ones).

Contract (pure; problems are `(field path, detail, cause reason)` worded as kube-apiserver words them):
- `device_claim(path, devices)`: a DeviceClaim's requests (exactly | firstAvailable, deviceClassName, CEL selectors
  compiled and cost-limited, allocationMode), constraints and config, with the API's limits.
- `selectors(path, items)`, `driver_name(path, value)`, `extended_resource_name(path, value)`,
  `default_requests(devices)` (v1 defaults), `slice_spec(spec, old)`, `claim_status(status, old_status, spec,
  deleting)` (reservedFor at most 256 unique entries, only with an allocation; allocation immutable once set).
More: docs/modules.md#simdrarulespy.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gangsched.sim.dra.cel_check import CEL_SELECTOR_MAX_COST, CEL_SELECTOR_MAX_LENGTH, compile_selector
from gangsched.sim.scheduling import fields as f

Problem = f.Problem
MAX_REQUESTS = 32  # DeviceRequestsMaxSize
MAX_SELECTORS = 32  # DeviceSelectorsMaxSize
MAX_CONSTRAINTS = 32  # DeviceConstraintsMaxSize
MAX_CONFIG = 32  # DeviceConfigMaxSize
MAX_SUBREQUESTS = 8  # FirstAvailableDeviceRequestMaxSize
MAX_RESERVED_FOR = 256  # ResourceClaimReservedForMaxSize
MAX_RESULTS = 32  # AllocationResultsMaxSize
MAX_SLICE_DEVICES = 128  # ResourceSliceMaxDevices
MAX_ATTRIBUTES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_PARAMETERS = 10 * 1024  # OpaqueParametersMaxLength
MODES = ("All", "ExactCount")
REF_DETAIL = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
_CSI = re.compile(r"^[a-zA-Z0-9][-a-zA-Z0-9_.]{0,61}[a-zA-Z-0-9]$")
_ID = re.compile(r"^[a-zA-Z][-a-zA-Z0-9_]{0,31}$")  # a C identifier of at most 32 characters, "-" allowed


def required(path: str, detail: str = "") -> Problem:
    return (path, f"Required value: {detail}" if detail else "Required value", "FieldValueRequired")


def too_many(path: str, items: Any, limit: int) -> list[Problem]:
    if isinstance(items, list) and len(items) > limit:
        return [(path, f"Too many: {len(items)}: must have at most {limit} items", "FieldValueTooMany")]
    return []


def unique(path: str, items: Any, key: str) -> list[Problem]:
    seen: set[Any] = set()
    problems: list[Problem] = []
    for i, item in enumerate(items if isinstance(items, list) else ()):
        value = item.get(key) if isinstance(item, dict) else None
        if value in seen and value:
            problems.append((f"{path}[{i}].{key}", f"Duplicate value: {f.quote(value)}", "FieldValueDuplicate"))
        seen.add(value)
    return problems


def _dicts(items: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(i, x) for i, x in enumerate(items if isinstance(items, list) else ()) if isinstance(x, dict)]


def driver_name(path: str, value: Any) -> list[Problem]:
    """corevalidation.ValidateCSIDriverName."""
    text = str(value or "")
    if not text:
        return [required(path)]
    problems: list[Problem] = []
    if len(text) > 63:
        problems.append((path, "Too long: may not be more than 63 bytes", "FieldValueTooLong"))
    if not _CSI.match(text):
        problems.append(
            f.invalid(
                path,
                text,
                "a CSI driver name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([a-zA-Z0-9][-a-zA-Z0-9_.]{0,61}[a-zA-Z-0-9])')",
            )
        )
    return problems


def fully_qualified_name(path: str, value: Any) -> list[Problem]:
    """validateFullyQualifiedName: `<domain>/<identifier>`, the domain a DNS subdomain of at most 63 characters."""
    text = str(value or "")
    if not text:
        return [required(path)]
    domain, sep, ident = text.partition("/")
    if not sep:
        return [required(path, "a fully qualified name must be a domain and a name separated by a slash")]
    problems = f.long_name(path, domain)
    if len(domain) > 63:
        problems.append((path, "Too long: may not be more than 63 bytes", "FieldValueTooLong"))
    if not _ID.match(ident):
        problems.append(
            f.invalid(path, ident, "a valid C identifier must start with alphabetic character or '_', followed by "
                      "a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', "
                      "regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')")
        )  # fmt: skip
    return problems


def extended_resource_name(path: str, value: Any) -> list[Problem]:
    """v1helper.IsExtendedResourceName: `<domain>/<name>` outside kubernetes.io, `requests.<name>` a qualified
    name."""
    text = str(value)
    domain = text.partition("/")[0]
    native = "/" not in text or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    if native or text.startswith("requests.") or f.label_key(path, f"requests.{text}"):
        return [f.invalid(path, text, "must be a valid extended resource name")]
    return []


def selectors(path: str, items: Any) -> list[Problem]:
    problems = too_many(path, items, MAX_SELECTORS)
    for i, selector in _dicts(items):
        cel = selector.get("cel")
        at = f"{path}[{i}].cel"
        if not isinstance(cel, dict):
            problems.append(required(at))
            continue
        expression = str(cel.get("expression") or "")
        at = f"{at}.expression"
        if len(expression) > CEL_SELECTOR_MAX_LENGTH:
            problems.append(
                (at, f"Too long: may not be more than {CEL_SELECTOR_MAX_LENGTH} bytes", "FieldValueTooLong")
            )
            continue
        result = compile_selector(expression)
        if result.error is not None:
            problems.append(f.invalid(at, expression, result.error))
        elif result.max_cost > CEL_SELECTOR_MAX_COST:
            problems.append(f.forbidden(at, "too complex, exceeds cost limit"))
    return problems


def _request_body(path: str, body: dict[str, Any]) -> list[Problem]:
    """What ExactDeviceRequest and DeviceSubRequest share: class, selectors, allocation mode and count."""
    problems: list[Problem] = []
    class_name = body.get("deviceClassName")
    problems.extend(
        [required(f"{path}.deviceClassName")] if not class_name else f.long_name(f"{path}.deviceClassName", class_name)
    )
    problems.extend(selectors(f"{path}.selectors", body.get("selectors")))
    mode, count = body.get("allocationMode"), body.get("count") or 0
    if mode == "All" and count:
        problems.append(f.invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'"))
    elif mode == "ExactCount" and (not isinstance(count, int) or count <= 0):
        problems.append(f.invalid(f"{path}.count", count, "must be greater than zero"))
    elif mode not in MODES:
        problems.append(
            (
                f"{path}.allocationMode",
                f'Unsupported value: {f.quote(mode or "")}: supported values: "All", "ExactCount"',
                "FieldValueNotSupported",
            )
        )
    return problems


def request_names(devices: dict[str, Any]) -> dict[str, set[str]]:
    """gatherRequestNames: request -> its subrequest names (empty for `exactly` requests)."""
    out: dict[str, set[str]] = {}
    for _, request in _dicts(devices.get("requests")):
        subs = {str(s.get("name")) for _, s in _dicts(request.get("firstAvailable"))}
        out[str(request.get("name"))] = subs
    return out


def _ref(path: str, name: Any, names: dict[str, set[str]]) -> list[Problem]:
    parts = str(name).split("/")
    known = len(parts) <= 2 and parts[0] in names and (len(parts) == 1 or parts[1] in names[parts[0]])
    return [] if known else [f.invalid(path, name, REF_DETAIL)]


def device_claim(path: str, devices: Any) -> list[Problem]:
    """See module docstring."""
    if not isinstance(devices, dict):
        return []
    requests = devices.get("requests")
    problems = too_many(f"{path}.requests", requests, MAX_REQUESTS) + unique(f"{path}.requests", requests, "name")
    for i, request in _dicts(requests):
        at = f"{path}.requests[{i}]"
        problems.extend(
            [required(f"{at}.name")] if not request.get("name") else f.short_name(f"{at}.name", request["name"])
        )
        exactly, first = request.get("exactly"), request.get("firstAvailable")
        if exactly is None and not first:
            problems.append(required(at, "exactly one of `exactly` or `firstAvailable` is required"))
        elif exactly is not None and first:
            problems.append(
                f.invalid(
                    at, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
                )
            )
        elif first:
            sub_at = f"{at}.firstAvailable"
            problems.extend(too_many(sub_at, first, MAX_SUBREQUESTS) + unique(sub_at, first, "name"))
            for j, sub in _dicts(first):
                name = sub.get("name")
                problems.extend(
                    [required(f"{sub_at}[{j}].name")] if not name else f.short_name(f"{sub_at}[{j}].name", name)
                )
                problems.extend(_request_body(f"{sub_at}[{j}]", sub))
        elif isinstance(exactly, dict):
            problems.extend(_request_body(f"{at}.exactly", exactly))
    names = request_names(devices)
    constraints = devices.get("constraints")
    problems.extend(too_many(f"{path}.constraints", constraints, MAX_CONSTRAINTS))
    for i, constraint in _dicts(constraints):
        at = f"{path}.constraints[{i}]"
        for j, name in enumerate(constraint.get("requests") or ()):
            problems.extend(_ref(f"{at}.requests[{j}]", name, names))
        for key in ("matchAttribute", "distinctAttribute"):
            if constraint.get(key) is not None:
                problems.extend(fully_qualified_name(f"{at}.{key}", constraint[key]))
                break
        else:
            problems.append(required(f"{at}.matchAttribute"))
    config = devices.get("config")
    problems.extend(too_many(f"{path}.config", config, MAX_CONFIG))
    for i, item in _dicts(config):
        at = f"{path}.config[{i}]"
        for j, name in enumerate(item.get("requests") or ()):
            problems.extend(_ref(f"{at}.requests[{j}]", name, names))
        problems.extend(opaque(f"{at}.opaque", item.get("opaque")))
    return problems


def opaque(path: str, value: Any) -> list[Problem]:
    """validateOpaqueConfiguration: a driver name and parameters that are a JSON object of at most 10 KiB."""
    if not isinstance(value, dict):
        return [required(path)]
    problems = driver_name(f"{path}.driver", value.get("driver"))
    params = value.get("parameters")
    if params is None:
        problems.append(required(f"{path}.parameters"))
    elif not isinstance(params, dict):
        problems.append(f.invalid(f"{path}.parameters", "<value omitted>", "parameters must be a valid JSON object"))
    elif len(json.dumps(params, separators=(",", ":"))) > MAX_PARAMETERS:
        problems.append(
            (f"{path}.parameters", f"Too long: may not be more than {MAX_PARAMETERS} bytes", "FieldValueTooLong")
        )
    return problems


def default_requests(devices: Any) -> None:
    """pkg/apis/resource/v1 defaults: allocationMode ExactCount and then count 1, for exact requests and
    subrequests."""
    if not isinstance(devices, dict):
        return
    for _, request in _dicts(devices.get("requests")):
        bodies = [request["exactly"]] if isinstance(request.get("exactly"), dict) else []
        bodies += [s for _, s in _dicts(request.get("firstAvailable"))]
        for body in bodies:
            body.setdefault("allocationMode", "ExactCount")
            if body["allocationMode"] == "ExactCount" and not body.get("count"):
                body["count"] = 1
