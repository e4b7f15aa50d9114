"""Placement-aware job speed: how much longer a job runs when its pods span a higher network tier than it needs.

A job's communication share `c` is drawn per job (uniform on [0.10, 0.32]; 0 for one member); a tier's
communication cost relative to tier 1 is 1/9 on one node (NVLink), 1 within a leaf, `spine_oversubscription` above.
Placed spanning tier t it runs `duration x m(t) / m(ideal)`, m(t) = (1 - c) + c x tier_cost(t). The sources of
these parameters (fixed before any replay result was looked at): docs/whatif.md "Placement-aware speed".
Contract:
- `SpeedModel`: the parameters; `SpeedModel.off()` the placement-independent model (every factor 1).
- `assign_comm_shares(jobs, model, seed) -> jobs`: each job's `comm_share` drawn (random.Random(seed)).
- `TierMap(nodes, domains)`: `span(nodes)` the lowest tier containing them all, `ideal(gpus)`.
- `slowdown(model, job, span, ideal) -> float` (>= 1 when span >= ideal). More: docs/modules.md#whatifspeedpy.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gangsched.core import Domain
from gangsched.whatif.model import JobSpec, NodeSpec


@dataclass(frozen=True, slots=True)
class SpeedModel:
    enabled: bool = True
    comm_low: float = 0.10
    comm_high: float = 0.32
    nvlink_cost: float = 1 / 9  # tier 0 against tier 1: 50 GB/s per GPU network / 450 GB/s NVLink
    spine_oversubscription: float = 2.0  # above the highest tier (tier >= 3 on the synthetic topology)
    top_tier: int = 2  # the highest non-blocking tier (the synthetic topology's leaf)

    @classmethod
    def off(cls) -> SpeedModel:
        return cls(enabled=False)

    def tier_cost(self, tier: int) -> float:
        if tier <= 0:
            return self.nvlink_cost
        return 1.0 if tier <= self.top_tier else self.spine_oversubscription

    def describe(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def assign_comm_shares(jobs: Sequence[JobSpec], model: SpeedModel, seed: int) -> tuple[JobSpec, ...]:
    """Every multi-member job gets its communication share (one draw per job, in order: reproducible)."""
    rng = random.Random(f"comm-{seed}")
    out = []
    for job in jobs:
        share = rng.uniform(model.comm_low, model.comm_high)  # drawn for every job: shares do not shift with sizes
        out.append(dataclasses.replace(job, comm_share=share if job.members > 1 else 0.0))
    return tuple(out)


class TierMap:
    """Node -> its domain at each tier, and the GPUs of the largest domain of each tier."""

    def __init__(self, nodes: Iterable[NodeSpec], domains: Sequence[Domain]) -> None:
        gpus = {n.name: n.gpus for n in nodes}
        self.parent: dict[tuple[int, str], str] = {}  # (tier, child name) -> domain name at that tier
        self.tiers = max((d.layer for d in domains), default=0)
        below: dict[str, int] = dict(gpus)  # name at the tier below -> GPUs under it
        self.largest = [max(gpus.values(), default=0)]
        for tier in range(1, self.tiers + 1):
            here: dict[str, int] = {}
            for d in domains:
                if d.layer != tier:
                    continue
                here[d.name] = sum(below.get(child, 0) for child in d.children)
                for child in d.children:
                    self.parent[(tier, child)] = d.name
            self.largest.append(max(here.values(), default=0))
            below = here

    def _domain(self, node: str, tier: int) -> str | None:
        name: str | None = node
        for t in range(1, tier + 1):
            name = self.parent.get((t, name)) if name is not None else None
        return name

    def span(self, nodes: Iterable[str]) -> int:
        distinct = set(nodes)
        if len(distinct) <= 1:
            return 0
        for tier in range(1, self.tiers + 1):
            if len({self._domain(n, tier) for n in distinct} - {None}) == 1 and all(
                self._domain(n, tier) is not None for n in distinct
            ):
                return tier
        return self.tiers + 1

    def ideal(self, gpus: int) -> int:
        for tier, largest in enumerate(self.largest):
            if gpus <= largest:
                return tier
        return self.tiers + 1


def slowdown(model: SpeedModel, job: JobSpec, span: int, ideal: int) -> float:
    """The run-time factor of a job placed spanning `span` when its run time is measured at `ideal`."""
    if not model.enabled or job.comm_share <= 0:
        return 1.0
    c = job.comm_share

    def m(tier: int) -> float:
        return (1 - c) + c * model.tier_cost(tier)

    return m(span) / m(ideal)
