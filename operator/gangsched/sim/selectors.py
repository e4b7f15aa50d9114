"""Label and field selectors of list/watch requests, and LabelSelector objects (PDBs, etc.).

Contract:
- `parse_label_selector(text)` parses the query-string form (`a=b,c!=d,e in (x,y),f notin (z),g,!h`, also `==`)
  into a `LabelSelector`; bad syntax raises SelectorError naming the parameter, the value and what is allowed.
- `parse_field_selector(text, kind=(group, kind), selectable=())` parses `field=value,field!=value` (also `==`).
  With `kind`, only the labels the real apiserver supports for that kind are accepted (KIND_FIELDS; every kind:
  metadata.name and metadata.namespace; a CRD adds its selectableFields), others raise SelectorError
  `field label not supported: X` (the REST layer answers 400). Values are compared as strings (missing -> "",
  booleans "true"/"false"). Without `kind`, any dotted path is accepted (in-process use).
- `selector_from_object(sel)` turns a metav1.LabelSelector dict (matchLabels, matchExpressions) into one.
- Selectors are immutable and `matches(obj)` is pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector that cannot be parsed; the message names the parameter, the value and what is allowed."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!exists":
            return self.key not in labels
        if op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" match when the label is absent, as in Kubernetes
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    match_nothing: bool = False

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.match_nothing

    def matches(self, obj: dict[str, Any]) -> bool:
        if self.match_nothing:
            return False
        if not self.requirements:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def parse_label_selector(text: str | None, *, param: str = "labelSelector") -> LabelSelector:
    if not text or not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for part in _split_top(text):
        if not part.strip():
            raise SelectorError(f"invalid {param} {text!r}: empty requirement")
        m = _SET_RE.match(part)
        if m:
            values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
            reqs.append(Requirement(m.group(1), m.group(3), values))
            continue
        m = _EQ_RE.match(part)
        if m:
            op = "=" if m.group(3) in ("=", "==") else "!="
            reqs.append(Requirement(m.group(1), op, frozenset({m.group(4)})))
            continue
        m = _EXISTS_RE.match(part)
        if m:
            reqs.append(Requirement(m.group(2), "!exists" if m.group(1) else "exists"))
            continue
        raise SelectorError(
            f"invalid {param} {text!r}: cannot parse {part.strip()!r}; allowed: key=value, key==value, key!=value, "
            "key in (v1,v2), key notin (v1,v2), key, !key"
        )
    return LabelSelector(tuple(reqs))


def selector_from_object(sel: dict[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector; None matches nothing, {} matches everything (as for PDBs in policy/v1)."""
    if sel is None:
        return LabelSelector(match_nothing=True)
    reqs: list[Requirement] = []
    for key, value in (sel.get("matchLabels") or {}).items():
        reqs.append(Requirement(str(key), "=", frozenset({str(value)})))
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in sel.get("matchExpressions") or []:
        operator = expr.get("operator")
        if operator not in ops:
            raise SelectorError(
                f"invalid selector.matchExpressions operator {operator!r}; allowed: In, NotIn, Exists, DoesNotExist"
            )
        reqs.append(Requirement(str(expr.get("key", "")), ops[operator], frozenset(map(str, expr.get("values") or ()))))
    return LabelSelector(tuple(reqs))


SUPPORTED_FIELDS = ("metadata.name", "metadata.namespace", "spec.nodeName", "spec.schedulerName", "status.phase")

# The field labels a real kube-apiserver (v1.32) accepts per (group, kind), besides what every kind accepts
# (metadata.name, metadata.namespace: DefaultMetaV1FieldSelectorConversion in
# staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/conversion.go). Sources: pkg/apis/core/v1/conversion.go
# (AddFieldLabelConversionFunc... per kind), pkg/registry/core/pod/strategy.go (PodToSelectableFields),
# pkg/registry/core/event/strategy.go (ToSelectableFields), pkg/registry/core/node/strategy.go,
# pkg/registry/core/namespace/strategy.go, pkg/registry/core/secret/strategy.go, pkg/apis/batch/v1/conversion.go,
# pkg/apis/apps/v1/conversion.go. A kind whose conversion function lists its own labels replaces the default set
# (nodes and namespaces do not accept metadata.namespace).
_META = ("metadata.name", "metadata.namespace")
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
KIND_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): (
        *_META,
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ),
    ("", "Event"): _META + _EVENT_FIELDS,
    ("events.k8s.io", "Event"): _META + _EVENT_FIELDS,
    ("", "Node"): ("metadata.name", "spec.unschedulable"),
    ("", "Namespace"): ("metadata.name", "status.phase"),
    ("", "Secret"): (*_META, "type"),
    ("", "ReplicationController"): (*_META, "status.replicas"),
    ("apps", "ReplicaSet"): (*_META, "status.replicas"),
    ("batch", "Job"): (*_META, "status.successful"),
    ("certificates.k8s.io", "CertificateSigningRequest"): ("metadata.name", "spec.signerName"),
}


