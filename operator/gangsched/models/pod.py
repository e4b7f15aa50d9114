"""Pods read from the API into the core's `PodRecord` (core/records/records.py): the per-pod hot path (plain dicts as
orjson returns them; no pydantic here).

Contract:
- `pod_from_api(obj, *, gang, role=None, rank=None, ours, classes) -> PodRecord`: identity, priority, times,
  requests (with `pods: 1`), node, phase, nomination, declared run time, labels, `gated`, what gangsched does not
  evaluate (`unsupported`), its constraints interned into a `SchedulingClass` of `classes`. No raw API dict is kept.
- `pod_requests(spec, *, field="spec") -> Resources`: the effective requests as kube-scheduler computes them
  (containers, init containers and sidecars, overhead; a missing request defaults to its limit), without `pods: 1`.
- `pod_fingerprint(meta, spec)`, `pod_with_status(previous, spec, status)`: a bind or phase change re-reads only
  the status (None: parse fully). Bad input raises InvalidField naming the field path.
More: docs/modules.md#modelspodpy.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from gangsched.core import (
    ClassRegistry,
    HostPort,
    InvalidField,
    PodRecord,
    Resources,
    SpreadConstraint,
    Term,
    Toleration,
    add,
    add_into,
    maximum,
    resource_list,
)
from gangsched.models.duration import parse_duration
from gangsched.models.fields import as_list, as_object, str_map
from gangsched.models.keys import EXPECTED_DURATION, KOORD_TIMEOUT
from gangsched.models.node import TAINT_EFFECTS
from gangsched.models.pod_affinity import PodAffinity, pod_affinity
from gangsched.models.pod_spread import spread_constraints
from gangsched.models.selectors import node_selector_term
from gangsched.models.timestamps import parse_time

_NODE_AFFINITY = "spec.affinity.nodeAffinity"
MAX_RUN_SECONDS = 2147483647.0  # a declared run time's maximum (as activeDeadlineSeconds: int32 seconds)
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _required_terms(node_affinity: Mapping[str, Any]) -> tuple[Term, ...] | None:
    raw = node_affinity.get(_REQUIRED)
    if raw is None:
        return None
    where = f"{_NODE_AFFINITY}.{_REQUIRED}"
    terms = as_list(as_object(raw, field=where).get("nodeSelectorTerms"), field=f"{where}.nodeSelectorTerms")
    return tuple(node_selector_term(t, field=f"{where}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))


def _preferred_terms(node_affinity: Mapping[str, Any]) -> tuple[tuple[int, Term], ...]:
    where = f"{_NODE_AFFINITY}.{_PREFERRED}"
    preferred = []
    for i, raw in enumerate(as_list(node_affinity.get(_PREFERRED), field=where)):
        entry = as_object(raw, field=f"{where}[{i}]")
        weight = entry.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise InvalidField(f"{where}[{i}].weight", weight, "must be an integer from 1 to 100")
        preferred.append((weight, node_selector_term(entry.get("preference"), field=f"{where}[{i}].preference")))
    return tuple(preferred)


def _node_affinity(spec: Mapping[str, Any]) -> tuple[tuple[Term, ...] | None, tuple[tuple[int, Term], ...]]:
    affinity = as_object(spec.get("affinity"), field="spec.affinity")
    node_affinity = as_object(affinity.get("nodeAffinity"), field=_NODE_AFFINITY)
    return _required_terms(node_affinity), _preferred_terms(node_affinity)


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    out = []
    for i, raw in enumerate(as_list(spec.get("tolerations"), field="spec.tolerations")):
        toleration = as_object(raw, field=f"spec.tolerations[{i}]")
        op = toleration.get("operator") or "Equal"
        if op not in ("Equal", "Exists", "Lt", "Gt"):
            raise InvalidField(f"spec.tolerations[{i}].operator", op, "must be Equal, Exists, Lt or Gt")
        effect = toleration.get("effect") or ""
        if effect and effect not in TAINT_EFFECTS:
            allowed = f"must be empty or one of {sorted(TAINT_EFFECTS)}"
            raise InvalidField(f"spec.tolerations[{i}].effect", effect, allowed)
        out.append(Toleration(str(toleration.get("key") or ""), op, str(toleration.get("value") or ""), effect))
    return tuple(out)


_PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})


def _container_ports(container: Any, field: str, out: list[HostPort]) -> None:
    if not isinstance(container, Mapping) or not container.get("ports"):
        return
    for i, raw in enumerate(as_list(container.get("ports"), field=f"{field}.ports")):
        port = as_object(raw, field=f"{field}.ports[{i}]")
        host_port = port.get("hostPort") or 0
        if not isinstance(host_port, int) or isinstance(host_port, bool) or not 0 <= host_port <= 65535:
            raise InvalidField(f"{field}.ports[{i}].hostPort", host_port, "must be an integer from 0 to 65535")
        if not host_port:
            continue
        protocol = port.get("protocol") or "TCP"
        if protocol not in _PROTOCOLS:
            raise InvalidField(f"{field}.ports[{i}].protocol", protocol, "must be TCP, UDP or SCTP")
        ip = port.get("hostIP") or "0.0.0.0"
        if not isinstance(ip, str):
            raise InvalidField(f"{field}.ports[{i}].hostIP", ip, "must be a string")
        out.append(HostPort(sys.intern(ip), sys.intern(protocol), host_port))


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """Host ports of the containers and of sidecar init containers (they run as long as the pod). The hot path:
    containers without `ports` cost one lookup."""
    out: list[HostPort] = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        if not isinstance(items, list):  # pod_requests reports a bad type
            continue
        for i, container in enumerate(items):
            if not isinstance(container, Mapping) or not container.get("ports"):
                continue
            if key == "containers" or container.get("restartPolicy") == "Always":
                _container_ports(container, f"spec.{key}[{i}]", out)
    return tuple(out)


def _unsupported(spec: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    """(field paths of the constraints gangsched does not evaluate, whether one of them is required)."""
    found: list[str] = []  # pod affinity, required and preferred: models/pod_affinity.py
    unready = False
    if spec.get("evictionResponders"):  # 1.37: gangsched's preemption deletes the pod, no EvictionRequest first
        found.append("spec.evictionResponders")
    return tuple(found), unready


def _container_requests(container: Any, *, field: str) -> Resources:
    if not isinstance(container, Mapping):
        raise InvalidField(field, container, "must be a container object")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InvalidField(f"{field}.resources", resources, "must be an object with requests/limits")
    requests = resource_list(resources.get("requests"), field=f"{field}.resources.requests")
    limits = resource_list(resources.get("limits"), field=f"{field}.resources.limits")
    for name, amount in limits.items():
        requests.setdefault(name, amount)  # the API server defaults a missing request to the limit
    return requests


def _containers(spec: Mapping[str, Any], key: str, *, field: str) -> Iterable[tuple[str, Any]]:
    items = spec.get(key) or []
    if not isinstance(items, list):
        raise InvalidField(f"{field}.{key}", items, "must be a list of containers")
    return ((f"{field}.{key}[{i}]", c) for i, c in enumerate(items))


def pod_requests(spec: Mapping[str, Any], *, field: str = "spec") -> Resources:
    """Effective requests of a pod spec, as the Kubernetes scheduler computes them."""
    total: Resources = {}
    for path, container in _containers(spec, "containers", field=field):
        add_into(total, _container_requests(container, field=path))
    sidecars: Resources = {}
    init_max: Resources = {}
    for path, container in _containers(spec, "initContainers", field=field):
        request = _container_requests(container, field=path)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            add_into(total, request)
            add_into(sidecars, request)
            effective = dict(sidecars)
        else:
            effective = add(request, sidecars)
        init_max = maximum(init_max, effective)
    total = maximum(total, init_max)
    add_into(total, resource_list(spec.get("overhead"), field=f"{field}.overhead"))
    return {k: v for k, v in total.items() if v}


def _priority(spec: Mapping[str, Any]) -> int:
    priority = spec.get("priority", 0) or 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise InvalidField("spec.priority", priority, "must be an integer")
    return priority


MAX_GRACE_SECONDS = 10**9  # bounds a pathological terminationGracePeriodSeconds (the API's is int64)


def _grace(spec: Mapping[str, Any]) -> float:
    """spec.terminationGracePeriodSeconds: 30 when unset (the API's default), negative counts as 1 (as the
    apiserver's graceful deletion does), bounded; a non-integer is treated as the default (the apiserver's
    validation never lets one through)."""
    raw = spec.get("terminationGracePeriodSeconds")
    if raw is None or not isinstance(raw, int) or isinstance(raw, bool):
        return 30.0
    return float(min(max(raw, 1) if raw < 0 else raw, MAX_GRACE_SECONDS))


def _run_seconds(spec: Mapping[str, Any], annotations: Any, *, strict: bool) -> float | None:
    """The pod's declared run time: spec.activeDeadlineSeconds (the kubelet enforces it) and the annotation
    scheduling.gangsched.io/expected-duration (a Go duration, trusted), the shorter; None when neither is set. A bad
    annotation raises InvalidField when `strict` (our pods), else is not read (others' pods, and the fallback that
    keeps a bad pod's usage counted must never fail on it)."""
    out: list[float] = []
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool) and deadline > 0:
        out.append(float(deadline))
    raw = annotations.get(EXPECTED_DURATION) if isinstance(annotations, Mapping) else None
    if raw is not None:
        try:
            out.append(parse_duration(raw, field=f"metadata.annotations[{EXPECTED_DURATION}]", maximum=MAX_RUN_SECONDS))
        except InvalidField:
            if strict:
                raise
    return min(out) if out else None


