"""What the emulator's API means, independent of HTTP: the kinds served and the semantics of every verb.

Contract:
- `Registry(store)` serves the built-in kinds (builtin.py) and one ResourceType per served version of each
  CustomResourceDefinition, until it is deleted (its objects dropped).
- Verbs (`create`, `update`, `patch`, `delete`, `list_entries`, `bind`, `evict`) take a ResourceType, a namespace
  ("" for cluster-scoped kinds) and a `RequestContext` (sim/request.py), return stored `Entry`s or dicts, and
  raise status.ApiError with kube-apiserver's codes, reasons and messages.
- Semantics: metadata, generation, one global resourceVersion, optimistic concurrency, status subresources,
  deletion and finalizers, garbage collection, admission, namespace lifecycle, binding, eviction by PDB status,
  strategic merge patch, list snapshots, CRD schemas: each in its own module (listed in the notes).
- Everything is synchronous: one verb is atomic with respect to the event loop. More: docs/modules.md#simregistrypy.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import random
import re
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from gangsched.models.timestamps import format_time
from gangsched.sim import (
    deletion,
    dra,
    features,
    namespace_lifecycle,
    pod_status,
    runtimeclass,
    scheduling,
    strategic,
    validation,
)
from gangsched.sim import patch as patching
from gangsched.sim import status as st
from gangsched.sim.binding import bind_pod
from gangsched.sim.builtin import BUILTIN_TYPES, CRD_TYPE, crd_storage_version, crd_types, validate_crd
from gangsched.sim.disruption import disruption_allowed_condition, is_pod_ready, validate_pdb_spec
from gangsched.sim.namespace_controller import NamespaceController
from gangsched.sim.pod_update import check_pod_update
from gangsched.sim.podgroup_priority import admit_podgroup
from gangsched.sim.request import RequestContext
from gangsched.sim.scheduling import pod as pod_scheduling
from gangsched.sim.selectors import FieldSelector, LabelSelector, SelectorError, selector_from_object
from gangsched.sim.store import Entry, StorageKey, Store
from gangsched.sim.termination import PodTerminator
from gangsched.sim.types import ResourceType

try:  # E2's structural-schema module
    from gangsched.sim import schema as schema_mod
except ImportError:  # pragma: no cover - wiring point while it does not exist
    schema_mod = None  # type: ignore[assignment]

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_PRIORITY_CLASSES = (("system-node-critical", 2000001000), ("system-cluster-critical", 2000000000))
DEFAULT_SCHEDULER = "default-scheduler"
MAX_DISRUPTED_PODS = 2000  # eviction.go MaxDisruptedPodSize

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_PATCH]

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


def _strategy_for(group: str, kind: str) -> scheduling.Strategy | None:
    """The strategy of a scheduling.k8s.io (sim/scheduling/) or resource.k8s.io (sim/dra/) kind."""
    return scheduling.strategy_for(group, kind) or dra.strategy_for(group, kind)


def timestamp(now: datetime.datetime) -> str:
    return format_time(now)


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
        gates: features.FeatureGates = features.DEFAULT,
    ) -> None:
        self.store = store
        self.gates = gates  # the API profile (sim/features.py): which 1.37 beta/alpha APIs and fields are served
        store.owners_changed = self._owners_changed
        self.clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self.rng = rng or random.Random()
        # Retry-After of the 429 for a PDB not yet observed (eviction.go createTooManyRequestsError: 10); tests
        # that wait it out may shorten it
        self.pdb_retry_after = 10
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        self._by_storage: dict[StorageKey, ResourceType] = {}
        self._crd_keys: dict[str, list[ResourceType]] = {}
        self.listeners: list[Callable[[], None]] = []  # called when the set of served types changes
        self.terminator = PodTerminator(self)  # the kubelets' end of graceful pod deletion (termination.py)
        self.namespace_controller = NamespaceController(self)  # empties and removes terminating namespaces
        for rtype in (*BUILTIN_TYPES, *scheduling.served_types(gates), *dra.served_types(gates)):
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

    def now(self) -> str:
        """The current time as metadata timestamps show it."""
        return self._now()

    def namespaced_storage_types(self) -> list[ResourceType]:
        """One served type per storage of namespaced objects (what the namespace controller empties)."""
        return [t for t in self._by_storage.values() if t.namespaced]

    def _check_namespace(self, rtype: ResourceType, namespace: str, name: str = "") -> None:
        """NamespaceLifecycle admission for a create: 404 without the namespace, 403 while it terminates."""
        if rtype.namespaced:
            namespace_lifecycle.refuse_create(self.store, namespace, rtype, name)

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
                raise st.bad_request(
                    "strict decoding error: " + ", ".join(f'unknown field "{e.path}"' for e in unknown)
                )
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
        validation.decode_body(rtype, obj, ctx.field_validation, ctx.warnings)
        validation.apply_defaults(rtype, obj)
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        if rtype.namespaced:
            given = meta.get("namespace")
            if given and given != namespace:
                raise st.bad_request(
                    f"the namespace of the provided object ({given}) does not match the namespace sent on the "
                    f"request ({namespace})"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        name = meta.get("name")
        if not name:
            prefix = meta.get("generateName")
            if not prefix:
                raise st.invalid(
                    rtype,
                    "",
                    [("metadata.name", "Required value: name or generateName is required", "FieldValueRequired")],
                )
            for _ in range(16):
                name = prefix + "".join(self.rng.choice(_GEN_CHARS) for _ in range(5))
                if self.store.get(storage_key(rtype), namespace, name) is None:
                    break
            meta["name"] = name
        if rtype.group == "rbac.authorization.k8s.io":
            # RBAC objects' names are path segments (pkg/apis/rbac/validation: ValidateRBACName),
            # e.g. "system:discovery"
            if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "%" in name:
                raise st.invalid(
                    rtype, str(name), [("metadata.name", f"Invalid value: \"{name}\": may not contain '/' or '%'")]
                )
        elif not isinstance(name, str) or len(name) > 253 or not _NAME_RE.match(name):
            raise st.invalid(
                rtype,
                str(name),
                [
                    (
                        "metadata.name",
                        (
                            f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
                        ),
                    )
                ],
            )
        self._check_namespace(rtype, namespace, name)
        skey = storage_key(rtype)
        if self.store.get(skey, namespace if rtype.namespaced else "", name) is not None:
            raise st.already_exists(rtype, name)
        if "status" in rtype.subresources and rtype.kind not in ("Node", "Pod"):
            obj.pop("status", None)
        self._admit_create(rtype, obj, name, ctx)
        self._validate_custom(rtype, obj, name, ctx)
        validation.validate_object(rtype, obj, namespace=namespace if rtype.namespaced else "", create=True)
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

    @staticmethod
    def _patch_meta(rtype: ResourceType) -> strategic.PatchMeta:
        return strategic.patch_meta_for(rtype.group, rtype.version, rtype.kind)

    def _check_kind(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        if kind and kind != rtype.kind:
            raise st.bad_request(
                f"the kind of the body ({kind}) does not match the resource {rtype.plural} ({rtype.kind})"
            )
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
                    {
                        "type": "NamesAccepted",
                        "status": "True",
                        "reason": "NoConflicts",
                        "message": "no conflicts found",
                        "lastTransitionTime": self._now(),
                    },
                    {
                        "type": "Established",
                        "status": "True",
                        "reason": "InitialNamesAccepted",
                        "message": "the initial names have been accepted",
                        "lastTransitionTime": self._now(),
                    },
                ],
            }
        elif kind == ("node.k8s.io", "RuntimeClass"):
            rc_problems = runtimeclass.validate_runtime_class(obj)
            if rc_problems:
                raise st.invalid(rtype, name, rc_problems)
        elif kind == ("policy", "PodDisruptionBudget"):
            pdb_problems = validate_pdb_spec(obj.get("spec") or {})
            if pdb_problems:
                raise st.invalid(rtype, name, pdb_problems)
            obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
        elif (strategy := _strategy_for(*kind)) is not None:  # sim/scheduling/ and sim/dra/ kinds
            if kind == ("scheduling.k8s.io", "PodGroup") and isinstance(obj.get("spec"), dict):
                classes = self.store.table(storage_key(self.types[("scheduling.k8s.io", "v1", "priorityclasses")]))
                refused = admit_podgroup(obj["spec"], [e.obj for e in classes.values()], self.gates)
                if refused is not None:  # the Priority admission plugin (sim/podgroup_priority.py)
                    raise st.forbidden(rtype, name, refused)
            strategy.prepare_create(obj, self.gates)
            sched_problems = strategy.validate(obj, self.gates)
            if sched_problems:
                raise st.invalid(rtype, name, sched_problems)
            ctx.warnings.extend(dra.warnings(kind, obj))  # e.g. DeviceClass.extendedResourceName (not honoured)

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
        pod_scheduling.drop_disabled(spec, None, self.gates)
        problems.extend(pod_scheduling.validate(spec))
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
                rtype,
                name,
                f"the integer value of priority ({given}) must not be provided in pod spec; priority admission "
                f"controller computed {value} from the given PriorityClass name",
            )
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority")
        try:  # the RuntimeClass admission plugin runs after Priority (kube-apiserver's AllOrderedPlugins)
            runtimeclass.admit_pod(spec, self._runtime_class)
        except runtimeclass.Rejected as rejected:
            raise st.forbidden(rtype, name, rejected.why) from None
        given_status = obj.get("status")
        status: dict[str, Any] = given_status if isinstance(given_status, dict) else {}
        obj["status"] = {"phase": "Pending", **({"qosClass": status["qosClass"]} if "qosClass" in status else {})}
        if spec.get("schedulingGates"):  # pkg/registry/core/pod/strategy.go applySchedulingGatedCondition
            obj["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                    "lastProbeTime": None,
                    "lastTransitionTime": self._now(),
                }
            ]

    def _runtime_class(self, name: str) -> dict[str, Any] | None:
        found = self.store.get(storage_key(self.types[("node.k8s.io", "v1", "runtimeclasses")]), "", name)
        return found.obj if found is not None else None

    def _admit_priority_class(self, rtype: ResourceType, obj: dict[str, Any], name: str) -> None:
        value = obj.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise st.invalid(
                rtype, name, [("value", f"Invalid value: {value!r}: must be an integer", "FieldValueInvalid")]
            )
        policy = obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        if policy not in ("PreemptLowerPriority", "Never"):
            raise st.invalid(
                rtype,
                name,
                [
                    (
                        "preemptionPolicy",
                        f'Unsupported value: "{policy}": supported values: "Never", "PreemptLowerPriority"',
                        "FieldValueNotSupported",
                    )
                ],
            )
        if obj.get("globalDefault"):
            for entry in self.store.table(storage_key(rtype)).values():
                other = entry.obj
                if other.get("globalDefault") and other["metadata"]["name"] != name:
                    raise st.invalid(
                        rtype,
                        name,
                        [
                            (
                                "globalDefault",
                                (
                                    f"Invalid value: true: PriorityClass {other['metadata']['name']} is already "
                                    "marked as default. Only one default can exist"
                                ),
                            )
                        ],
                    )

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
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> tuple[list[Entry], str, str | None, int | None]:
        """(entries, list resourceVersion, continue token or None, remainingItemCount or None).

        As kube-apiserver's storage does (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go GetList;
        the rules: apimachinery/pkg/apis/meta/internalversion/validation ValidateListOptions): every page of a
        paginated list is served from one snapshot, at the first page's resourceVersion; a continue token whose
        snapshot was compacted away is 410 Expired, carrying a token that continues inconsistently from now;
        `resourceVersionMatch=Exact` (and the legacy exact form, `limit` with a non-zero `resourceVersion`) is
        served at exactly that resourceVersion, 410 when compacted; a resourceVersion newer than the store's is
        504 "Too large resource version".
        """
        skey = storage_key(rtype)
        ns = namespace if rtype.namespaced else None
        _validate_list_options(resource_version, resource_version_match, continue_token)
        at_rv: int | None = None  # serve a snapshot at this resourceVersion; None: the current state
        start: tuple[str, str] | None = None
        if continue_token:
            if resource_version not in ("", "0"):
                raise st.bad_request("specifying resource version is not allowed when using continue")
            try:
                decoded = orjson.loads(base64.urlsafe_b64decode(continue_token.encode()))
                token_rv = int(decoded["rv"])
                start = (str(decoded["start"][0]), str(decoded["start"][1]))
            except Exception as exc:
                raise st.bad_request(f"continue key is not valid: {continue_token!r} ({exc})") from None
            if token_rv >= 0:
                if token_rv < self.store.compacted_through(skey):
                    raise st.ApiError(410, "Expired", _CONTINUE_TOO_OLD, list_continue=_continue_token(-1, start))
                at_rv = token_rv
        elif resource_version not in ("", "0"):
            requested = _parse_rv(resource_version)
            if requested > self.store.rv:
                raise st.ApiError(
                    504, "Timeout", f"Too large resource version: {requested}, current: {self.store.rv}", retry_after=1
                )
            exact = resource_version_match == "Exact" or (not resource_version_match and bool(limit and limit > 0))
            if exact:
                if requested < self.store.compacted_through(skey):
                    raise st.gone("The resourceVersion for the provided list is too old.")
                at_rv = requested
        list_rv = self.store.rv if at_rv is None else at_rv
        name = fields.exact_name()
        if at_rv is not None:
            snapshot = self.store.snapshot(skey, ns, at_rv)
            assert snapshot is not None  # compaction was checked above, in the same synchronous step
            candidates = [e for e in snapshot if name is None or e.obj["metadata"]["name"] == name]
        elif name is not None:
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
            token = _continue_token(list_rv, _okey(page[-1]))
            return page, str(list_rv), token, len(candidates) - limit
        return candidates, str(list_rv), None, None

    # ------------------------------------------------------------------ update / patch
    def update(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        ctx: RequestContext,
        *,
        subresource: str | None = None,
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
            try:
                if rtype.is_crd:
                    result = patching.merge_patch(current.copy(), body)
                else:
                    result = strategic.strategic_merge_patch(
                        current.copy(), body, self._patch_meta(rtype), private=True
                    )
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
                result = strategic.strategic_merge_patch(current.copy(), body, self._patch_meta(rtype), private=True)
            else:
                raise st.unsupported_media_type(content_type, PATCH_TYPES)
        except patching.PatchTestFailed as exc:
            raise st.invalid(rtype, name, [("", str(exc))]) from None
        except patching.PatchDecodeError as exc:  # jsonpatch.DecodePatch failed: 400 (handlers/patch.go)
            raise st.bad_request(str(exc)) from None
        except patching.PatchError as exc:
            raise st.ApiError(
                422,
                "Invalid",
                f"the server rejected our request due to an error in our request: {exc}",
                name=name,
                rtype=rtype,
            ) from None
        if not isinstance(result, dict):
            raise st.bad_request("the patched object is not a JSON object")
        return self._commit(rtype, current, result, ctx, subresource=subresource)

    def _commit(
        self, rtype: ResourceType, current: Entry, new: dict[str, Any], ctx: RequestContext, *, subresource: str | None
    ) -> Entry:
        cur = current.obj
        cur_meta = cur["metadata"]
        name = cur_meta["name"]
        validation.decode_body(rtype, new, ctx.field_validation, ctx.warnings)
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and str(rv) != cur_meta["resourceVersion"]:
            raise st.stale(rtype, name)
        if subresource == "status" and (rtype.group, rtype.kind) == ("", "Pod"):
            result = pod_status.prepare_update(cur, new)  # metadata may change; spec and ownerReferences not
            _keep_system_meta(rtype, cur_meta, result["metadata"])
            result["apiVersion"], result["kind"] = rtype.group_version, rtype.kind
            _check_no_new_finalizers(rtype, name, cur_meta, result["metadata"])
        elif subresource == "status":
            result = current.copy()
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            if rtype.is_crd and rtype.schema is not None:
                self._validate_custom(rtype, result, name, ctx)
            strategy = _strategy_for(rtype.group, rtype.kind)
            status_problems = strategy.validate_status_update(cur, result) if strategy is not None else []
            if status_problems:
                raise st.invalid(rtype, name, status_problems)
        else:
            result = new
            _keep_system_meta(rtype, cur_meta, meta)
            if "status" in rtype.subresources:
                if "status" in cur:
                    result["status"] = cur["status"]
                else:
                    result.pop("status", None)
            result["apiVersion"] = rtype.group_version
            result["kind"] = rtype.kind
            _check_no_new_finalizers(rtype, name, cur_meta, meta)
            self._admit_update(rtype, cur, result, name)
            self._validate_custom(rtype, result, name, ctx)
            if self._content(result, rtype) != self._content(cur, rtype):
                meta["generation"] = int(cur_meta.get("generation", 1)) + 1
        validation.validate_object(rtype, result, namespace=cur_meta.get("namespace") or "", create=False)
        result["metadata"]["resourceVersion"] = cur_meta["resourceVersion"]
        if result == cur:
            return current  # a no-op write does not bump the resourceVersion
        if ctx.dry_run:
            return Entry.of(result)
        if _should_delete_during_update(cur_meta, result["metadata"]):
            return self._remove(rtype, current, orphan=False)
        entry = self.store.put(storage_key(rtype), result, previous=current)
        if rtype.key == CRD_TYPE.key:
            self._register_crd(result)
        return entry

    def _admit_update(self, rtype: ResourceType, cur: dict[str, Any], new: dict[str, Any], name: str) -> None:
        strategy = _strategy_for(rtype.group, rtype.kind)
        if strategy is not None:
            strategy.prepare_update(cur, new, self.gates)
            sched_problems = strategy.validate_update(cur, new, self.gates)
            if sched_problems:
                raise st.invalid(rtype, name, sched_problems)
        elif (rtype.group, rtype.kind) == ("", "Pod"):
            if isinstance(new.get("spec"), dict):
                pod_scheduling.drop_disabled(new["spec"], cur.get("spec"), self.gates)
            pod_problems = check_pod_update(cur, new)
            if pod_problems:
                raise st.invalid(rtype, name, pod_problems)
        elif (rtype.group, rtype.kind) == ("policy", "PodDisruptionBudget"):
            pdb_problems = validate_pdb_spec(new.get("spec") or {})
            if pdb_problems:
                raise st.invalid(rtype, name, pdb_problems)
        elif (rtype.group, rtype.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            problems = validate_crd(new)
            if problems:
                raise st.invalid(rtype, name, problems)
        elif (rtype.group, rtype.kind) == ("node.k8s.io", "RuntimeClass"):
            rc_problems = runtimeclass.validate_runtime_class_update(cur, new)
            if rc_problems:
                raise st.invalid(rtype, name, rc_problems)

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
        if rtype.key == ("", "v1", "namespaces"):
            return self._delete_namespace(rtype, current, opts, ctx)
        is_pod = (rtype.group, rtype.kind) == ("", "Pod")
        plan = deletion.plan_delete(rtype, current.obj, opts, graceful_kind=is_pod, now=self.clock())
        if plan.action == "pending":
            return current
        if ctx.dry_run:
            return Entry.of(plan.obj) if plan.obj is not None else current
        entry = current
        if plan.obj is not None:
            entry = (
                current if plan.obj == current.obj else self.store.put(storage_key(rtype), plan.obj, previous=current)
            )
            if plan.action == "update":
                meta = entry.obj["metadata"]
                if is_pod and meta.get("deletionGracePeriodSeconds") and (entry.obj.get("spec") or {}).get("nodeName"):
                    self.terminator.deleting(rtype, entry)
                return entry
        meta = entry.obj["metadata"]
        if opts.get("propagationPolicy") == "Foreground" and meta.get("uid") in self.store.dependents:
            self._collect(meta["uid"], deleted_owner=meta["uid"], foreground=True)
        return self._remove(rtype, entry, orphan=opts.get("propagationPolicy") == "Orphan")

    def _delete_namespace(
        self, rtype: ResourceType, current: Entry, opts: dict[str, Any], ctx: RequestContext
    ) -> Entry:
        """pkg/registry/core/namespace/storage: the first DELETE makes it Terminating (namespace_lifecycle.py);
        the namespace controller empties it and removes it; a DELETE of an already finalized one removes it."""
        name = current.obj["metadata"]["name"]
        namespace_lifecycle.refuse_delete(name)
        deletion.check_preconditions(rtype, current.obj, opts)
        if ctx.dry_run:
            return Entry.of(namespace_lifecycle.terminating(current.obj, self._now()))
        if current.obj["metadata"].get("deletionTimestamp"):
            if (current.obj.get("spec") or {}).get("finalizers") or current.obj["metadata"].get("finalizers"):
                return current
            return self._remove(rtype, current, orphan=False)
        obj = namespace_lifecycle.terminating(current.obj, self._now())
        entry = self.store.put(storage_key(rtype), obj, previous=current)
        self.namespace_controller.schedule(name)
        return entry

    def remove_entry(self, rtype: ResourceType, entry: Entry) -> Entry:
        """Remove a stored object now (controllers' final step), with garbage collection of its dependents."""
        return self._remove(rtype, entry, orphan=False)

    def _remove(self, rtype: ResourceType, current: Entry, *, orphan: bool) -> Entry:
        meta = current.obj["metadata"]
        ns = meta.get("namespace") or ""
        removed = self.store.remove(storage_key(rtype), ns, meta["name"])
        assert removed is not None
        if rtype.key == CRD_TYPE.key:
            self._unregister_crd(meta["name"], drop=True)
        elif (rtype.group, rtype.kind) == ("", "Namespace"):
            self._empty_namespace(meta["name"])
        if ns and namespace_lifecycle.is_terminating(self._namespace_obj(ns)):
            self.namespace_controller.schedule(ns)
        uid = meta.get("uid")
        if uid and not orphan and uid in self.store.dependents:
            self._schedule(lambda: self._collect(uid))
        return removed

    def _namespace_obj(self, namespace: str) -> dict[str, Any] | None:
        entry = self.store.get(("", "namespaces"), "", namespace)
        return entry.obj if entry is not None else None

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

    def _owners_changed(self, skey: StorageKey, okey: tuple[str, str]) -> None:
        """An object got owners: if none of them exists, it is garbage (checked on the loop, after the write; the
        collector is a controller, asynchronous: a registry used without an event loop runs none)."""
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().call_soon(self._collect_dangling, skey, okey)

    def _collect_dangling(self, skey: StorageKey, okey: tuple[str, str]) -> None:
        """kube-controller-manager's garbage collector (pkg/controller/garbagecollector): graph_builder.go
        addDependentToOwners makes a "virtual" node for an owner it has not seen and queues it; garbagecollector.go
        attemptToDeleteItem finds it absent (404 or another uid), and the dependent, whose ownerReferences are then
        all dangling (classifyReferences: no solid owner), is deleted in the background. So an object created or
        updated with owners that no longer exist is collected as if they had just been deleted."""
        entry = self.store.get(skey, *okey)
        rtype = self._by_storage.get(skey)
        if entry is None or rtype is None or entry.obj["metadata"].get("deletionTimestamp"):
            return
        owners = [r.get("uid") for r in entry.obj["metadata"].get("ownerReferences") or []]
        if owners and all(o not in self.store.uids for o in owners):
            with contextlib.suppress(st.ApiError):
                self.delete(rtype, okey[0], okey[1], RequestContext(), options={"propagationPolicy": "Background"})

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
                with contextlib.suppress(st.ApiError):
                    self.delete(rtype, ns, name, RequestContext(), options={"propagationPolicy": policy})

    # ------------------------------------------------------------------ pods/binding, pods/eviction
    def bind(
        self, rtype: ResourceType, namespace: str, name: str, body: Any, ctx: RequestContext | None = None
    ) -> dict[str, Any]:
        """pods/binding (binding.py), after the NamespaceLifecycle admission of the create."""
        self._check_namespace(rtype, namespace, name)
        return bind_pod(self.store, rtype, namespace, name, body, now=self._now(), dry_run=bool(ctx and ctx.dry_run))

    def evict(self, rtype: ResourceType, namespace: str, name: str, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """pods/eviction as pkg/registry/core/pod/storage/eviction.go decides it, from the PDB's status (which the
        disruption controller, sim/disruption.py, maintains)."""
        self._check_namespace(rtype, namespace, name)  # NamespaceLifecycle: an eviction is a create
        if not isinstance(body, dict):
            raise st.bad_request(f"not a Eviction object: {type(body).__name__}")
        if ((body.get("metadata") or {}).get("name") or "") != name:
            raise st.bad_request("name in URL does not match name in Eviction object")
        options = body.get("deleteOptions") or {}
        if not isinstance(options, dict):
            raise st.bad_request("deleteOptions must be an object")
        options = dict(options)
        dry_run = ctx.dry_run or bool(options.get("dryRun"))
        if ctx.dry_run and options.get("dryRun") and options["dryRun"] != ["All"]:
            raise st.bad_request(f"Non-matching dry-run options in request and content: [All] and {options['dryRun']}")
        delete_ctx = RequestContext(dry_run=dry_run, field_validation=ctx.field_validation, warnings=ctx.warnings)
        current = self.get(rtype, namespace, name)
        pod = current.obj
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):  # canIgnorePDB
            self._delete_evicted(rtype, current, options, delete_ctx)
            return st.success(code=201)
        pdb_type = self.types[("policy", "v1", "poddisruptionbudgets")]
        pdbs = []
        for entry in self.store.entries(storage_key(pdb_type), namespace):
            try:
                sel = selector_from_object((entry.obj.get("spec") or {}).get("selector"))
            except SelectorError:
                continue  # an invalid selector matches no pod
            if not sel.empty and sel.matches(pod):  # a nil or empty selector matches nothing here
                pdbs.append(entry)
        if len(pdbs) > 1:
            raise st.ApiError(
                500,
                "",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            )
        if pdbs:
            pdb_entry = pdbs[0]
            pdb = pdb_entry.obj
            status = pdb.get("status") or {}
            if not is_pod_ready(pod):
                policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
                healthy, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
                if policy == "AlwaysAllow" or (healthy >= desired > 0):
                    # an unhealthy pod: deleted without touching the budget
                    self._delete_evicted(rtype, current, options, delete_ctx)
                    return st.success(code=201)
            self._check_and_decrement(pdb_type, pdb_entry, name, dry_run=dry_run)
        self._delete_evicted(rtype, current, options, delete_ctx)
        return st.success(code=201)

    def _check_and_decrement(self, pdb_type: ResourceType, entry: Entry, pod_name: str, *, dry_run: bool) -> None:
        """eviction.go checkAndDecrement: refuse (429) or take one disruption from the budget and record the pod in
        status.disruptedPods (the disruption controller then counts it as gone for up to 2 minutes)."""
        pdb = entry.obj
        pdb_name = pdb["metadata"]["name"]
        status = pdb.get("status") or {}
        message = "Cannot evict pod as it would violate the pod's disruption budget."
        if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
            raise st.ApiError(
                429,
                "TooManyRequests",
                message,
                retry_after=self.pdb_retry_after,
                causes=[
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pdb_name} is still being processed by the server.",
                    }
                ],
            )
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise st.forbidden(pdb_type, pdb_name, "pdb disruptions allowed is negative")
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            raise st.forbidden(
                pdb_type, pdb_name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
            )
        if allowed == 0:
            raise st.ApiError(
                429,
                "TooManyRequests",
                message,
                causes=[
                    {
                        "reason": "DisruptionBudget",
                        "message": (
                            f"The disruption budget {pdb_name} needs {int(status.get('desiredHealthy') or 0)} "
                            f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently"
                        ),
                    }
                ],
            )
        if dry_run:
            return
        obj = entry.copy()
        new = obj.setdefault("status", {})
        new["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            disruption_allowed_condition(new, self._now())
        disrupted = new.get("disruptedPods") or {}
        disrupted[pod_name] = self._now()
        new["disruptedPods"] = disrupted
        self.store.put(storage_key(pdb_type), obj, previous=entry)

    def _delete_evicted(
        self, rtype: ResourceType, current: Entry, options: dict[str, Any], ctx: RequestContext
    ) -> None:
        """addConditionAndDeletePod: a DisruptionTarget condition on the pod, then the delete with the Eviction's
        DeleteOptions (gracePeriodSeconds, preconditions, propagationPolicy)."""
        meta = current.obj["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise st.conflict(
                rtype,
                meta["name"],
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise st.conflict(
                rtype,
                meta["name"],
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        if not ctx.dry_run and (current.obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            obj = current.copy()
            status = obj.setdefault("status", {})
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
            conditions.append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": self._now(),
                    "reason": "EvictionByEvictionAPI",
                    "message": "Eviction API: evicting",
                }
            )
            status["conditions"] = conditions
            current = self.store.put(storage_key(rtype), obj, previous=current)
            if pre.get("resourceVersion"):
                options = dict(
                    options, preconditions=dict(pre, resourceVersion=current.obj["metadata"]["resourceVersion"])
                )
        self.delete(rtype, meta.get("namespace") or "", meta["name"], ctx, options=options)


_CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


def _continue_token(rv: int, start: tuple[str, str]) -> str:
    """An opaque continue token: the snapshot's resourceVersion (-1: continue from the current state) and the last
    key."""
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "start": list(start)})).decode()


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise st.bad_request(f"invalid resource version {text!r}: must be an unsigned integer") from None
    if value < 0:
        raise st.bad_request(f"invalid resource version {text!r}: must be an unsigned integer")
    return value


