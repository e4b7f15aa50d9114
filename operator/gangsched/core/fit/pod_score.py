"""kube-scheduler's InterPodAffinity score for our pods, over the pod counts (core/fit/pod_counts.py), as a node
preference of the capacity indexes (added to core/fit/matching.py's `preference`).

Contract:
- `score(cls, labels, usage) -> int`: the sum over the class's preferred terms of weight (negative for
  anti-affinity) x the pods matching the term in the node's domain (0 without the key), store and cycle overlay
  counted; scoring.go's raw score, not normalized. Existing pods' own preferred terms are not counted.
- `terms(cls, counts)`: (signed weight, Counter, topology key) per term (core/placement/score_place.py).
- `PodPreference`: a never-limiting `NodeFilter` whose `touched` re-scores the domains the counts' changes touch.
Cost: one dict lookup per term and node scored; pods without preferred pod terms pay nothing.
More: docs/modules.md#corefitpod_scorepy.
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
