"""Pod affinity and anti-affinity terms (required and preferred) of a pod spec, parsed into the core's `PodTerm`s
(core/fit/pod_counts.py), as kube-scheduler reads them (framework/types.go newAffinityTerm).

Contract:
- `pod_affinity(spec, *, namespace, labels, classes) -> PodAffinity(affinity, anti, preferred)`: the required terms
  and the preferred ones as (weight, term) (anti-affinity weights negated). A term's namespaces: `namespaces` plus
  those `namespaceSelector` matches, else the pod's own; a nil `labelSelector` matches nothing; `matchLabelKeys` /
  `mismatchLabelKeys` merged in from the pod's labels (KEP-3633). The label keys the selectors read are registered
  in `classes` (the ClassRegistry of the pod's SchedulerState, core/records/records.py).
Bad input raises InvalidField naming the field path (e.g.
`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey`).
More: docs/modules.md#modelspod_affinitypy.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

from gangsched.core import ClassRegistry, InvalidField, LabelSelector, PodSelector, PodTerm, Requirement
from gangsched.models.fields import as_list, as_object
from gangsched.models.selectors import label_selector

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class PodAffinity(NamedTuple):
    affinity: tuple[PodTerm, ...]
    anti: tuple[PodTerm, ...]
    preferred: tuple[tuple[int, PodTerm], ...] = ()  # (weight, term), anti-affinity terms with a negative weight


def _keys(raw: Any, *, field: str) -> tuple[str, ...]:
    keys = as_list(raw, field=field)
    if not all(isinstance(k, str) and k for k in keys):
        raise InvalidField(field, keys, "must be a list of label keys")
    return tuple(keys)


def _selector(
    term: Mapping[str, Any], labels: Mapping[str, str], classes: ClassRegistry, *, field: str
) -> LabelSelector | None:
    raw = term.get("labelSelector")
    match = _keys(term.get("matchLabelKeys"), field=f"{field}.matchLabelKeys")
    mismatch = _keys(term.get("mismatchLabelKeys"), field=f"{field}.mismatchLabelKeys")
    classes.register_label_keys((*match, *mismatch))
    if raw is None:
        return None
    sel = label_selector(raw, field=f"{field}.labelSelector")
    merged = [Requirement(k, "In", (labels[k],)) for k in match if k in labels]
    merged += [Requirement(k, "NotIn", (labels[k],)) for k in mismatch if k in labels]
    if merged:
        sel = LabelSelector(sel.labels, (*sel.expressions, *merged))
    classes.register_label_keys([k for k, _ in sel.labels] + [r.key for r in sel.expressions])
    return sel


def _term(raw: Any, namespace: str, labels: Mapping[str, str], classes: ClassRegistry, *, field: str) -> PodTerm:
    term = as_object(raw, field=field)
    key = term.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InvalidField(f"{field}.topologyKey", key, "must be a non-empty label key")
    names = as_list(term.get("namespaces"), field=f"{field}.namespaces")
    if not all(isinstance(n, str) for n in names):
        raise InvalidField(f"{field}.namespaces", names, "must be a list of namespace names")
    ns_raw = term.get("namespaceSelector")
    selector = _selector(term, labels, classes, field=field)
    spaces = frozenset(sys.intern(n) for n in names)
    if ns_raw is None:
        return PodTerm(PodSelector(spaces or frozenset({namespace}), selector), sys.intern(key))
    ns_sel = label_selector(ns_raw, field=f"{field}.namespaceSelector")
    if ns_sel.empty:  # {}: every namespace
        return PodTerm(PodSelector(None, selector), sys.intern(key))
    return PodTerm(PodSelector(spaces, selector, ns_sel), sys.intern(key))


def _terms(
    affinity: Mapping[str, Any], kind: str, namespace: str, labels: Mapping[str, str], classes: ClassRegistry
) -> tuple[PodTerm, ...]:
    where = f"spec.affinity.{kind}"
    section = as_object(affinity.get(kind), field=where)
    raw_terms = as_list(section.get(REQUIRED), field=f"{where}.{REQUIRED}")
    return tuple(
        _term(raw, namespace, labels, classes, field=f"{where}.{REQUIRED}[{i}]") for i, raw in enumerate(raw_terms)
    )


def _weighted(
    affinity: Mapping[str, Any], kind: str, namespace: str, labels: Mapping[str, str], classes: ClassRegistry
) -> list[tuple[int, PodTerm]]:
    where = f"spec.affinity.{kind}.{PREFERRED}"
    raw_terms = as_list(as_object(affinity.get(kind), field=f"spec.affinity.{kind}").get(PREFERRED), field=where)
    sign = -1 if kind == "podAntiAffinity" else 1
    out: list[tuple[int, PodTerm]] = []
    for i, raw in enumerate(raw_terms):
        item = as_object(raw, field=f"{where}[{i}]")
        weight = item.get("weight")
        if type(weight) is not int or not 1 <= weight <= 100:  # validation.go validateWeightedPodAffinityTerms
            raise InvalidField(f"{where}[{i}].weight", weight, "must be an integer in the range 1-100")
        term = item.get("podAffinityTerm")
        out.append((sign * weight, _term(term, namespace, labels, classes, field=f"{where}[{i}].podAffinityTerm")))
    return out


def pod_affinity(
    spec: Mapping[str, Any], *, namespace: str, labels: Mapping[str, str], classes: ClassRegistry
) -> PodAffinity:
    """(The label keys the selectors read are registered in `classes`, the registry the pod's class is interned in.)"""
    affinity = as_object(spec.get("affinity"), field="spec.affinity")
    aff = _terms(affinity, "podAffinity", namespace, labels, classes)
    preferred = _weighted(affinity, "podAffinity", namespace, labels, classes) + _weighted(
        affinity, "podAntiAffinity", namespace, labels, classes
    )
    return PodAffinity(aff, _terms(affinity, "podAntiAffinity", namespace, labels, classes), tuple(preferred))
