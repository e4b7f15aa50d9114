"""Topology-aware placement: a 512-pod gang, groupSize 8, on 4,096 nodes (8 spines x 8 leaves x 8 units x 8 nodes).

Figures:
- `topology.gang512_ms`: decision time of core.topology.place() (median of runs), the slowest of the scenarios.
- `topology.tier_gap`: the (whole, group) tier pair the returned nodes really achieve, minus the optimal pair for
  that instance, as positions in the lexicographic order (1,1) (2,1) (2,2) (3,1) ...; the largest gap over the
  scenarios (0 means optimal everywhere). The optimum comes from an independent exhaustive check: domains
  derived from the node names (not from TopologyTree), and for each pair in order, DP groups dealt into every
  tier-G domain of every tier-W domain one by one (exact for equal-sized groups).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from bench.common import figure, log, summary, timed_runs
from gangsched.core.topology import Domain, TopologyPlacement, TopologyTree, place

FANOUT = 8
COUNT = 512
GROUP = 8
TIERS = 3


def node_name(s: int, leaf: int, u: int, n: int) -> str:
    return f"s{s}-l{leaf}-u{u}-n{n}"


def build_tree() -> tuple[TopologyTree, list[str]]:
    domains = []
    names = []
    r = range(FANOUT)
    for s in r:
        domains.append(Domain(3, f"s{s}", (), tuple(f"s{s}-l{leaf}" for leaf in r)))
        for leaf in r:
            domains.append(Domain(2, f"s{s}-l{leaf}", (f"s{s}",), tuple(f"s{s}-l{leaf}-u{u}" for u in r)))
            for u in r:
                kids = tuple(node_name(s, leaf, u, n) for n in r)
                names.extend(kids)
                domains.append(Domain(1, f"s{s}-l{leaf}-u{u}", (f"s{s}-l{leaf}",), kids))
    return TopologyTree.from_domains(domains), names


def domain_of(node: str, tier: int) -> str:
    """Independent of TopologyTree: the tier-t domain from the node's name (tier 4: the cluster)."""
    parts = node.split("-")  # s, l, u, n
    return "cluster" if tier > TIERS else "-".join(parts[: TIERS - tier + 1])


def pair_index(whole: int, group: int) -> int:
    return (whole - 1) * whole // 2 + group


def optimal_pair(names: list[str], capacity: dict[str, int]) -> tuple[int, int] | None:
    groups = COUNT // GROUP
    for W in range(1, TIERS + 2):
        for G in range(1, W + 1):
            rooms: dict[str, dict[str, int]] = {}
            for n in names:
                inner = rooms.setdefault(domain_of(n, W), {})
                inner[domain_of(n, G)] = inner.get(domain_of(n, G), 0) + capacity.get(n, 0)
            for inner in rooms.values():
                dealt = 0
                for room in inner.values():
                    while room >= GROUP and dealt < groups:
                        room -= GROUP
                        dealt += 1
                if dealt == groups:
                    return W, G
    return None


def achieved_pair(nodes: list[str]) -> tuple[int, int]:
    def tier(ns: list[str]) -> int:
        return next(t for t in range(1, TIERS + 2) if len({domain_of(n, t) for n in ns}) == 1)

    return tier(nodes), max(tier(nodes[i : i + GROUP]) for i in range(0, len(nodes), GROUP))


def scenarios(names: list[str]) -> dict[str, dict[str, int]]:
    rng = random.Random(20240605)
    out: dict[str, dict[str, int]] = {"all-free": dict.fromkeys(names, 1)}
    out["busy-30pct"] = {n: 1 for n in names if rng.random() >= 0.3}
    out["one-busy-per-unit"] = {n: 1 for n in names if not n.endswith("-n7")}
    out["mixed-2-per-node"] = {n: rng.choice((0, 0, 1, 2)) for n in names}
    return out


def main() -> None:
    runs = 15
    build = timed_runs(build_tree, runs=3, warmup=0)
    tree, names = build_tree()
    medians: dict[str, float] = {}
    gaps: dict[str, int] = {}
    pairs: dict[str, list[tuple[int, int] | None]] = {}
    for label, capacity in scenarios(names).items():
        decide: Callable[[], object] = lambda c=capacity: place(  # noqa: E731
            tree, c, count=COUNT, group_size=GROUP, highest_tier_allowed=None, hard=False
        )
        samples = timed_runs(decide, runs=runs)
        medians[label] = summary(samples, scale=1000)["median"]
        result = decide()
        optimum = optimal_pair(names, capacity)
        if optimum is None:
            assert not isinstance(result, TopologyPlacement), label
            gaps[label] = 0
            pairs[label] = [None, None]
            continue
        assert isinstance(result, TopologyPlacement), (label, result)
        assert len(result.nodes) == COUNT
        assert all(k <= capacity[n] for n, k in Counter(result.nodes).items()), label
        got = achieved_pair(result.nodes)
        assert got == (result.whole_tier, result.group_tier), (label, got, result.whole_tier, result.group_tier)
        gaps[label] = pair_index(*got) - pair_index(*optimum)
        pairs[label] = [got, optimum]
        log(f"topology {label}: placed {got}, optimal {optimum}, median {medians[label]} ms")
    worst = max(medians, key=lambda k: medians[k])
    figure(
        "topology.gang512_ms",
        medians[worst],
        unit="ms",
        target=200,
        better="lower",
        scenario=worst,
        per_scenario_median_ms=medians,
        runs=runs,
        nodes=len(names),
        gang=COUNT,
        group_size=GROUP,
        tree_build_ms=summary(build, scale=1000)["median"],
    )
    figure(
        "topology.tier_gap",
        max(gaps.values()),
        unit="pair positions",
        target=0,
        better="lower",
        per_scenario_gap=gaps,
        placed_vs_optimal={k: [list(p) if p else None for p in v] for k, v in pairs.items()},
    )


if __name__ == "__main__":
    main()
