"""The shared topology ladder (core/topology/ladder.py `climb`, issue 23 item 3: "one topology placer with a pluggable
fit").

Oracles: the network-topology-aware PodGroup design of seed 004 (its strategy table walks the (whole tier, group
tier) pairs (1,1), (2,1), (2,2), (3,1), (3,2), (3,3); hard mode never above highestTierAllowed), and, for the
merge itself, the placer as it was before it (a FROZEN REFERENCE copy below of `_Placer.run` / `_best_domain` from
operator/gangsched/core/topology/placement.py at commit ff4743c): no decision may change.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.core.topology import TopologyMiss, TopologyPlacement, TopologyTree, place
from gangsched.core.topology import placement as topology_placement
from gangsched.core.topology.ladder import Tightness, climb
from tests.unit.core.topology.test_place import scenarios


class _FrozenPlacer(topology_placement._Placer):
    """FROZEN REFERENCE, do not edit or reuse: `_Placer.run` and `_best_domain` verbatim from ff4743c (before the
    ladder moved to core/topology/ladder.py). Only the walk is frozen; the rank layout it calls is the shared one."""

    def run(self, *, highest_tier_allowed: int | None, hard: bool) -> TopologyPlacement | TopologyMiss:
        count, capacity = self.count, self.capacity
        limit = self.top
        if hard and highest_tier_allowed is not None:
            limit = min(highest_tier_allowed, self.top)
        grouping = self.group_size > 1
        for whole_tier in range(1, limit + 1):
            if max(capacity[whole_tier], default=0) < count:
                continue
            if grouping:
                for group_tier in range(1, whole_tier):
                    found = self._grouped_candidates(whole_tier, group_tier)
                    if found:
                        domain = self._best_domain(whole_tier, found)
                        return self._finish(whole_tier, group_tier, domain, group_tier=group_tier)
            found = [d for d in range(len(capacity[whole_tier])) if capacity[whole_tier][d] >= count]
            domain = self._best_domain(whole_tier, found)
            return self._finish(whole_tier, whole_tier, domain, group_tier=whole_tier if grouping else 0)
        return self._miss(highest_tier_allowed)

    def _best_domain(self, whole_tier: int, candidates: list[int]) -> int:
        capacity, parent_at, top = self.capacity, self.tree.parent_at, self.top

        def key(domain: int) -> tuple[int, ...]:
            out = [capacity[whole_tier][domain]]
            index, level = domain, whole_tier
            while level < top:
                index = parent_at[level][index]
                level += 1
                out.append(capacity[level][index])
            out.append(domain)
            return tuple(out)

        return min(candidates, key=key)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.one_of(st.none(), st.integers(1, 5)), st.booleans())
def test_place_decides_as_the_frozen_placer(
    scenario: tuple[TopologyTree, dict[str, int], int, int], highest: int | None, hard: bool
) -> None:
    """Random small trees (skipped layers, low roots), capacities, group sizes, hard or soft limits: the same
    placement (nodes in rank order, tiers) or the same miss (reason, best tier) as before the merge."""
    tree, capacity, count, g = scenario
    got = place(tree, capacity, count=count, group_size=g, highest_tier_allowed=highest, hard=hard)
    frozen = _FrozenPlacer(tree, capacity, count=count, group_size=g).run(highest_tier_allowed=highest, hard=hard)
    assert got == frozen


class _Recorder:
    """A fit that accepts only the listed (whole, group, domain) triples and records every one it is asked."""

    def __init__(self, domains: Sequence[int], tightness: dict[int, int], accept: set[tuple[int, int, int]]) -> None:
        self.domains, self.room, self.accept = domains, tightness, accept
        self.asked: list[tuple[int, int, int]] = []

    def candidates(self, whole_tier: int, group_tier: int) -> Sequence[int]:
        return self.domains

    def tightness(self, whole_tier: int, domain: int) -> Tightness:
        return (self.room[domain],)

    def fit(self, whole_tier: int, group_tier: int, domain: int) -> str | None:
        self.asked.append((whole_tier, group_tier, domain))
        return "here" if (whole_tier, group_tier, domain) in self.accept else None


def test_pairs_in_the_seed_order_domains_tightest_first_ties_in_candidate_order() -> None:
    """Seed 004's strategy order (1,1), (2,1), (2,2), (3,1), ...; within a pair the tightest domain first, equal
    tightness in the candidates' order (domain 2 before 0 as given)."""
    fit = _Recorder([2, 0, 1], {0: 5, 1: 9, 2: 5}, accept={(3, 2, 1)})
    rung = climb(fit, top=3, highest_tier_allowed=None, hard=False, grouping=True)
    assert rung is not None and (rung.whole_tier, rung.group_tier, rung.domain, rung.found) == (3, 2, 1, "here")
    pairs = list(dict.fromkeys((w, g) for w, g, _ in fit.asked))
    assert pairs == [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2)]
    assert [d for w, g, d in fit.asked if (w, g) == (2, 1)] == [2, 0, 1]


def test_hard_mode_stops_at_the_highest_tier_allowed_soft_ignores_it() -> None:
    """Seed 004: hard never places above highestTierAllowed; soft goes on (best effort)."""
    hard = _Recorder([0], {0: 1}, accept={(3, 3, 0)})
    assert climb(hard, top=3, highest_tier_allowed=2, hard=True, grouping=False) is None
    assert {w for w, _, _ in hard.asked} == {1, 2}
    soft = _Recorder([0], {0: 1}, accept={(3, 3, 0)})
    rung = climb(soft, top=3, highest_tier_allowed=2, hard=False, grouping=False)
    assert rung is not None and rung.whole_tier == 3
    assert [(w, g) for w, g, _ in soft.asked] == [(1, 1), (2, 2), (3, 3)]  # no grouping: group tier = whole tier
