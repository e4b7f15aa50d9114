"""What the emulator's API means, independent of HTTP: the kinds served and the semantics of every verb.

Contract:
- `Registry(store)` serves the built-in kinds (builtin.py) and, once a CustomResourceDefinition is created, one
  ResourceType per served version of it; deleting the CRD stops serving it and drops its objects.
- Verbs (`create`, `update`, `patch`, `delete`, `list_entries`, `bind`, `evict`) take a ResourceType, a
  namespace ("" for cluster-scoped kinds) and a `RequestContext` (dryRun, fieldValidation, warnings out), and
  return stored `Entry`s (dicts plus their JSON bytes) or plain dicts; failures raise status.ApiError with
  kube-apiserver's codes, reasons and messages.
- Semantics: uid, creationTimestamp, generation (bumped when anything outside metadata, and outside status for
  kinds with a status subresource, changes), one global resourceVersion, optimistic concurrency (stale
  metadata.resourceVersion -> 409), no-op writes do not bump the resourceVersion, status subresource separation,
  finalizers and deletionTimestamp, ownerReference garbage collection (scheduled on the event loop right after
  the delete), pod admission (defaults, priority from PriorityClass), pods/binding, pods/eviction with
  PodDisruptionBudgets, CRD schema validation/pruning/defaulting through schema.py.
- Everything is synchronous: one verb is atomic with respect to the event loop.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import math
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gangsched.sim import patch as patching
from gangsched.sim import status as st
from gangsched.sim.builtin import BUILTIN_TYPES, CRD_TYPE, crd_storage_version, crd_types, validate_crd
from gangsched.sim.selectors import FieldSelector, LabelSelector, SelectorError, selector_from_object
from gangsched.sim.store import Entry, StorageKey, Store
from gangsched.sim.types import ResourceType

try:  # E2's structural-schema module
    from gangsched.sim import schema as schema_mod
except ImportError:  # pragma: no cover - wiring point while it does not exist
    schema_mod = None  # type: ignore[assignment]

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_PRIORITY_CLASSES = (("system-node-critical", 2000001000), ("system-cluster-critical", 2000000000))
DEFAULT_SCHEDULER = "default-scheduler"

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_PATCH]

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


def timestamp(now: datetime.datetime) -> str:
    return now.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RequestContext:
    dry_run: bool = False
    field_validation: str = "Warn"  # Strict | Warn | Ignore
    warnings: list[str] = field(default_factory=list)


def storage_key(rtype: ResourceType) -> StorageKey:
    return (rtype.group, rtype.plural)


class Registry:
    """See module docstring."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime.datetime] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.clock = clock or (lambda: datetime.datetime.now(datetime.timezone.utc))
        self.rng = rng or random.Random()
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        self._by_storage: dict[StorageKey, ResourceType] = {}
        self._crd_keys: dict[str, list[ResourceType]] = {}
        self.listeners: list[Callable[[], None]] = []  # called when the set of served types changes
        for rtype in BUILTIN_TYPES:
            self._serve(rtype)
        ctx = RequestContext()
        ns_type = self.resolve("", "v1", "namespaces")
        pc_type = self.resolve("scheduling.k8s.io", "v1", "priorityclasses")
        assert ns_type and pc_type
        for ns in INITIAL_NAMESPACES:
            self.create(ns_type, "", {"metadata": {"name": ns}}, ctx)
        for name, value in SYSTEM_PRIORITY_CLASSES:
            self.create(pc_type, "", {"metadata": {"name": name}, "value": value, "description": "system"}, ctx)

    # ------------------------------------------------------------------ types
    def _serve(self, rtype: ResourceType) -> None:
        self.types[rtype.key] = rtype
        self._by_storage.setdefault(storage_key(rtype), rtype)

    def resolve(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.types.get((group, version, plural))

    def served_types(self) -> list[ResourceType]:
        return list(self.types.values())

    def _types_changed(self) -> None:
        for listener in self.listeners:
            listener()

    # ------------------------------------------------------------------ helpers
    def _now(self) -> str:
        return timestamp(self.clock())

    def _namespace_exists(self, namespace: str) -> bool:
        return self.store.get(("", "namespaces"), "", namespace) is not None

    def _check_namespace(self, rtype: ResourceType, namespace: str) -> None:
        if rtype.namespaced and not self._namespace_exists(namespace):
            ns_type = self.types[("", "v1", "namespaces")]
            raise st.not_found(ns_type, namespace)

    @staticmethod
    def _content(obj: dict[str, Any], rtype: ResourceType) -> dict[str, Any]:
        skip = ("metadata", "status") if "status" in rtype.subresources else ("metadata",)
        return {k: v for k, v in obj.items() if k not in skip and k not in ("apiVersion", "kind")}

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Entry:
        entry = self.store.get(storage_key(rtype), namespace if rtype.namespaced else "", name)
        if entry is None:
            raise st.not_found(rtype, name)
        return entry

    def _validate_custom(self, rtype: ResourceType, obj: dict[str, Any], name: str, ctx: RequestContext) -> None:
        """CRD objects: unknown fields (Strict -> 400, else pruned), defaults, schema violations -> 422."""
        if rtype.schema is None or schema_mod is None:
            return
        unknown = [e for e in schema_mod.validate(obj, rtype.schema, strict=True) if e.kind == "unknown"]
        if unknown:
            if ctx.field_validation == "Strict":
                raise st.bad_request("strict decoding error: " + ", ".join(f'unknown field "{e.path}"' for e in unknown))
            if ctx.field_validation == "Warn":
                ctx.warnings.extend(f'unknown field "{e.path}"' for e in unknown)
        schema_mod.prune_unknown(obj, rtype.schema)
        schema_mod.apply_defaults(obj, rtype.schema)
        errors = schema_mod.validate(obj, rtype.schema, strict=False)
        if errors:
            raise st.invalid(rtype, name, [(e.path, e.detail, e.reason) for e in errors])

    # ------------------------------------------------------------------ create
    def create(self, rtype: ResourceType, namespace: str, body: Any, ctx: RequestContext) -> Entry:
        if not isinstance(body, dict):
            raise st.bad_request(f"the body of a create must be a JSON object, got {type(body).__name__}")
        obj = body
        self._check_kind(rtype, obj)
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        if rtype.namespaced:
            given = meta.get("namespace")
            if given and given != namespace:
                raise st.bad_request(
                    f"the namespace of the provided object ({given}) does not match the namespace sent on the request ({namespace})"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        name = meta.get("name")
        if not name:
            prefix = meta.get("generateName")
            if not prefix:
                raise st.invalid(rtype, "", [("metadata.name", "Required value: name or generateName is required", "FieldValueRequired")])
            for _ in range(16):
                name = prefix + "".join(self.rng.choice(_GEN_CHARS) for _ in range(5))
                if self.store.get(storage_key(rtype), namespace, name) is None:
                    break
            meta["name"] = name
        if rtype.group == "rbac.authorization.k8s.io":
            # RBAC objects' names are path segments (pkg/apis/rbac/validation: ValidateRBACName), e.g. "system:discovery"
            if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "%" in name:
                raise st.invalid(rtype, str(name), [("metadata.name", f'Invalid value: "{name}": may not contain \'/\' or \'%\'')])
        elif not isinstance(name, str) or len(name) > 253 or not _NAME_RE.match(name):
            raise st.invalid(rtype, str(name), [(
                "metadata.name", f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")])
        self._check_namespace(rtype, namespace)
        skey = storage_key(rtype)
        if self.store.get(skey, namespace if rtype.namespaced else "", name) is not None:
            raise st.already_exists(rtype, name)
        if "status" in rtype.subresources and rtype.kind not in ("Node", "Pod"):
            obj.pop("status", None)
        self._admit_create(rtype, obj, name, ctx)
        self._validate_custom(rtype, obj, name, ctx)
        for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(key, None)
        meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = self._now()
        meta["generation"] = 1
        obj["apiVersion"] = rtype.group_version
        obj["kind"] = rtype.kind
        if ctx.dry_run:
            return Entry.of(obj)
        entry = self.store.put(skey, obj, previous=None)
        if rtype is CRD_TYPE or rtype.key == CRD_TYPE.key:
            self._register_crd(obj)
        return entry

    def _check_kind(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        if kind and kind != rtype.kind:
            raise st.bad_request(f"the kind of the body ({kind}) does not match the resource {rtype.plural} ({rtype.kind})")
        api_version = obj.get("apiVersion")
        if api_version and api_version != rtype.group_version:
            raise st.bad_request(
                f"the apiVersion of the body ({api_version}) does not match the request ({rtype.group_version})"
            )

    def _admit_create(self, rtype: ResourceType, obj: dict[str, Any], name: str, ctx: RequestContext) -> None:
        kind = (rtype.group, rtype.kind)
        if kind == ("", "Pod"):
            self._admit_pod(rtype, obj, name)
        elif kind == ("", "Namespace"):
            obj["status"] = {"phase": "Active"}
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        elif kind == ("scheduling.k8s.io", "PriorityClass"):
            self._admit_priority_class(rtype, obj, name)
        elif kind == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            problems = validate_crd(obj)
            if problems:
                raise st.invalid(rtype, name, problems)
            spec = obj["spec"]
            names = spec["names"]
            names.setdefault("singular", str(names["kind"]).lower())
            names.setdefault("listKind", f"{names['kind']}List")
            obj["status"] = {
                "acceptedNames": dict(names),
                "storedVersions": [crd_storage_version(obj)],
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found", "lastTransitionTime": self._now()},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted", "lastTransitionTime": self._now()},
                ],
            }
        elif kind == ("policy", "PodDisruptionBudget"):
            spec = obj.get("spec") or {}
            if "minAvailable" in spec and "maxUnavailable" in spec:
                raise st.invalid(rtype, name, [("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set")])
            obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}

    def _admit_pod(self, rtype: ResourceType, obj: dict[str, Any], name: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            raise st.invalid(rtype, name, [("spec", "Required value", "FieldValueRequired")])
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            raise st.invalid(rtype, name, [("spec.containers", "Required value", "FieldValueRequired")])
        problems: list[tuple[str, str, str]] = []
        for i, c in enumerate(containers):
            if not isinstance(c, dict) or not c.get("name"):
                problems.append((f"spec.containers[{i}].name", "Required value", "FieldValueRequired"))
            elif not c.get("image"):
                problems.append((f"spec.containers[{i}].image", "Required value", "FieldValueRequired"))
        if problems:
            raise st.invalid(rtype, name, problems)
        spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        pc_name = spec.get("priorityClassName")
        pc_type = self.types[("scheduling.k8s.io", "v1", "priorityclasses")]
        pc: dict[str, Any] | None = None
        if pc_name:
            found = self.store.get(storage_key(pc_type), "", pc_name)
            if found is None:
                raise st.forbidden(rtype, name, f"no PriorityClass with name {pc_name} was found")
            pc = found.obj
        else:
            for entry in self.store.table(storage_key(pc_type)).values():
                if entry.obj.get("globalDefault"):
                    pc = entry.obj
                    spec["priorityClassName"] = entry.obj["metadata"]["name"]
                    break
        value = int(pc.get("value", 0)) if pc else 0
        given = spec.get("priority")
        if given is not None and given != value:
            raise st.forbidden(
                rtype, name,
                f"the integer value of priority ({given}) must not be provided in pod spec; priority admission "
                f"controller computed {value} from the given PriorityClass name",
            )
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority")
        given_status = obj.get("status")
        status: dict[str, Any] = given_status if isinstance(given_status, dict) else {}
        obj["status"] = {"phase": "Pending", **({"qosClass": status["qosClass"]} if "qosClass" in status else {})}

    def _admit_priority_class(self, rtype: ResourceType, obj: dict[str, Any], name: str) -> None:
        value = obj.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise st.invalid(rtype, name, [("value", f"Invalid value: {value!r}: must be an integer", "FieldValueInvalid")])
        policy = obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        if policy not in ("PreemptLowerPriority", "Never"):
            raise st.invalid(rtype, name, [(
                "preemptionPolicy", f'Unsupported value: "{policy}": supported values: "Never", "PreemptLowerPriority"',
                "FieldValueNotSupported")])
        if obj.get("globalDefault"):
            for entry in self.store.table(storage_key(rtype)).values():
                other = entry.obj
                if other.get("globalDefault") and other["metadata"]["name"] != name:
                    raise st.invalid(rtype, name, [(
                        "globalDefault",
                        f"Invalid value: true: PriorityClass {other['metadata']['name']} is already marked as default. "
                        "Only one default can exist")])

    # ------------------------------------------------------------------ CRDs
    def _register_crd(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        self._unregister_crd(name, drop=False)
        new_types = crd_types(crd)
        for rtype in new_types:
            self._serve(rtype)
            self._by_storage[storage_key(rtype)] = rtype
        self._crd_keys[name] = new_types
        self._types_changed()

    def _unregister_crd(self, name: str, *, drop: bool) -> None:
        old = self._crd_keys.pop(name, [])
        for rtype in old:
            self.types.pop(rtype.key, None)
        if drop and old:
            skey = storage_key(old[0])
            self._by_storage.pop(skey, None)
            self.store.drop_storage(skey)
        if old:
            self._types_changed()

    # ------------------------------------------------------------------ list
    def list_entries(
        self,
        rtype: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int | None,
        continue_token: str | None,
    ) -> tuple[list[Entry], str, str | None, int | None]:
        """(entries, list resourceVersion, continue token or None, remainingItemCount or None)."""
        skey = storage_key(rtype)
        ns = namespace if rtype.namespaced else None
        list_rv = self.store.rv
        start: tuple[str, str] | None = None
        if continue_token:
            try:
                decoded = orjson.loads(base64.urlsafe_b64decode(continue_token.encode()))
                list_rv = int(decoded["rv"])
                start = (str(decoded["start"][0]), str(decoded["start"][1]))
            except Exception as exc:
                raise st.bad_request(f"continue key is not valid: {continue_token!r} ({exc})") from None
        name = fields.exact_name()
        if name is not None:
            found = self.store.get(skey, ns or "", name) if (ns is not None or not rtype.namespaced) else None
            candidates = [found] if found is not None else []
            if found is None and ns is None and rtype.namespaced:
                candidates = [e for e in self.store.entries(skey, None) if e.obj["metadata"]["name"] == name]
        else:
            candidates = self.store.entries(skey, ns)
        if start is not None:
            candidates = [e for e in candidates if _okey(e) > start]
        if not labels.empty or fields.requirements:
            candidates = [e for e in candidates if labels.matches(e.obj) and fields.matches(e.obj)]
        if limit and limit > 0 and len(candidates) > limit:
            page = candidates[:limit]
            last = _okey(page[-1])
            token = base64.urlsafe_b64encode(orjson.dumps({"rv": list_rv, "start": list(last)})).decode()
            return page, str(list_rv), token, len(candidates) - limit
        return candidates, str(list_rv), None, None

    # ------------------------------------------------------------------ update / patch
    def update(
        self, rtype: ResourceType, namespace: str, name: str, body: Any, ctx: RequestContext, *, subresource: str | None = None
    ) -> Entry:
        if not isinstance(body, dict):
            raise st.bad_request(f"the body of an update must be a JSON object, got {type(body).__name__}")
        current = self.get(rtype, namespace, name)
        self._check_kind(rtype, body)
        given = (body.get("metadata") or {}).get("name")
        if given is not None and given != name:
            raise st.bad_request(f"the name of the object ({given}) does not match the name on the URL ({name})")
        return self._commit(rtype, current, body, ctx, subresource=subresource)

    def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        content_type: str,
        ctx: RequestContext,
        *,
        subresource: str | None = None,
    ) -> Entry:
        ns = namespace if rtype.namespaced else ""
        current = self.store.get(storage_key(rtype), ns, name)
        if content_type == APPLY_PATCH:
            if not isinstance(body, dict):
                raise st.bad_request("an apply patch must be a YAML or JSON object")
            if current is None:
                if subresource:
                    raise st.not_found(rtype, name)
                body.setdefault("metadata", {})["name"] = name
                return self.create(rtype, ns, body, ctx)
            merge = patching.merge_patch if rtype.is_crd else patching.strategic_merge_patch
            try:
                result = merge(current.copy(), body)
            except patching.PatchError as exc:
                raise st.bad_request(str(exc)) from None
            return self._commit(rtype, current, result, ctx, subresource=subresource)
        if current is None:
            raise st.not_found(rtype, name)
        try:
            if content_type == MERGE_PATCH:
                if not isinstance(body, dict):
                    raise st.bad_request("a merge patch must be a JSON object")
                result = patching.merge_patch(current.copy(), body)
            elif content_type == JSON_PATCH:
                result = patching.json_patch(current.copy(), body)
            elif content_type == STRATEGIC_PATCH:
                if rtype.is_crd:
                    raise st.unsupported_media_type(content_type, [JSON_PATCH, MERGE_PATCH, APPLY_PATCH])
                if not isinstance(body, dict):
                    raise st.bad_request("a strategic merge patch must be a JSON object")
                result = patching.strategic_merge_patch(current.copy(), body)
            else:
                raise st.unsupported_media_type(content_type, PATCH_TYPES)
        except patching.PatchTestFailed as exc:
            raise st.invalid(rtype, name, [("", str(exc))]) from None
        except patching.PatchError as exc:
            raise st.ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}",
                              name=name, rtype=rtype) from None
        if not isinstance(result, dict):
            raise st.bad_request("the patched object is not a JSON object")
        return self._commit(rtype, current, result, ctx, subresource=subresource)

    def _commit(
        self, rtype: ResourceType, current: Entry, new: dict[str, Any], ctx: RequestContext, *, subresource: str | None
    ) -> Entry:
        cur = current.obj
        cur_meta = cur["metadata"]
        name = cur_meta["name"]
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and str(rv) != cur_meta["resourceVersion"]:
            raise st.stale(rtype, name)
        if subresource == "status":
            result = current.copy()
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            if rtype.is_crd and rtype.schema is not None:
                self._validate_custom(rtype, result, name, ctx)
        else:
            result = new
            for key in _IMMUTABLE_META:
                if key in cur_meta:
                    meta[key] = cur_meta[key]
                else:
                    meta.pop(key, None)
            meta["name"] = name
            if rtype.namespaced:
                meta["namespace"] = cur_meta["namespace"]
            else:
                meta.pop("namespace", None)
            meta.pop("managedFields", None)
            if "status" in rtype.subresources:
                if "status" in cur:
                    result["status"] = cur["status"]
                else:
                    result.pop("status", None)
            result["apiVersion"] = rtype.group_version
            result["kind"] = rtype.kind
            self._admit_update(rtype, cur, result, name)
            self._validate_custom(rtype, result, name, ctx)
            if self._content(result, rtype) != self._content(cur, rtype):
                meta["generation"] = int(cur_meta.get("generation", 1)) + 1
        result["metadata"]["resourceVersion"] = cur_meta["resourceVersion"]
        if result == cur:
            return current  # a no-op write does not bump the resourceVersion
        if ctx.dry_run:
            return Entry.of(result)
        if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers"):
            return self._remove(rtype, current, orphan=False)
        entry = self.store.put(storage_key(rtype), result, previous=current)
        if rtype.key == CRD_TYPE.key:
            self._register_crd(result)
        return entry

    def _admit_update(self, rtype: ResourceType, cur: dict[str, Any], new: dict[str, Any], name: str) -> None:
        if (rtype.group, rtype.kind) == ("", "Pod"):
            old_spec = cur.get("spec") or {}
            spec = new.get("spec")
            if not isinstance(spec, dict):
                raise st.invalid(rtype, name, [("spec", "Required value", "FieldValueRequired")])
            for key in ("nodeName", "priority", "schedulerName", "priorityClassName", "preemptionPolicy"):
                if old_spec.get(key) is None or spec.get(key) == old_spec.get(key):
                    continue
                if spec.get(key) is None:
                    spec[key] = old_spec[key]  # omitted in the update: kept, like defaults
                else:
                    raise st.invalid(rtype, name, [(
                        f"spec.{key}", f"Forbidden: pod updates may not change fields other than mutable ones",
                        "FieldValueForbidden")])
        elif (rtype.group, rtype.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            problems = validate_crd(new)
            if problems:
                raise st.invalid(rtype, name, problems)

    # ------------------------------------------------------------------ delete
    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        ctx: RequestContext,
        *,
        options: dict[str, Any] | None = None,
    ) -> Entry:
        current = self.get(rtype, namespace, name)
        opts = options or {}
        pre = opts.get("preconditions") or {}
        meta = current.obj["metadata"]
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise st.conflict(rtype, name, f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise st.conflict(rtype, name, f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                              f"ResourceVersion in object meta: {meta.get('resourceVersion')}")
        if ctx.dry_run:
            return current
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return current
            obj = current.copy()
            obj["metadata"]["deletionTimestamp"] = self._now()
            grace = opts.get("gracePeriodSeconds")
            obj["metadata"]["deletionGracePeriodSeconds"] = int(grace) if isinstance(grace, int) else 0
            return self.store.put(storage_key(rtype), obj, previous=current)
        if opts.get("propagationPolicy") == "Foreground" and meta.get("uid") in self.store.dependents:
            self._collect(meta["uid"], deleted_owner=meta["uid"], foreground=True)
        return self._remove(rtype, current, orphan=opts.get("propagationPolicy") == "Orphan")

    def _remove(self, rtype: ResourceType, current: Entry, *, orphan: bool) -> Entry:
        meta = current.obj["metadata"]
        ns = meta.get("namespace") or ""
        removed = self.store.remove(storage_key(rtype), ns, meta["name"])
        assert removed is not None
        if rtype.key == CRD_TYPE.key:
            self._unregister_crd(meta["name"], drop=True)
        elif (rtype.group, rtype.kind) == ("", "Namespace"):
            self._empty_namespace(meta["name"])
        uid = meta.get("uid")
        if uid and not orphan and uid in self.store.dependents:
            self._schedule(lambda: self._collect(uid))
        return removed

    def _empty_namespace(self, namespace: str) -> None:
        for rtype in list(self._by_storage.values()):
            if not rtype.namespaced:
                continue
            for entry in self.store.entries(storage_key(rtype), namespace):
                self.store.remove(storage_key(rtype), namespace, entry.obj["metadata"]["name"])

    @staticmethod
    def _schedule(fn: Callable[[], None]) -> None:
        try:
            asyncio.get_running_loop().call_soon(fn)
        except RuntimeError:
            fn()

    def _collect(self, owner_uid: str, *, deleted_owner: str | None = None, foreground: bool = False) -> None:
        """Garbage collection: delete dependents of a deleted owner whose owners are all gone (or being deleted:
        `deleted_owner`, for foreground deletion, which deletes dependents before their owner, synchronously)."""
        for skey, (ns, name) in list(self.store.dependents.get(owner_uid, ())):
            entry = self.store.get(skey, ns, name)
            rtype = self._by_storage.get(skey)
            if entry is None or rtype is None:
                continue
            owners = [r.get("uid") for r in entry.obj["metadata"].get("ownerReferences") or []]
            if all(o not in self.store.uids or o == deleted_owner for o in owners):
                policy = "Foreground" if foreground else "Background"
                try:
                    self.delete(rtype, ns, name, RequestContext(), options={"propagationPolicy": policy})
                except st.ApiError:
                    pass

    # ------------------------------------------------------------------ pods/binding, pods/eviction
    def bind(self, rtype: ResourceType, namespace: str, name: str, body: Any) -> dict[str, Any]:
        target = ((body or {}).get("target") or {}).get("name") if isinstance(body, dict) else None
        if not target:
            raise st.invalid(rtype, name, [("target.name", "Required value", "FieldValueRequired")])
        current = self.get(rtype, namespace, name)
        spec = current.obj.get("spec") or {}
        if spec.get("nodeName"):
            raise st.ApiError(
                409, "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{spec["nodeName"]}"',
                name=name, rtype=rtype,
            )
        if current.obj["metadata"].get("deletionTimestamp"):
            raise st.ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is being deleted',
                              name=name, rtype=rtype)
        obj = current.copy()
        obj["spec"]["nodeName"] = target
        status = obj.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": self._now()})
        status["conditions"] = conditions
        status.pop("nominatedNodeName", None)
        self.store.put(storage_key(rtype), obj, previous=current)
        return st.success(code=201)

    def evict(self, rtype: ResourceType, namespace: str, name: str, body: Any, ctx: RequestContext) -> dict[str, Any]:
        current = self.get(rtype, namespace, name)
        pod = current.obj
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running" and _healthy(pod):
            pdb_type = self.types[("policy", "v1", "poddisruptionbudgets")]
            pods = [e.obj for e in self.store.entries(storage_key(rtype), namespace)]
            matching = []
            for entry in self.store.entries(storage_key(pdb_type), namespace):
                try:
                    sel = selector_from_object((entry.obj.get("spec") or {}).get("selector"))
                except SelectorError:
                    continue
                if sel.matches(pod):
                    matching.append((entry.obj, sel))
            if len(matching) > 1:
                raise st.ApiError(500, "InternalError", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
            if matching:
                pdb, sel = matching[0]
                selected = [p for p in pods if sel.matches(p) and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                            and not p["metadata"].get("deletionTimestamp")]
                expected = len(selected)
                healthy = sum(1 for p in selected if (p.get("status") or {}).get("phase") == "Running" and _healthy(p))
                desired = _desired_healthy(pdb.get("spec") or {}, expected)
                if healthy - desired <= 0:
                    pdb_name = pdb["metadata"]["name"]
                    raise st.ApiError(
                        429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.",
                        causes=[{"reason": "DisruptionBudget",
                                 "message": f"The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently"}],
                        retry_after=10,
                    )
        options = (body or {}).get("deleteOptions") if isinstance(body, dict) else None
        self.delete(rtype, namespace, name, ctx, options=options or {})
        return st.success(code=201)


def _okey(entry: Entry) -> tuple[str, str]:
    meta = entry.obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def _healthy(pod: dict[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return True


def _scaled(value: Any, total: int, *, what: str) -> int:
    if isinstance(value, str) and value.endswith("%"):
        try:
            pct = int(value[:-1])
        except ValueError:
            raise st.bad_request(f"invalid PodDisruptionBudget {what} {value!r}: must be an integer or a percentage") from None
        return math.ceil(pct * total / 100)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise st.bad_request(f"invalid PodDisruptionBudget {what} {value!r}: must be an integer or a percentage") from None


def _desired_healthy(spec: dict[str, Any], expected: int) -> int:
    if "maxUnavailable" in spec and spec["maxUnavailable"] is not None:
        return max(expected - _scaled(spec["maxUnavailable"], expected, what="maxUnavailable"), 0)
    if "minAvailable" in spec and spec["minAvailable"] is not None:
        return _scaled(spec["minAvailable"], expected, what="minAvailable")
    return 0