def _started(status: Mapping[str, Any]) -> float | None:
    """status.startTime (written by the kubelet); None when unset or unreadable."""
    raw = status.get("startTime")
    try:
        return parse_time(raw, field="status.startTime") if raw else None
    except InvalidField:
        return None


def _optional_name(value: Any) -> str | None:
    return sys.intern(value) if isinstance(value, str) and value else None


def _nominated(status: Mapping[str, Any]) -> str | None:
    nominated = status.get("nominatedNodeName") or None
    return nominated if isinstance(nominated, str) else None


def _phase(status: Mapping[str, Any]) -> str:
    return sys.intern(str(status.get("phase") or "Pending"))


def pod_fingerprint(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> int:
    """A hash of everything pod_from_api and models/gang.py parse_pod_gang read, except nodeName and status."""
    if "nodeName" in spec:
        spec = {k: v for k, v in spec.items() if k != "nodeName"}
    blob = orjson.dumps(
        (meta.get("uid"), meta.get("creationTimestamp"), meta.get("labels"), meta.get("annotations"), spec)
    )
    return hash(blob)


def pod_with_status(previous: PodRecord, spec: Mapping[str, Any], status: Any) -> PodRecord | None:
    """`previous` with spec.nodeName, status.phase and status.nominatedNodeName of a new version of the pod whose
    fingerprint did not move, read as pod_from_api reads them; None when the version needs the full parse (which
    then reports the bad input)."""
    if status is None:
        status = {}
    elif not isinstance(status, Mapping):
        return None
    return dataclasses.replace(
        previous,
        node_name=_optional_name(spec.get("nodeName")),
        phase=_phase(status),
        nominated_node=_nominated(status),
        started=_started(status),
    )


_NO_AFFINITY = PodAffinity((), ())


def _labels(meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    raw = meta.get("labels")
    if not raw or not isinstance(raw, Mapping):
        return ()
    return tuple(sorted(raw.items()))  # JSON keys are strings: sorting never compares values


def _pod_terms(
    spec: Mapping[str, Any], namespace: str, labels: Mapping[str, str], classes: ClassRegistry
) -> tuple[PodAffinity, tuple[SpreadConstraint, ...]]:
    """Its pod affinity terms and topology spread constraints (the label keys their selectors read: in `classes`)."""
    terms = _NO_AFFINITY
    if "affinity" in spec:
        terms = pod_affinity(spec, namespace=namespace, labels=labels, classes=classes)
    spread: tuple[SpreadConstraint, ...] = ()
    if spec.get("topologySpreadConstraints"):
        spread = spread_constraints(spec, namespace=namespace, labels=labels, classes=classes)
    return terms, spread


def pod_from_api(
    obj: Mapping[str, Any],
    *,
    gang: str | None,
    role: str | None = None,
    rank: int | None = None,
    ours: bool,
    classes: ClassRegistry,
) -> PodRecord:
    """(Its class is interned in `classes`: the registry of the SchedulerState the pod goes to.)"""
    meta = as_object(obj.get("metadata"), field="metadata")
    spec = as_object(obj.get("spec"), field="spec")
    status = as_object(obj.get("status"), field="status")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidField("metadata.name", name, "must be a non-empty string")
    created_raw = meta.get("creationTimestamp")
    required, preferred = _node_affinity(spec)
    namespace = sys.intern(str(meta.get("namespace") or "default"))
    labels = _labels(meta)
    terms, spread = _pod_terms(spec, namespace, dict(labels), classes)
    sclass = classes.scheduling_class(
        pod_requests(spec),
        node_selector=tuple(sorted(str_map(spec.get("nodeSelector"), field="spec.nodeSelector").items())),
        required=required,
        preferred=preferred,
        tolerations=_tolerations(spec),
        host_ports=_host_ports(spec),
        affinity=terms.affinity,
        anti_affinity=terms.anti,
        spread=spread,
        pod_preferred=terms.preferred,
    )
    maybe = "evictionResponders" in spec  # (spec.resourceClaims: state/dra.py allocates them)
    unsupported, unready = _unsupported(spec) if maybe else ((), False)
    annotations = meta.get("annotations") or {}
    return PodRecord(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid", "")),
        sclass=sclass,
        priority=_priority(spec),
        preemption_policy=sys.intern(str(spec.get("preemptionPolicy") or "PreemptLowerPriority")),
        created=parse_time(created_raw, field="metadata.creationTimestamp") if created_raw else 0.0,
        node_name=_optional_name(spec.get("nodeName")),
        phase=_phase(status),
        nominated_node=_nominated(status),
        gang=sys.intern(gang) if gang is not None else None,
        role=sys.intern(role) if role is not None else None,
        rank=rank,
        ours=ours,
        timed_out=isinstance(annotations, Mapping) and annotations.get(KOORD_TIMEOUT) == "true",
        gated=bool(spec.get("schedulingGates")),
        unsupported=unsupported,
        unready=unready,
        grace=_grace(spec),
        run_seconds=_run_seconds(spec, annotations, strict=ours),
        started=_started(status),
        labels=labels,
    )
