"""The normalized gang declaration: what every source (PodGroup CRD, Koordinator annotations, the older
scheduler-plugins label/annotations) is parsed into before the core sees it.

Contract: immutable values, already validated (parsers in models/ raise core.errors.InvalidField instead of
building an invalid GangSpec). Keys of gangs are "namespace/name". Resources are in canonical integer units
(see core/values/resources.py: cpu in millicores, memory and storage in bytes, everything else in counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gangsched.core.values.gangtree import DomainKey, GangTree


class GangMode(StrEnum):
    STRICT = "Strict"  # a member that cannot be placed releases the whole gang's reservations
    NON_STRICT = "NonStrict"  # placed members keep their reservations until the waiting time ends


class StalePolicy(StrEnum):
    REPORT = "Report"  # a degraded gang is only reported (condition Degraded, event GangDegraded)
    EVICT = "Evict"  # ... and its remaining members are evicted (core/gang/health.py)


class TopologyMode(StrEnum):
    HARD = "hard"  # never place beyond highest_tier_allowed
    SOFT = "soft"  # best effort: prefer the lowest tier, accept any


@dataclass(frozen=True, slots=True)
class NetworkTopology:
    mode: TopologyMode = TopologyMode.SOFT
    highest_tier_allowed: int | None = None  # None: no limit
    group_size: int = 1  # ranks placed together in one topology domain (a data-parallel group); 1: no grouping


DEFAULT_WAIT_SECONDS = 600.0


def gang_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(frozen=True, slots=True)
class GangSpec:
    namespace: str
    name: str
    min_member: int
    total_member: int | None = None
    mode: GangMode = GangMode.STRICT
    wait_seconds: float | None = None  # None: the scheduler's default (DEFAULT_WAIT_SECONDS)
    # keys of every gang that must be satisfied before any binds, this one included; () when alone
    group: tuple[str, ...] = ()
    # minimum number of members per role, e.g. (("ps", 1), ("worker", 4))
    roles: tuple[tuple[str, int], ...] = ()
    # PodGroup.spec.minResources in canonical units; None when not declared
    min_resources: tuple[tuple[str, int], ...] | None = None
    network_topology: NetworkTopology | None = None
    # runtime gang health (core/gang/health.py): seconds below minMember before it is reported; None: not watched
    stale_grace_seconds: float | None = None
    stale_policy: StalePolicy = StalePolicy.REPORT
    # where the declaration came from: "podgroup", "annotations" (Koordinator / legacy), or "podgroup+annotations"
    source: str = "podgroup"
    # the gang is one victim unit only (Kubernetes' PodGroup disruptionMode: all): no member above the quorum is
    # evicted singly (core/preemption/victim_tracker.py)
    disrupt_whole: bool = False
    # the gang's place in a tree of groups (core/values/gangtree.py): admitted only with the tree; None: alone (or a
    # gang group, spec.group)
    tree: GangTree | None = None
    # a hard topology constraint on a node label that is no tier of the topology: all members on nodes sharing one
    # value of it (Kubernetes' schedulingConstraints.topology key); a tier's label is network_topology instead
    domain: DomainKey | None = None

    @property
    def key(self) -> str:
        return gang_key(self.namespace, self.name)
