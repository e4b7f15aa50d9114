"""Compact, immutable-by-convention records of nodes and pods, and pure builders from raw API dicts.

Contract:
- `node_from_api(obj) -> NodeRecord`: name, allocatable (canonical units, see core/resources.py), labels,
  taints, spec.unschedulable. Identical allocatable maps are shared between records.
- `pod_from_api(obj, *, gang, role=None, rank=None, ours) -> PodRecord`: identity, priority, preemption
  policy, creation time (float epoch seconds), requests (including the implicit `pods: 1`), spec.nodeName,
  status.phase, status.nominatedNodeName, the `gang.scheduling.koordinator.sh/timeout: "true"` mark, and the
  scheduling constraints (nodeSelector, required/preferred node affinity, tolerations).
- Constraints and requests of a pod are interned into a `SchedulingClass` (same constraints -> the same
  object, with a small integer `id`): feasibility is computed once per class, and records share the class's
  dicts instead of holding their own. No raw API dict is kept by any record.
- Bad input raises InvalidField naming the field path (e.g. `spec.containers[0].resources.requests.cpu`).
Records are slots dataclasses; do not mutate them in place: build a new one (`dataclasses.replace`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gangsched.core.errors import InvalidField
from gangsched.core.resources import PODS, Resources, pod_requests, resource_list
from gangsched.core.timeparse import parse_rfc3339

TIMEOUT_ANNOTATION = "gang.scheduling.koordinator.sh/timeout"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


class Taint(NamedTuple):
    key: str
    value: str
    effect: str


class Toleration(NamedTuple):
    key: str  # "" with operator Exists tolerates every taint
    operator: str  # "Equal" | "Exists"
    value: str
    effect: str  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


class Requirement(NamedTuple):
    key: str
    operator: str
    values: tuple[str, ...]


class Term(NamedTuple):
    """A nodeSelectorTerm: every expression and every field requirement must match."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]  # matchFields: only key metadata.name is defined


@dataclass(frozen=True, slots=True, eq=False)
class SchedulingClass:
    """The interned requests + constraints shared by every pod that has them (an equivalence class)."""

    id: int
    requests: Mapping[str, int]  # canonical units, includes pods: 1
    node_selector: tuple[tuple[str, str], ...]
    required: tuple[Term, ...] | None  # None: no required node affinity
    preferred: tuple[tuple[int, Term], ...]
    tolerations: tuple[Toleration, ...]

    @property
    def constrained(self) -> bool:
        return bool(self.node_selector or self.required is not None)


_classes: dict[tuple[Any, ...], SchedulingClass] = {}


def scheduling_class(
    requests: Mapping[str, int],
    *,
    node_selector: tuple[tuple[str, str], ...] = (),
    required: tuple[Term, ...] | None = None,
    preferred: tuple[tuple[int, Term], ...] = (),
    tolerations: tuple[Toleration, ...] = (),
) -> SchedulingClass:
    """The interned class of these requests and constraints (process-wide table; ids are never reused)."""
    req = dict(requests)
    req.setdefault(PODS, 1)
    key = (tuple(sorted(req.items())), node_selector, required, preferred, tolerations)
    cls = _classes.get(key)
    if cls is None:
        cls = SchedulingClass(len(_classes), req, node_selector, required, preferred, tolerations)
        _classes[key] = cls
    return cls


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False


@dataclass(frozen=True, slots=True)
class PodRecord:
    namespace: str
    name: str
    uid: str
    sclass: SchedulingClass
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    created: float = 0.0
    node_name: str | None = None
    phase: str = "Pending"
    nominated_node: str | None = None
    gang: str | None = None  # "namespace/name" of the gang, None for a pod scheduled alone
    role: str | None = None
    rank: int | None = None
    ours: bool = True  # spec.schedulerName is ours (others' pods only consume capacity)
    timed_out: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def requests(self) -> Mapping[str, int]:
        return self.sclass.requests

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


_shared_maps: dict[tuple[tuple[str, Any], ...], Mapping[str, Any]] = {}


def _share(d: Mapping[str, Any]) -> Mapping[str, Any]:
    key = tuple(sorted(d.items()))
    found = _shared_maps.get(key)
    if found is None:
        if len(_shared_maps) > 100_000:
            _shared_maps.clear()
        found = _shared_maps[key] = dict(d)
    return found


def _str_map(obj: Any, *, field: str) -> dict[str, str]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise InvalidField(field, obj, "must be a mapping of string to string")
    return {sys.intern(str(k)): sys.intern(str(v)) for k, v in obj.items()}


def _obj(obj: Any, *, field: str) -> Mapping[str, Any]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise InvalidField(field, obj, "must be an object")
    return obj


def _list(obj: Any, *, field: str) -> list[Any]:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise InvalidField(field, obj, "must be a list")
    return obj