def _validate_list_options(resource_version: str, match: str, continue_token: str | None) -> None:
    """ValidateListOptions (apimachinery/pkg/apis/meta/internalversion/validation/validation.go), for a list."""
    if not match:
        return
    problems: list[str] = []
    if not resource_version:
        problems.append(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        )
    if continue_token:
        problems.append("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided")
    if match not in ("Exact", "NotOlderThan"):
        problems.append(
            f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", "NotOlderThan", ""'
        )
    if match == "Exact" and resource_version == "0":
        problems.append(
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
        )
    if problems:
        text = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise st.ApiError(422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: {text}')


def _keep_system_meta(rtype: ResourceType, cur_meta: dict[str, Any], meta: dict[str, Any]) -> None:
    """rest.BeforeUpdate (staging/src/k8s.io/apiserver/pkg/registry/rest/update.go): what no update changes."""
    for key in _IMMUTABLE_META:
        if key in cur_meta:
            meta[key] = cur_meta[key]
        else:
            meta.pop(key, None)
    meta["name"] = cur_meta["name"]
    if rtype.namespaced:
        meta["namespace"] = cur_meta["namespace"]
    else:
        meta.pop("namespace", None)
    meta.pop("managedFields", None)


def _should_delete_during_update(old_meta: dict[str, Any], new_meta: dict[str, Any]) -> bool:
    """generic/registry/store.go shouldDeleteDuringUpdate: the last finalizer of an object being deleted went
    away and no grace period is left."""
    if new_meta.get("finalizers") or not old_meta.get("deletionTimestamp"):
        return False
    return not old_meta.get("deletionGracePeriodSeconds")


def _check_no_new_finalizers(
    rtype: ResourceType, name: str, old_meta: dict[str, Any], new_meta: dict[str, Any]
) -> None:
    """apimachinery ValidateObjectMetaUpdate / ValidateNoNewFinalizers."""
    if not old_meta.get("deletionTimestamp"):
        return
    extra = sorted(set(new_meta.get("finalizers") or []) - set(old_meta.get("finalizers") or []))
    if extra:
        listed = ", ".join(f'"{f}"' for f in extra)
        raise st.invalid(
            rtype,
            name,
            [
                (
                    "metadata.finalizers",
                    (
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new "
                        f"finalizers []string{{{listed}}}"
                    ),
                    "FieldValueForbidden",
                )
            ],
        )


def _okey(entry: Entry) -> tuple[str, str]:
    meta = entry.obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])
