"""kube-scheduler's InterPodAffinity score for our pods (pkg/scheduler/framework/plugins/interpodaffinity
scoring.go), over the pod counts of core/fit/pod_counts.py, as a node preference of the capacity indexes
(core/fit/capacity.py adds it to the class's static preference, core/fit/matching.py `preference`).

Contract:
- `score(cls, labels, usage) -> int`: for a node (by its labels), the sum over the class's preferred terms
  (`SchedulingClass.pod_preferred`: (weight, term), anti-affinity terms with a negative weight) of the weight
  times the pods matching the term in the node's domain of the term's topology key (0 when the node lacks the
  key), every pod counted: the store's (bound, leaving, assumed, binding, reserved) and the cycle's tentative
  placements (`usage.overlay`, so a gang's members placed earlier in the cycle count). This is scoring.go's
  raw score (processExistingPod: each existing pod matching a term adds the term's weight to its node's
  domain); it is not normalized to 0-100 (normalizing keeps the order of nodes) and is summed with the node
  affinity and taint preference as it is.
- Not counted (documented in docs/pod-constraints.md): the symmetric part of scoring.go, existing pods' own
  preferred terms (and required affinity terms, hardPodAffinityWeight) that match the incoming pod.
- `terms(cls, counts)`: (signed weight, Counter, topology key) per term (core/placement/score_place.py reads them).
- `PodPreference`: the capacity indexes' hook (a `NodeFilter`, core/fit/filters.py, that never limits):
  `applies(cls)` when the class has preferred terms; `touched(cls, counts, changes)`: the nodes of the domains
  the counts' changes touch, whose score the indexes then recompute (a placement in a zone re-scores the zone).
Cost: one dict lookup per term and node scored; pods without preferred pod terms pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gangsched.core.fit.pod_counts import Change, Counter, PodCounts
from gangsched.core.records.records import SchedulingClass

if TYPE_CHECKING:
    from gangsched.core.fit.usage import Usage

NAME = "InterPodAffinity score"
_UNLIMITED = 1 << 30


@dataclass(slots=True)
class _State:
    terms: tuple[tuple[int, Counter, str], ...]  # (signed weight, pods matching the term, topology key)
    gen: int


def _state(cls: SchedulingClass, counts: PodCounts) -> _State:
    st = counts.memo.get((NAME, cls.id))
    if not isinstance(st, _State) or st.gen != counts.gen:
        terms = tuple(
            (w, counts.counter((t.selector,), [t.topology_key]), t.topology_key) for w, t in cls.pod_preferred
        )
        st = counts.memo[(NAME, cls.id)] = _State(terms, counts.gen)
    return st


def terms(cls: SchedulingClass, counts: PodCounts) -> tuple[tuple[int, Counter, str], ...]:
    """The class's terms as (signed weight, the counter of the pods matching it, topology key)."""
    return _state(cls, counts).terms


def score(cls: SchedulingClass, labels: Mapping[str, str], usage: Usage) -> int:
    counts, overlay = usage.counts, usage.overlay
    if counts is None or not cls.pod_preferred:
        return 0
    total = 0
    for weight, c, key in _state(cls, counts).terms:
        value = labels.get(key)
        if value is not None:
            n = overlay.domain(c, key, value) if overlay is not None else c.by_domain[key].get(value, 0)
            total += weight * n
    return total


class PodPreference:
    name = NAME
    domains = True

    def applies(self, cls: SchedulingClass) -> bool:
        return bool(cls.pod_preferred)

    def limit(self, cls: SchedulingClass, node: str, usage: Usage) -> int:
        return _UNLIMITED  # a score, never a filter

    def reason(self, cls: SchedulingClass, node: str, usage: Usage) -> str | None:
        return None

    def touched(self, cls: SchedulingClass, counts: PodCounts, changes: list[Change]) -> set[str] | None:
        keys: dict[int, set[str]] = {}
        for _, c, key in _state(cls, counts).terms:
            keys.setdefault(c.id, set()).add(key)
        out: set[str] = set()
        seen: set[tuple[str, str]] = set()
        for cid, node in changes:
            found = keys.get(cid)
            rec = counts.nodes.get(node) if found is not None and node is not None else None
            if rec is None or found is None:
                continue
            for key in found:
                value = rec.labels.get(key)
                if value is not None and (key, value) not in seen:
                    seen.add((key, value))
                    out.update(counts.nodes_in(key, value))
        return out


SCORER = PodPreference()