def node_from_api(obj: Mapping[str, Any]) -> NodeRecord:
    meta = _obj(obj.get("metadata"), field="metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidField("metadata.name", name, "must be a non-empty string")
    spec = _obj(obj.get("spec"), field="spec")
    status = _obj(obj.get("status"), field="status")
    alloc_src = status.get("allocatable")
    if alloc_src is None:
        alloc_src = status.get("capacity")
    allocatable = resource_list(alloc_src, field="status.allocatable")
    taints = []
    for i, t in enumerate(_list(spec.get("taints"), field="spec.taints")):
        t = _obj(t, field=f"spec.taints[{i}]")
        effect = t.get("effect", "")
        if effect not in _EFFECTS:
            raise InvalidField(f"spec.taints[{i}].effect", effect, f"must be one of {sorted(_EFFECTS)}")
        taints.append(Taint(sys.intern(str(t.get("key", ""))), sys.intern(str(t.get("value", ""))), effect))
    return NodeRecord(
        name=sys.intern(name),
        allocatable=_share(allocatable),
        labels=_str_map(meta.get("labels"), field="metadata.labels"),
        taints=tuple(taints),
        unschedulable=bool(spec.get("unschedulable", False)),
    )


def _requirement(raw: Any, *, field: str, fields: bool) -> Requirement:
    r = _obj(raw, field=field)
    key = r.get("key")
    op = r.get("operator")
    if not isinstance(key, str) or not key:
        raise InvalidField(f"{field}.key", key, "must be a non-empty string")
    if fields and key != "metadata.name":
        raise InvalidField(f"{field}.key", key, "matchFields supports only metadata.name")
    if op not in _OPERATORS or (fields and op not in ("In", "NotIn")):
        allowed = ["In", "NotIn"] if fields else sorted(_OPERATORS)
        raise InvalidField(f"{field}.operator", op, f"must be one of {allowed}")
    values = tuple(str(v) for v in _list(r.get("values"), field=f"{field}.values"))
    if op in ("In", "NotIn") and not values:
        raise InvalidField(f"{field}.values", [], f"operator {op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and values:
        raise InvalidField(f"{field}.values", list(values), f"operator {op} takes no values")
    if op in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        raise InvalidField(f"{field}.values", list(values), f"operator {op} needs exactly one integer value")
    return Requirement(sys.intern(key), op, values)


def _term(raw: Any, *, field: str) -> Term:
    t = _obj(raw, field=field)
    exprs = tuple(
        _requirement(e, field=f"{field}.matchExpressions[{i}]", fields=False)
        for i, e in enumerate(_list(t.get("matchExpressions"), field=f"{field}.matchExpressions"))
    )
    flds = tuple(
        _requirement(e, field=f"{field}.matchFields[{i}]", fields=True)
        for i, e in enumerate(_list(t.get("matchFields"), field=f"{field}.matchFields"))
    )
    return Term(exprs, flds)


def _affinity(spec: Mapping[str, Any]) -> tuple[tuple[Term, ...] | None, tuple[tuple[int, Term], ...]]:
    base = "spec.affinity.nodeAffinity"
    na = _obj(_obj(spec.get("affinity"), field="spec.affinity").get("nodeAffinity"), field=base)
    required: tuple[Term, ...] | None = None
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        f = f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
        terms = _list(_obj(req, field=f).get("nodeSelectorTerms"), field=f"{f}.nodeSelectorTerms")
        required = tuple(_term(t, field=f"{f}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))
    preferred = []
    f = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, p in enumerate(_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), field=f)):
        p = _obj(p, field=f"{f}[{i}]")
        weight = p.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise InvalidField(f"{f}[{i}].weight", weight, "must be an integer from 1 to 100")
        preferred.append((weight, _term(p.get("preference"), field=f"{f}[{i}].preference")))
    return required, tuple(preferred)


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(_list(spec.get("tolerations"), field="spec.tolerations")):
        t = _obj(t, field=f"spec.tolerations[{i}]")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise InvalidField(f"spec.tolerations[{i}].operator", op, "must be Equal or Exists")
        effect = t.get("effect") or ""
        if effect and effect not in _EFFECTS:
            raise InvalidField(f"spec.tolerations[{i}].effect", effect, f"must be empty or one of {sorted(_EFFECTS)}")
        out.append(Toleration(str(t.get("key") or ""), op, str(t.get("value") or ""), effect))
    return tuple(out)


def pod_from_api(
    obj: Mapping[str, Any],
    *,
    gang: str | None,
    role: str | None = None,
    rank: int | None = None,
    ours: bool,
) -> PodRecord:
    meta = _obj(obj.get("metadata"), field="metadata")
    spec = _obj(obj.get("spec"), field="spec")
    status = _obj(obj.get("status"), field="status")
    name = meta.get("name")
    namespace = meta.get("namespace") or "default"
    if not isinstance(name, str) or not name:
        raise InvalidField("metadata.name", name, "must be a non-empty string")
    priority = spec.get("priority", 0) or 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise InvalidField("spec.priority", priority, "must be an integer")
    created_raw = meta.get("creationTimestamp")
    created = parse_rfc3339(created_raw, field="metadata.creationTimestamp") if created_raw else 0.0
    required, preferred = _affinity(spec)
    sclass = scheduling_class(
        pod_requests(spec),
        node_selector=tuple(sorted(_str_map(spec.get("nodeSelector"), field="spec.nodeSelector").items())),
        required=required,
        preferred=preferred,
        tolerations=_tolerations(spec),
    )
    annotations = meta.get("annotations") or {}
    node_name = spec.get("nodeName") or None
    nominated = status.get("nominatedNodeName") or None
    return PodRecord(
        namespace=sys.intern(str(namespace)),
        name=str(name),
        uid=str(meta.get("uid", "")),
        sclass=sclass,
        priority=priority,
        preemption_policy=sys.intern(str(spec.get("preemptionPolicy") or "PreemptLowerPriority")),
        created=created,
        node_name=sys.intern(node_name) if isinstance(node_name, str) else None,
        phase=sys.intern(str(status.get("phase") or "Pending")),
        nominated_node=nominated if isinstance(nominated, str) else None,
        gang=sys.intern(gang) if gang is not None else None,
        role=sys.intern(role) if role is not None else None,
        rank=rank,
        ours=ours,
        timed_out=isinstance(annotations, Mapping) and annotations.get(TIMEOUT_ANNOTATION) == "true",
    )


def resources_of(pod: PodRecord) -> Resources:
    return dict(pod.sclass.requests)
