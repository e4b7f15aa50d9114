"""Which resource pools (and slices) a node can use: upstream's GatherPools, indexed for many nodes.

Contract (oracle: staging/src/k8s.io/dynamic-resource-allocation/structured/pools.go and the multi-host pool
cases of allocatortesting/allocator_testing.go):
- A slice is available to a node through `nodeName`, `allNodes` or a `nodeSelector` (one term must match the
  node's labels / metadata.name field). Slices with `perDeviceNodeSelection` need DRAPartitionableDevices, not in
  the stable feature set: they are left out (and counted in `Inventory.unsupported`).
- Per pool (driver, pool name) the node sees the slices of the newest generation among those available to it;
  the pool is complete when the whole pool (every node's slices) has `resourceSliceCount` slices of that
  generation; it is invalid when two of its devices share a name (`invalid`, the reason).
- `Inventory(slices).pools_for(node, labels)` -> the node's pools, in the slices' order; kept per node until the
  inventory is rebuilt (a new Inventory per change of the slices or of node labels).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gangsched.core.devices.model import ResourceSlice
from gangsched.core.records.records import Term, requirement_matches


@dataclass(frozen=True, slots=True)
class Pool:
    driver: str
    name: str
    slices: tuple[ResourceSlice, ...]
    incomplete: bool
    invalid: str | None  # why the pool is invalid, or None

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"


def term_matches(term: Term, node: str, labels: Mapping[str, str]) -> bool:
    """A nodeSelectorTerm against a node (core/fit/matching.py's semantics: an empty term matches nothing)."""
    if not term.expressions and not term.fields:
        return False
    if not all(requirement_matches(r, labels) for r in term.expressions):
        return False
    fields = {"metadata.name": node}
    return all(requirement_matches(r, fields) for r in term.fields)


def selector_matches(terms: tuple[Term, ...], node: str, labels: Mapping[str, str]) -> bool:
    return any(term_matches(t, node, labels) for t in terms)


class Inventory:
    """The published slices, indexed by node and by pool."""

    def __init__(self, slices: Iterable[ResourceSlice]) -> None:
        self.slices = tuple(slices)
        self.by_node: dict[str, list[ResourceSlice]] = defaultdict(list)
        self.shared: list[ResourceSlice] = []  # allNodes or nodeSelector
        self.generations: dict[tuple[str, str], Counter[int]] = defaultdict(Counter)
        self.order: dict[tuple[str, str], int] = {}
        self.unsupported = 0
        self._position = {id(s): i for i, s in enumerate(self.slices)}
        for s in self.slices:
            pid = (s.driver, s.pool)
            self.generations[pid][s.generation] += 1
            self.order.setdefault(pid, len(self.order))
            if s.per_device_node_selection:
                self.unsupported += 1
            elif s.node_name is not None:
                self.by_node[s.node_name].append(s)
            elif s.all_nodes or s.node_selector is not None:
                self.shared.append(s)
        self._cache: dict[str, tuple[Pool, ...]] = {}

    def pools_for(self, node: str, labels: Mapping[str, str]) -> tuple[Pool, ...]:
        out = self._cache.get(node)
        if out is None:
            out = self._cache[node] = self._gather(node, labels)
        return out

    def _gather(self, node: str, labels: Mapping[str, str]) -> tuple[Pool, ...]:
        mine: dict[tuple[str, str], list[ResourceSlice]] = {}
        candidates = list(self.by_node.get(node, ()))
        candidates += [s for s in self.shared if s.all_nodes or selector_matches(s.node_selector or (), node, labels)]
        if self.shared and len(candidates) > 1:
            candidates.sort(key=lambda s: self._position[id(s)])
        for s in candidates:
            pid = (s.driver, s.pool)
            have = mine.get(pid)
            if have is None or s.generation > have[0].generation:
                mine[pid] = [s]
            elif s.generation == have[0].generation:
                have.append(s)
        pools = []
        for pid in sorted(mine, key=self.order.__getitem__):
            chosen = mine[pid]
            gen = chosen[0].generation
            complete = self.generations[pid][gen] == chosen[0].slice_count
            pools.append(Pool(pid[0], pid[1], tuple(chosen), not complete, _invalid(chosen)))
        return tuple(pools)


def _invalid(slices: list[ResourceSlice]) -> str | None:
    seen: set[str] = set()
    for s in slices:
        for d in s.devices:
            if d.name in seen:
                return f"duplicate device name {d.name}"
            seen.add(d.name)
    return None