def _path_value(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = obj
    for p in path:
        cur = cur.get(p) if isinstance(cur, dict) else None
        if cur is None:
            return None
    return cur


def _bool_field(*path: str) -> Callable[[dict[str, Any]], str]:
    return lambda obj: "true" if _path_value(obj, path) is True else "false"


def _first_pod_ip(obj: dict[str, Any]) -> str:
    ips = _path_value(obj, ("status", "podIPs"))
    if isinstance(ips, list) and ips and isinstance(ips[0], dict):
        return str(ips[0].get("ip") or "")
    return str(_path_value(obj, ("status", "podIP")) or "")


# Fields whose selectable value is not the plain string at that path (the real *ToSelectableFields functions):
# booleans print as "true"/"false" (absent: "false"), status.podIP is podIPs[0], status.podIPs is not in the
# pod's field set (accepted by the conversion function, so it always reads ""), an events.k8s.io/v1 Event is
# stored as a core Event (regarding -> involvedObject, deprecatedSource -> source, reportingController ->
# reportingComponent).
_EXTRACTORS: dict[tuple[str, str, str], Callable[[dict[str, Any]], str]] = {
    ("", "Pod", "spec.hostNetwork"): _bool_field("spec", "hostNetwork"),
    ("", "Pod", "status.podIP"): _first_pod_ip,
    ("", "Pod", "status.podIPs"): lambda obj: "",
    ("", "Node", "spec.unschedulable"): _bool_field("spec", "unschedulable"),
    ("", "Event", "source"): lambda obj: str(_path_value(obj, ("source", "component")) or ""),
    ("events.k8s.io", "Event", "source"): lambda obj: str(_path_value(obj, ("deprecatedSource", "component")) or ""),
    ("events.k8s.io", "Event", "reportingComponent"): lambda obj: str(obj.get("reportingController") or ""),
}
for _f in _EVENT_FIELDS[:7]:
    _EXTRACTORS[("events.k8s.io", "Event", _f)] = (
        lambda key: lambda obj: str(_path_value(obj, ("regarding", key)) or "")
    )(_f.split(".", 1)[1])


def supported_fields(group: str, kind: str, *, selectable: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The field labels a list/watch of this kind accepts (a CRD adds its version's selectableFields)."""
    base = KIND_FIELDS.get((group, kind), _META)
    return base + tuple(f.lstrip(".") for f in selectable)


@dataclass(frozen=True)
class FieldRequirement:
    path: tuple[str, ...]
    negate: bool
    value: str
    extract: Callable[[dict[str, Any]], str] | None = None  # for computed selectable values (see _EXTRACTORS)

    def matches(self, obj: dict[str, Any]) -> bool:
        actual: str
        if self.extract is not None:
            actual = self.extract(obj)
        else:
            cur = _path_value(obj, self.path)
            actual = "" if cur is None else (str(cur).lower() if isinstance(cur, bool) else str(cur))
        return (actual == self.value) != self.negate


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: dict[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def exact_name(self) -> str | None:
        """The name when the selector pins metadata.name (a fast path for kubectl's single-object watch)."""
        for r in self.requirements:
            if r.path == ("metadata", "name") and not r.negate:
                return r.value
        return None


_FIELD_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.]*)\s*(==|=|!=)\s*([^,]*?)\s*$")


def parse_field_selector(
    text: str | None,
    *,
    param: str = "fieldSelector",
    kind: tuple[str, str] | None = None,
    selectable: tuple[str, ...] = (),
) -> FieldSelector:
    """Parse a field selector; with `kind` (group, kind) only that kind's supported labels are accepted, others
    raise SelectorError("field label not supported: X") as the real apiserver answers (400)."""
    if not text or not text.strip():
        return FieldSelector()
    allowed = supported_fields(kind[0], kind[1], selectable=selectable) if kind is not None else None
    reqs: list[FieldRequirement] = []
    for part in text.split(","):
        m = _FIELD_RE.match(part)
        if not m:
            raise SelectorError(
                f"invalid {param} {text!r}: cannot parse {part.strip()!r}; allowed: field=value, field==value, "
                f"field!=value over {', '.join(allowed or SUPPORTED_FIELDS)}"
            )
        label = m.group(1)
        extract = None
        if allowed is not None and kind is not None:
            if label not in allowed:
                raise SelectorError(f"field label not supported: {label}")
            extract = _EXTRACTORS.get((kind[0], kind[1], label))
        reqs.append(FieldRequirement(tuple(label.split(".")), m.group(2) == "!=", m.group(3), extract))
    return FieldSelector(tuple(reqs))
