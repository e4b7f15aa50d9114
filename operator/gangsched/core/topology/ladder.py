"""The topology ladder, one walk for every topology placer: which (whole-gang tier, DP-group tier) pairs are tried,
in which order, and which domain of a pair wins (pure). The fit of a domain is the pluggable part (`DomainFit`).

Contract: `climb(fit, *, top, highest_tier_allowed, hard, grouping) -> Rung | None`. Whole tiers 1 .. `top`
(tree.tiers + 1: the whole cluster); hard mode with a highest_tier_allowed never goes above it. Within a whole tier
w, with `grouping`, group tiers 1 .. w - 1 first (every DP group inside one domain of that tier), then w itself (no
grouping below the whole tier; without `grouping` the only pair). At each pair the domains `fit.candidates(w, g)`
(tier-w indexes) are tried tightest first (least `fit.tightness(w, d)`, ties in the candidates' order); the first
that `fit.fit(w, g, d)` accepts (not None) wins. Used by core/topology/placement.py (one scheduling class:
per-node slot counts) and core/placement/topology_mixed.py (several classes: the quorum check). None: no pair fits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

Found = TypeVar("Found")
Found_co = TypeVar("Found_co", covariant=True)
Tightness = tuple[object, ...]  # compared as a tuple: the least is the tightest


@dataclass(frozen=True, slots=True)
class Rung(Generic[Found]):
    """The pair that fits, the winning tier-`whole_tier` domain and what the fit returned for it."""

    whole_tier: int
    group_tier: int  # == whole_tier: no DP-group constraint below the whole tier
    domain: int
    found: Found


class DomainFit(Protocol[Found_co]):
    """How one placer judges a candidate domain (a tier-`whole_tier` index) for its gang."""

    def candidates(self, whole_tier: int, group_tier: int) -> Sequence[int]:
        """The tier-`whole_tier` domains worth trying at this pair, in tie-break order."""
        ...

    def tightness(self, whole_tier: int, domain: int) -> Tightness:
        """Sort key of the domain among its tier's candidates: the least is tried first."""
        ...

    def fit(self, whole_tier: int, group_tier: int, domain: int) -> Found_co | None:
        """The gang placed inside the domain, every DP group inside one tier-`group_tier` sub-domain; None: no fit."""
        ...


def climb(
    fit: DomainFit[Found], *, top: int, highest_tier_allowed: int | None, hard: bool, grouping: bool
) -> Rung[Found] | None:
    """The first (whole tier, group tier, domain) of the ladder that `fit` accepts (see the module docstring)."""
    limit = top if not hard or highest_tier_allowed is None else min(highest_tier_allowed, top)
    for whole in range(1, limit + 1):
        for group in range(1, whole + 1) if grouping else (whole,):

            def key(domain: int, whole: int = whole) -> Tightness:
                return fit.tightness(whole, domain)

            for domain in tightest_first(fit.candidates(whole, group), key):
                found = fit.fit(whole, group, domain)
                if found is not None:
                    return Rung(whole, group, domain, found)
    return None


def tightest_first(candidates: Sequence[int], key: Callable[[int], Tightness]) -> Iterator[int]:
    """The candidates by `key`, ties in their given order (a stable sort); the first one costs a single `min`, the
    rest are sorted only when asked for."""
    if not candidates:
        return
    best = min(candidates, key=key)
    yield best
    if len(candidates) > 1:
        yield from (d for d in sorted(candidates, key=key) if d != best)
