"""Discovery documents and OpenAPI documents of the emulator (pure: dicts in, dicts out; apiserver.py serves them).

Contract:
- `api_versions(...)`, `api_group_list(types)`, `api_resource_list(types, group, version)`: the bodies of
  `GET /api`, `GET /apis` (preferred version by Kubernetes version priority) and a group-version's resource list
  (with the subresources each type declares).
- `openapi_v3_root(types)` (each group-version's document under a hash of it, which kubectl caches by),
  `openapi_v3_group_doc(types, group, version)` and `group_doc_hash(...)`: built-in kinds carry the real v1.37
  definitions (validation/schemas.py), CRDs their openAPIV3Schema; PATCH offers `fieldValidation` and no
  strategic-merge media type, so kubectl validates server-side and diffs from its own types.
- `openapi_v2_protobuf()` / `openapi_v2_json()`: GET /openapi/v2, a synthesized empty document.
More: docs/modules.md#simopenapipy.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from gangsched.sim.types import ResourceType
from gangsched.sim.validation import schemas

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")

# scale and other subresources: (kind, group, version, verbs) of their discovery entries
_SUBRESOURCE_ENTRIES: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "status": ("", "", "", ("get", "patch", "update")),
    "binding": ("Binding", "", "", ("create",)),
    "eviction": ("Eviction", "policy", "v1", ("create",)),
    "scale": ("Scale", "autoscaling", "v1", ("get", "patch", "update")),
    "token": ("TokenRequest", "authentication.k8s.io", "v1", ("create",)),
}

_PATCH_MEDIA_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes version names: GA before beta before alpha, higher numbers first, others last."""
    match = _VERSION_RE.match(version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, "")


