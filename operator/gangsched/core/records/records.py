"""Compact, immutable-by-convention records of nodes and pods: what the core knows of them (built by models/).

Contract:
- `NodeRecord` (name, allocatable in canonical units, labels, taints, unschedulable); `PodRecord` (identity,
  priority, times, node, phase, nomination, gang/role/rank, labels, `gated`, `unsupported`, `holds`, its class).
- `ClassRegistry` (one per SchedulerState, no process-wide one): `scheduling_class(requests, *, node_selector, ...)`
  interns a pod's constraints and requests (`pods: 1` added) into a `SchedulingClass` (same constraints, same
  object, a small `id`, its `registry`); `with_required`, `with_requests`; `register_label_keys(keys)` /
  `label_keys_gen()` / `with_labels(cls, namespace, labels)` / `projected(pod)`: the label keys pod selectors read.
- `Taint`, `Toleration`, `Requirement`, `Term`, `HostPort`, `requirement_matches`, `LabelSelector`, `PodSelector`,
  `PodTerm`, `SpreadConstraint`: what pods declare, each matching with Kubernetes semantics.
Records are slots dataclasses: never mutate one, `dataclasses.replace` it. More: docs/modules.md#corerecordsrecordspy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gangsched.core.values.resources import PODS

Labels = tuple[tuple[str, str], ...]  # a pod's labels, sorted pairs

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class Taint(NamedTuple):
    key: str
    value: str
    effect: str


class Toleration(NamedTuple):
    key: str  # "" with operator Exists tolerates every taint
    operator: str  # "Equal" | "Exists" | "Lt" | "Gt"
    value: str
    effect: str  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        """k8s.io/api core/v1 toleration.go ToleratesTaint (TaintTolerationComparisonOperators on): Lt tolerates a
        taint whose value is a smaller integer, Gt a larger one; either value not a canonical decimal int64
        (apimachinery content.IsDecimalInteger) tolerates nothing."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Lt", "Gt"):
            mine, theirs = decimal_int64(self.value), decimal_int64(taint.value)
            if mine is None or theirs is None:
                return False
            return theirs < mine if self.operator == "Lt" else theirs > mine
        return self.value == taint.value


_INT64 = 1 << 63


def decimal_int64(value: str) -> int | None:
    """An int64 in canonical decimal form ("0", "-456", no leading zeros or "+"), else None
    (apimachinery pkg/api/validate/content/decimal_int.go IsDecimalInteger, then strconv.ParseInt(v, 10, 64))."""
    digits = value[1:] if value.startswith("-") else value
    if not digits.isascii() or not digits.isdigit() or (digits[0] == "0" and value != "0"):
        return None
    number = int(value)
    return number if -_INT64 <= number < _INT64 else None


class HostPort(NamedTuple):
    """One host port a pod asks for, sanitized as kube-scheduler's HostPortInfo does (hostIP "" is 0.0.0.0,
    protocol "" is TCP)."""

    ip: str
    protocol: str
    port: int


class Requirement(NamedTuple):
    key: str
    operator: str
    values: tuple[str, ...]


