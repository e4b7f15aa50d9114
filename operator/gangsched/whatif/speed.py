"""Placement-aware job speed: how much longer a job runs when its pods span a higher network tier than it needs.

The traces carry run times, not communication data, so the model's parameters come from published measurements and
datasheets, fixed before any replay result was looked at (docs/whatif.md "Placement-aware speed" cites them):
- A multi-member job spends a share `c` of its run time communicating when its members talk over the rail network
  at full bandwidth (tier 1); `c` is drawn per job, uniform on [`comm_low`, `comm_high`] = [0.10, 0.32]: Horovod's
  published scaling efficiencies on 128 servers (Sergeev & Del Balso 2018, arXiv:1802.05799: 90% for Inception V3
  and ResNet-101, 68% for VGG-16). One-member jobs never leave their node: `c` = 0.
- Communication time scales with the inverse of the bandwidth of the tier the members span (`tier_cost`, relative to
  tier 1): tier 0, one node, NVLink (H100 SXM: 900 GB/s per GPU both ways, 450 GB/s each way) against 400 Gb/s =
  50 GB/s per GPU on the network (one 400G NIC per GPU: NVIDIA DGX H100; Alibaba HPN, SIGCOMM'24: 2 x 200G per GPU):
  1/9; tiers 1 and 2, a unit and a leaf of the rail-optimized fabric, non-blocking (HPN's segment of 1,024 GPUs):
  1; above a leaf, through an oversubscribed spine: `spine_oversubscription` (default 2, an assumption: stated in
  every report, with the placement-independent model beside it).
- A trace's run time is the job's run time at its ideal tier: the lowest tier one of whose domains has the GPUs to
  hold it (empty). Placed spanning tier t it runs `duration x m(t) / m(ideal)`, m(t) = (1 - c) + c x tier_cost(t).

Contract:
- `SpeedModel`: the parameters above; `SpeedModel.off()` the placement-independent model (every factor 1).
- `assign_comm_shares(jobs, model, seed) -> jobs`: each job with its `comm_share` drawn (random.Random(seed)).
- `TierMap(nodes, domains)`: `span(nodes) -> tier` the lowest tier containing every node given (0: one node; no
  common domain: the highest tier + 1; no topology known: 0 or 1), `ideal(gpus) -> tier`.
- `slowdown(model, job, span, ideal) -> float` (>= 1 when span >= ideal).
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