def api_versions(*, server_address: str = "127.0.0.1:6443") -> dict[str, Any]:
    """The body of GET /api."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_versions(types: Iterable[ResourceType]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rtype in types:
        if not rtype.group:
            continue
        versions = groups.setdefault(rtype.group, [])
        if rtype.version not in versions:
            versions.append(rtype.version)
    for versions in groups.values():
        versions.sort(key=version_priority)
    return groups


def api_group_list(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The body of GET /apis."""
    groups = []
    for name, versions in _group_versions(types).items():
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _resource_entry(rtype: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    entry["storageVersionHash"] = _short_hash(f"{rtype.group}/{rtype.version}/{rtype.kind}")
    return entry


def _subresource_entry(rtype: ResourceType, sub: str) -> dict[str, Any]:
    kind, group, version, verbs = _SUBRESOURCE_ENTRIES.get(sub, ("", "", "", ("get",)))
    entry: dict[str, Any] = {
        "name": f"{rtype.plural}/{sub}",
        "singularName": "",
        "namespaced": rtype.namespaced,
        "kind": kind or rtype.kind,
        "verbs": list(verbs),
    }
    if group:
        entry["group"] = group
        entry["version"] = version
    return entry


def api_resource_list(types: Iterable[ResourceType], group: str, version: str) -> dict[str, Any]:
    """The body of GET /api/v1 (group "") or GET /apis/{group}/{version}."""
    resources: list[dict[str, Any]] = []
    for rtype in types:
        if rtype.group != group or rtype.version != version:
            continue
        resources.append(_resource_entry(rtype))
        for sub in sorted(rtype.subresources):
            resources.append(_subresource_entry(rtype, sub))
    group_version = version if not group else f"{group}/{version}"
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def gv_path(group: str, version: str) -> str:
    """The key of a group-version in the OpenAPI v3 root: "api/v1" or "apis/{group}/{version}"."""
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def schema_name(rtype: ResourceType) -> str:
    """The components.schemas name of a kind, as a real server names it (io.k8s.api.core.v1.Pod, ...)."""
    if not rtype.is_crd:
        real = schemas.definition_name(rtype.group, rtype.version, rtype.kind)
        if real is not None:
            return real
    if rtype.is_crd:
        prefix = ".".join(reversed(rtype.group.split(".")))
    elif not rtype.group:
        prefix = "io.k8s.api.core"
    elif rtype.group == "apiextensions.k8s.io":
        prefix = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"
    else:
        prefix = "io.k8s.api." + rtype.group.split(".")[0]
    return f"{prefix}.{rtype.version}.{rtype.kind}"


def _gvk(rtype: ResourceType) -> dict[str, str]:
    return {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}


def _convert(node: Any) -> Any:
    """A kubernetes-validate JSON Schema node as an OpenAPI v3 schema: `#/$defs/X` -> `#/components/schemas/X`,
    `type: [T, "null"]` -> `type: T`."""
    if isinstance(node, list):
        return [_convert(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = "#/components/schemas/" + schemas.ref_name(value)
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if types:
                out[key] = types[0]
        else:
            out[key] = _convert(value)
    return out


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(schemas.ref_name(value))
            else:
                _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _builtin_definitions(rtype: ResourceType) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the kind's schema, the definitions it references transitively), from the real v1.37 definitions.
    Cached per kind: callers must not mutate what they get."""
    if rtype.is_crd:
        return None
    return _builtin_definitions_of(rtype.group, rtype.version, rtype.kind)


@functools.cache
def _builtin_definitions_of(group: str, version: str, kind: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    name = schemas.definition_name(group, version, kind)
    if name is None:
        return None
    defs = schemas.definitions()
    root = _convert(defs[name])
    for key in ("apiVersion", "kind"):  # kubernetes-validate pins them with an enum; a real document does not
        prop = (root.get("properties") or {}).get(key)
        if isinstance(prop, dict):
            prop.pop("enum", None)
    found: set[str] = set()
    _refs(defs[name], found)
    seen: dict[str, Any] = {}
    while found:
        ref = found.pop()
        if ref in seen or ref not in defs:
            continue
        seen[ref] = _convert(defs[ref])
        _refs(defs[ref], found)
    return root, seen


def _kind_schema(rtype: ResourceType) -> dict[str, Any]:
    real = _builtin_definitions(rtype) if rtype.schema is None else None
    if rtype.schema is not None:
        schema = copy.deepcopy(rtype.schema)
    elif real is not None:
        schema = dict(real[0])  # shallow: only the top-level tag below is added
    else:
        schema = {
            "type": "object",
            "description": f"{rtype.kind} is a built-in kind served by the gangsched emulator.",
            "properties": {
                "apiVersion": {
                    "type": "string",
                    "description": "APIVersion defines the versioned schema of this object.",
                },
                "kind": {"type": "string", "description": "Kind is a string value representing the REST resource."},
                "metadata": {
                    "type": "object",
                    "description": "Standard object's metadata.",
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "x-kubernetes-preserve-unknown-fields": True,
        }
    schema["x-kubernetes-group-version-kind"] = [_gvk(rtype)]
    return schema


def _param(name: str, description: str, *, where: str = "query", required: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "description": description,
        "required": required,
        "schema": {"type": "string", "uniqueItems": True},
    }


def _operation(
    rtype: ResourceType, verb: str, action: str, ref: str, *, body_types: tuple[str, ...] = ()
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "description": f"{verb} {rtype.kind}",
        "operationId": f"{verb}{rtype.kind}",
        "tags": [rtype.group or "core"],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rtype),
    }
    if body_types:
        op["requestBody"] = {"content": {t: {"schema": {"type": "object"}} for t in body_types}, "required": True}
    if action in ("put", "patch", "post"):
        op["parameters"] = [
            _param("dryRun", "When present, modifications are not persisted."),
            _param("fieldManager", "A name of the actor making these changes."),
            _param("fieldValidation", "How the server handles unknown or duplicate fields: Ignore, Warn or Strict."),
        ]
        if action == "patch":
            op["parameters"].append(_param("force", "Force is going to force Apply requests."))
    return op


def _paths_for(rtype: ResourceType) -> dict[str, Any]:
    base = f"/{gv_path(rtype.group, rtype.version)}"
    if rtype.namespaced:
        base += "/namespaces/{namespace}"
    collection = f"{base}/{rtype.plural}"
    item = f"{collection}/{{name}}"
    ref = f"#/components/schemas/{schema_name(rtype)}"
    path_params = [_param("name", f"name of the {rtype.kind}", where="path", required=True)]
    coll_params: list[dict[str, Any]] = []
    if rtype.namespaced:
        ns = _param("namespace", "object name and auth scope", where="path", required=True)
        path_params.append(ns)
        coll_params.append(ns)
    return {
        item: {
            "get": _operation(rtype, "read", "get", ref),
            "put": _operation(rtype, "replace", "put", ref, body_types=("application/json",)),
            "patch": _operation(rtype, "patch", "patch", ref, body_types=_PATCH_MEDIA_TYPES),
            "delete": _operation(rtype, "delete", "delete", ref),
            "parameters": path_params,
        },
        collection: {
            "get": _operation(rtype, "list", "list", ref),
            "post": _operation(rtype, "create", "post", ref, body_types=("application/json",)),
            "parameters": coll_params,
        },
    }


def openapi_v3_group_doc(types: Iterable[ResourceType], group: str, version: str) -> dict[str, Any]:
    """The OpenAPI v3 document of one group-version (see module docstring)."""
    paths: dict[str, Any] = {}
    component_schemas: dict[str, Any] = {}
    for rtype in types:
        if rtype.group != group or rtype.version != version:
            continue
        paths.update(_paths_for(rtype))
        component_schemas[schema_name(rtype)] = _kind_schema(rtype)
        real = _builtin_definitions(rtype) if rtype.schema is None else None
        if real is not None:
            for ref, definition in real[1].items():
                component_schemas.setdefault(ref, definition)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"{schemas.K8S_VERSION}-gangsched-sim"},
        "paths": paths,
        "components": {"schemas": component_schemas},
    }


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_BUILTIN_HASHES: dict[tuple[Any, ...], str] = {}


def group_doc_hash(types: Iterable[ResourceType], group: str, version: str) -> str:
    """A hash of one group-version's document: changes when its kinds or their schemas change. Memoized for
    group-versions of built-in kinds only (their documents change only with the set of kinds)."""
    members = [t for t in types if t.group == group and t.version == version]
    key: tuple[Any, ...] | None = None
    if members and not any(t.is_crd for t in members):
        key = (group, version, *sorted(t.plural for t in members))
        found = _BUILTIN_HASHES.get(key)
        if found is not None:
            return found
    doc = openapi_v3_group_doc(members, group, version)
    digest = hashlib.sha512(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:64].upper()
    if key is not None:
        _BUILTIN_HASHES[key] = digest
    return digest


def openapi_v3_root(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The body of GET /openapi/v3 (see module docstring)."""
    all_types = list(types)
    gvs: list[tuple[str, str]] = []
    for rtype in all_types:
        if (rtype.group, rtype.version) not in gvs:
            gvs.append((rtype.group, rtype.version))
    paths = {}
    for group, version in gvs:
        key = gv_path(group, version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={group_doc_hash(all_types, group, version)}"}
    return {"paths": paths}


# ---------------------------------------------------------------------------------------------- OpenAPI v2
OPENAPI_V2_PROTOBUF_RESPONSE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _pb_string(number: int, text: str) -> bytes:
    data = text.encode()
    return bytes([number << 3 | 2, len(data)]) + data


def openapi_v2_protobuf() -> bytes:
    """The body of GET /openapi/v2 as kubectl requests it (gnostic openapi_v2.Document protobuf, see
    github.com/google/gnostic-models openapiv2/OpenAPIv2.proto: swagger = 1, info = 2 {title = 1, version = 2}).

    Synthesized and deliberately empty: no paths and no definitions. kubectl 1.32 reads /openapi/v2 only where
    /openapi/v3 cannot answer, e.g. to validate a `kind: List` client-side (k8s.io/kubectl/pkg/validation:
    paramVerifyingSchema falls back to the v2 schema because no v3 document has a v1/List); with no definitions
    it validates nothing there and each item is validated by this server (fieldValidation=Strict). For patches
    kubectl then uses its compiled-in types, as with an older server."""
    info = _pb_string(1, "Kubernetes") + _pb_string(2, schemas.K8S_VERSION)
    return _pb_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info


def openapi_v2_json() -> dict[str, Any]:
    """The JSON form of the same (empty) document."""
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": schemas.K8S_VERSION},
        "paths": {},
        "definitions": {},
    }