class Term(NamedTuple):
    """A nodeSelectorTerm: every expression and every field requirement must match."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]  # matchFields: only key metadata.name is defined


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    op = req.operator
    if op == "Exists":
        return req.key in labels
    if op == "DoesNotExist":
        return req.key not in labels
    value = labels.get(req.key)
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if value is None:
        return False
    try:
        have = int(value)
    except ValueError:
        return False
    want = int(req.values[0])
    return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    labels: tuple[tuple[str, str], ...]  # matchLabels
    expressions: tuple[Requirement, ...]  # matchExpressions

    @property
    def empty(self) -> bool:
        return not (self.labels or self.expressions)

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.labels:
            if labels.get(key) != value:
                return False
        return all(requirement_matches(req, labels) for req in self.expressions)


NamespaceLabels = Mapping[str, Mapping[str, str]]  # namespace -> its labels


@dataclass(frozen=True, slots=True)
class PodSelector:
    namespaces: frozenset[str] | None  # None: every namespace
    selector: LabelSelector | None  # None: a nil selector, matches nothing
    namespace_selector: LabelSelector | None = None  # also the namespaces whose labels it matches

    def matches(self, namespace: str, labels: Mapping[str, str], spaces: NamespaceLabels) -> bool:
        if self.selector is None:
            return False
        if self.namespaces is not None and namespace not in self.namespaces:
            ns_sel = self.namespace_selector
            if ns_sel is None or namespace not in spaces or not ns_sel.matches(spaces[namespace]):
                return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class PodTerm:
    """A required pod affinity or anti-affinity term, its namespaces resolved (the pod's own when none is given)
    and matchLabelKeys/mismatchLabelKeys merged into its selector."""

    selector: PodSelector
    topology_key: str


class SpreadConstraint(NamedTuple):
    max_skew: int
    topology_key: str
    namespace: str
    selector: LabelSelector | None  # None: a nil labelSelector (matches no pod)
    self_match: bool
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy (default Honor)
    honor_taints: bool = False  # nodeTaintsPolicy (default Ignore)
    hard: bool = True  # DoNotSchedule (a filter); False: ScheduleAnyway (a preference, never a refusal)

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """A pod with these namespace and labels counts for the constraint (countPodsMatchSelector)."""
        return self.selector is not None and namespace == self.namespace and self.selector.matches(labels)


@dataclass(frozen=True, slots=True, eq=False)
class SchedulingClass:
    """The interned requests + constraints shared by every pod that has them (an equivalence class)."""

    registry: ClassRegistry = dataclasses.field(repr=False)  # the one that interned it (ids are per registry)
    id: int
    requests: Mapping[str, int]  # canonical units, includes pods: 1
    node_selector: tuple[tuple[str, str], ...]
    required: tuple[Term, ...] | None  # None: no required node affinity
    preferred: tuple[tuple[int, Term], ...]
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...] = ()
    affinity: tuple[PodTerm, ...] = ()  # required pod affinity terms (core/fit/affinity.py)
    anti_affinity: tuple[PodTerm, ...] = ()  # required pod anti-affinity terms
    spread: tuple[SpreadConstraint, ...] = ()  # topology spread constraints (core/fit/pod_spread.py)
    pod_preferred: tuple[tuple[int, PodTerm], ...] = ()  # preferred pod (anti-)affinity, anti negative (pod_score)
    namespace: str = ""  # the pods' namespace, once some selector reads pods (see `with_labels`)
    labels: Labels = ()  # the pods' labels that some selector reads

    @property
    def constrained(self) -> bool:
        return bool(self.node_selector or self.required is not None)


class ClassRegistry:
    """The scheduling classes interned so far, the label keys pod selectors read and the DRA device shapes: what
    makes a class id (its position, never reused) and a class's namespace and labels (`with_labels`). A class
    belongs to one registry (`SchedulingClass.registry`): the store that holds its pods reads the same one
    (`ClusterStore.classes`, each SchedulerState's own unless given)."""

    __slots__ = ("_classes", "_keys", "_label_gen", "_label_keys", "shapes")

    def __init__(self) -> None:
        self._classes: dict[tuple[Any, ...], SchedulingClass] = {}
        self._keys: list[tuple[Any, ...]] = []  # class id -> its interning key
        # Label keys some pod selector reads (pod affinity terms, spread constraints), only growing: a class carries
        # its pods' namespace and their labels of these keys, so a filter can match a class (the workspace places
        # classes, not pods) as it would match one of its pods.
        self._label_keys: dict[str, None] = {}
        self._label_gen = 0
        # DRA device shapes its classes' requests name as resources: resource name -> (device class, selectors)
        # (core/devices/index.py Shapes writes and reads it)
        self.shapes: dict[str, tuple[str, tuple[str | None, ...]]] = {}

    def scheduling_class(
        self,
        requests: Mapping[str, int],
        *,
        node_selector: tuple[tuple[str, str], ...] = (),
        required: tuple[Term, ...] | None = None,
        preferred: tuple[tuple[int, Term], ...] = (),
        tolerations: tuple[Toleration, ...] = (),
        host_ports: tuple[HostPort, ...] = (),
        affinity: tuple[PodTerm, ...] = (),
        anti_affinity: tuple[PodTerm, ...] = (),
        spread: tuple[SpreadConstraint, ...] = (),
        pod_preferred: tuple[tuple[int, PodTerm], ...] = (),
    ) -> SchedulingClass:
        """The interned class of these requests and constraints (ids are never reused)."""
        req = dict(requests)
        req.setdefault(PODS, 1)
        key = (tuple(sorted(req.items())), node_selector, required, preferred, tolerations, host_ports)
        return self._intern((*key, affinity, anti_affinity, spread, pod_preferred, "", ()), req)

    def _intern(self, key: tuple[Any, ...], req: Mapping[str, int]) -> SchedulingClass:
        cls = self._classes.get(key)
        if cls is None:
            cls = SchedulingClass(self, len(self._classes), req, *key[1:])
            self._classes[key] = cls
            self._keys.append(key)
        return cls

    def _key(self, cls: SchedulingClass) -> tuple[Any, ...]:
        """The interning key of one of our classes (a class of another registry: ValueError, ids overlap)."""
        if cls.registry is not self:
            raise ValueError(f"scheduling class #{cls.id} was interned in another ClassRegistry than this one")
        return self._keys[cls.id]

    def with_required(self, cls: SchedulingClass, required: tuple[Term, ...] | None) -> SchedulingClass:
        """The interned class equal to `cls` but for its required node affinity (a pod's volumes add theirs)."""
        key = list(self._key(cls))
        key[2] = required  # (the interning key: requests, node_selector, required, ...)
        return self._intern(tuple(key), cls.requests)

    def with_requests(self, cls: SchedulingClass, extra: Mapping[str, int]) -> SchedulingClass:
        """The interned class equal to `cls` with `extra` added to its requests (a pod's DRA device demand)."""
        if not extra:
            return cls
        req = dict(cls.requests)
        for r, q in extra.items():
            req[r] = req.get(r, 0) + q
        key = list(self._key(cls))
        key[0] = tuple(sorted(req.items()))
        return self._intern(tuple(key), req)

    def register_label_keys(self, keys: Iterable[str]) -> None:
        """Some selector reads these label keys (called by the parsers; the first call also turns namespaces on)."""
        for key in keys:
            if key not in self._label_keys:
                self._label_keys[key] = None
                self._label_gen += 1
        if not self._label_gen:
            self._label_gen = 1

    def label_keys_gen(self) -> int:
        """Moves whenever a label key is registered (0: no selector reads pods yet)."""
        return self._label_gen

    def with_labels(self, cls: SchedulingClass, namespace: str, labels: Labels) -> SchedulingClass:
        """The class of a pod of `cls` in `namespace` with `labels`, projected on the registered label keys (the
        namespace and labels only once some selector reads pods). Shares the class's dicts."""
        if not self._label_gen:
            return cls
        keys = self._label_keys
        shown = tuple(kv for kv in labels if kv[0] in keys)
        if shown == cls.labels and namespace == cls.namespace:
            return cls
        base = self._key(cls)
        return self._intern((*base[:-2], namespace, shown), cls.requests)

    def projected(self, pod: PodRecord) -> PodRecord:
        """Our pod with its class carrying its namespace and the labels pod selectors read (`with_labels`). A pod
        whose class another registry interned: ValueError (the store reading this registry would mistake it)."""
        if pod.sclass.registry is not self:
            raise ValueError(
                f"pod {pod.key}: its scheduling class #{pod.sclass.id} was interned in another ClassRegistry than its "
                "store's (parse it with classes=SchedulerState.classes)"
            )
        if not pod.ours or not self._label_gen:
            return pod
        sclass = self.with_labels(pod.sclass, pod.namespace, pod.labels)
        return pod if sclass is pod.sclass else dataclasses.replace(pod, sclass=sclass)


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
    gated: bool = False  # spec.schedulingGates not empty
    unsupported: tuple[str, ...] = ()  # constraints not evaluated (field paths), see models/pod.py
    unready: bool = False  # one of them is required: the pod is unready (never placed) until it goes
    unready_reasons: tuple[str, ...] = ()  # why else it is unready, as sentences (a claim not bound: state/volumes.py)
    waits: bool = False  # unready only until the cluster makes what it needs (a DRA claim not seen yet): no Warning
    grace: float = 30.0  # spec.terminationGracePeriodSeconds (the API's default 30): how long its eviction may take
    run_seconds: float | None = None  # declared run time (activeDeadlineSeconds, expected-duration): backfill
    started: float | None = None  # status.startTime (epoch seconds)
    labels: Labels = ()  # metadata.labels, sorted pairs (pod selectors match them: core/fit/pod_counts.py)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def requests(self) -> Mapping[str, int]:
        return self.sclass.requests

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


def pods_by_class(pods: Iterable[PodRecord]) -> dict[int, list[PodRecord]]:
    """class id -> the pods of that class, in their order; classes in the order they first appear."""
    out: dict[int, list[PodRecord]] = {}
    for pod in pods:
        out.setdefault(pod.sclass.id, []).append(pod)
    return out
