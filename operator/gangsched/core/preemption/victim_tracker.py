"""Victim units and the per-domain tracker of group preemption's search (core/preemption/victim_search.py).

Contract:
- `victim_units(store, priority, excluded, protected, nodes=None, refused=()) -> (units, spare)`: a gang taken
  whole (every bound member of lower priority), single members above its quorum (up to `spare[gang]`; none with
  `disrupt_whole`), pods without a gang. Pods being evicted count as gone; a refused pod is never a unit and its
  gang is never taken whole; units with a protected pod are marked. With `nodes`, only units charged there; with
  `now`, each unit's `loss` (`work_lost`: run time so far x devices).
- `Tracker(search, nodes, target, potential)`: one domain's capacity as units are added or removed, with
  core.topology.place's feasibility test in O(1); `greedy` chooses units, `prune` drops the ones not needed.
More: docs/modules.md#corepreemptionvictim_trackerpy.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.views import StoreView
from gangsched.core.records.records import PodRecord
from gangsched.core.topology import TopologyTree
from gangsched.core.values.gangspec import NetworkTopology


class Candidates(Protocol):
    """What a Tracker reads of the search it serves."""

    req: Mapping[str, int]
    count: int
    topology: NetworkTopology | None
    tree: TopologyTree | None
    units: list[Unit]
    spare: Mapping[str, int]
    cap0: dict[str, int]
    node_units: dict[str, list[int]]

    def fit(self, node: str, freed: Mapping[str, int] | None) -> int: ...


@dataclass(slots=True)
class Unit:
    key: str  # gang key, or pod key
    gang: str | None  # the gang a single is taken from (spare-limited), None for wholes and lone pods
    priority: int
    pods: tuple[tuple[str, str, Mapping[str, int]], ...]  # (pod key, node, requests)
    protected: bool
    whole: bool = False  # a whole gang
    loss: float = 0.0  # the work its eviction destroys (`work_lost`), 0 when no time is given


def _near(cluster: StoreView, nodes: Collection[str]) -> set[str]:
    """The pods charged on `nodes`, with every member of their gangs (a gang is taken whole or not at all)."""
    keys: set[str] = set()
    gangs: set[str | None] = {None}
    pods, pods_on, states = cluster.pods, cluster.pods_on, cluster.gangs
    for node in nodes:
        on = pods_on.get(node)
        if not on:
            continue
        keys.update(on)
        for key in on:
            gang = pods[key].gang
            if gang not in gangs:
                gangs.add(gang)
                state = states.get(gang)  # type: ignore[arg-type]  # (None is in `gangs`: never asked)
                if state is not None:
                    keys.update(state.members)
    return keys


def _blocks(cluster: StoreView, gang: GangState | None, priority: int, excluded: Collection[str]) -> bool:
    """Whether a bound, non-terminal member of the gang not being evicted has a priority >= `priority` (the gang is
    then not taken whole). Its members are the store's pods of that gang (core/memory/gangs.py `join`/`leave`), all
    near the searched nodes when one of them is (`_near` takes gangs whole)."""
    if gang is None:
        return False
    pods = cluster.pods
    for key in gang.members:
        pod = pods.get(key)
        if (
            pod is not None
            and pod.priority >= priority
            and pod.node_name is not None
            and not pod.terminal
            and key not in excluded
        ):
            return True
    return False


def work_lost(pod: PodRecord, now: float | None) -> float:
    """What evicting a running pod destroys: its run time so far (no checkpoint assumed), in device-seconds (the sum
    of its extended resources such as nvidia.com/gpu, at least 1: pod-seconds for a pod without devices). 0 when no
    time is given or the pod has not started (bound, not yet running: nothing to lose)."""
    if now is None or pod.started is None:
        return 0.0
    devices = sum(q for r, q in pod.sclass.requests.items() if "/" in r)
    return max(0.0, now - pod.started) * max(1, devices)


def victim_units(
    cluster: StoreView,
    priority: int,
    excluded: Collection[str],
    protected: Collection[str],
    nodes: Collection[str] | None = None,
    refused: Collection[str] = (),
    now: float | None = None,
) -> tuple[list[Unit], dict[str, int]]:
    """Victim units, and the spare count (members that may be taken singly) per gang; with `nodes`, only the units
    with a pod charged on one of them (the others free nothing there); with `now`, each unit's `loss`."""
    gangs: dict[str, list[tuple[str, str, Mapping[str, int], int]]] = {}
    loss: dict[str, float] = {}  # (only of the pods that may be taken: the others' is never read)
    blocked: set[str] = set()  # gangs with a member that may not be taken
    units: list[Unit] = []
    near = _near(cluster, nodes) if nodes is not None else None
    for key, pod in cluster.pods.items():
        if pod.priority >= priority:  # never a unit; whether it keeps its gang whole is asked below (_blocks)
            continue
        node = pod.node_name
        if node is None or pod.terminal:
            continue
        if near is not None and key not in near:
            continue
        if key in excluded:  # already being evicted for some preemptor: as good as gone
            continue
        of = pod.gang
        if key in refused:
            if of is not None:
                blocked.add(of)
            continue
        loss[key] = work_lost(pod, now)
        if of is not None:
            mates = gangs.get(of)
            if mates is None:
                mates = gangs[of] = []
            mates.append((key, node, pod.sclass.requests, pod.priority))
            continue
        units.append(
            Unit(key, None, pod.priority, ((key, node, pod.sclass.requests),), key in protected, loss=loss[key])
        )
    spare: dict[str, int] = {}
    for gang_key, members in gangs.items():
        gang = cluster.gangs.get(gang_key)
        quorum = gang.spec.min_member if gang is not None and gang.spec is not None else len(members)
        prot = any(k in protected for k, _, _, _ in members)
        top = max(p for _, _, _, p in members)
        if gang_key not in blocked and not _blocks(cluster, gang, priority, excluded):
            pods = tuple((k, n, r) for k, n, r, _ in members)
            whole_loss = sum(loss[k] for k, _, _, _ in members)
            units.append(Unit(gang_key, None, top, pods, prot, whole=True, loss=whole_loss))
        room = len(members) - quorum
        if room > 0 and not (gang is not None and gang.spec is not None and gang.spec.disrupt_whole):
            spare[gang_key] = room
            for k, n, r, p in members:
                units.append(Unit(k, gang_key, p, ((k, n, r),), k in protected, loss=loss[k]))
    return units, spare


class Tracker:
    """Capacity of one candidate domain as victim units are added or removed, with an O(1) feasibility test
    equal to place()'s: with DP groups kept inside tier-G sub-domains (G < W), the sub-domains' whole-group
    slots (plus a short last group's bonus) must cover the gang; otherwise the domain's capacity must."""

    def __init__(
        self, search: Candidates, nodes: list[str], target: tuple[int, int] | None, potential: Mapping[str, int]
    ) -> None:
        self.s = search
        self.nodes = nodes
        self.inside = set(nodes)
        self.cap = {n: search.cap0[n] for n in nodes}
        self.total = sum(self.cap.values())
        self.freed: dict[str, dict[str, int]] = {}
        self.refs: dict[str, int] = {}  # victim pod -> chosen units holding it
        network, tree = search.topology, search.tree
        self.g = network.group_size if network is not None else 1
        self.grouped = False
        self.sub: dict[str, int] = {}  # node -> sub-domain index
        if (
            target is not None
            and tree is not None
            and network is not None
            and self.g > 1
            and 1 <= target[1] < target[0]
        ):
            self.grouped = True
            names: dict[str, int] = {}
            for n in nodes:
                path = tree.node_path(n)
                assert path is not None
                self.sub[n] = names.setdefault(path[target[1] - 1], len(names))
        self.full, self.r = divmod(search.count, self.g)
        k = len(set(self.sub.values()))
        self.subcap = [0] * k
        for n in nodes:
            if self.grouped:
                self.subcap[self.sub[n]] += self.cap[n]
        self.slots = sum(c // self.g for c in self.subcap)
        self.bonus = sum(1 for c in self.subcap if self.r and c % self.g >= self.r)
        self.potential = potential

    def feasible(self) -> bool:
        if not self.grouped:
            return self.total >= self.s.count
        return self.slots >= self.full + (1 if self.r and not self.bonus else 0)

    def _set(self, n: str, c: int) -> None:
        old = self.cap[n]
        if c == old:
            return
        self.cap[n] = c
        self.total += c - old
        if self.grouped:
            i = self.sub[n]
            before = self.subcap[i]
            after = before + c - old
            self.subcap[i] = after
            g, r = self.g, self.r
            self.slots += after // g - before // g
            if r:
                self.bonus += (after % g >= r) - (before % g >= r)

    def _apply(self, unit: Unit, sign: int) -> None:
        touched = set()
        for k, n, req in unit.pods:
            before = self.refs.get(k, 0)
            after = before + sign
            self.refs[k] = after
            if (before == 0) == (after == 0) or n not in self.inside:
                continue
            f = self.freed.setdefault(n, {})
            for res, q in req.items():
                f[res] = f.get(res, 0) + sign * q
            touched.add(n)
        for n in touched:
            self._set(n, self.s.fit(n, self.freed[n]))

    def _order(self, small_first: bool) -> list[int]:
        s = self.s
        req = s.req
        cand: dict[int, float] = {}
        for n in self.nodes:
            for i in s.node_units.get(n, ()):
                if i in cand:
                    continue
                u = s.units[i]
                gain = 0.0
                for _, pn, r in u.pods:
                    if pn in self.inside:
                        gain += min((r.get(res, 0) / q for res, q in req.items() if q > 0), default=0.0)
                cand[i] = gain / len(u.pods)
        rank: dict[int, int] = {}
        if self.grouped:
            # sub-domains cheapest per whole-group slot gained first; units go in the order of their best one
            g = self.g
            touching: list[set[int]] = [set() for _ in self.subcap]
            pot = [0] * len(self.subcap)
            for n in self.nodes:
                pot[self.sub[n]] += self.potential[n]
                for i in s.node_units.get(n, ()):
                    touching[self.sub[n]].add(i)
            keys = []
            for j, units in enumerate(touching):
                gain = pot[j] // g - self.subcap[j] // g
                if gain <= 0 or not units:
                    continue
                pods = len({k for i in units for k, _, _ in s.units[i].pods})
                top = max(s.units[i].priority for i in units)
                keys.append(((top, pods / gain, j), j))
            keys.sort()
            for r_, (_, j) in enumerate(keys):
                for i in touching[j]:
                    if i not in rank or rank[i] > r_:
                        rank[i] = r_
        last = len(self.subcap) + 1
        sign = 1 if small_first else -1

        def key(i: int) -> tuple[int, int, float, float, int, int]:
            u = s.units[i]
            gained = cand[i] * len(u.pods)  # the work destroyed per unit of capacity gained, least first
            waste = u.loss / gained if gained > 0 else float("inf") if u.loss else 0.0
            return (rank.get(i, last), u.priority, waste, -cand[i], sign * len(u.pods), i)

        return sorted(cand, key=key)

    def greedy(self, *, small_first: bool) -> list[int] | None:
        s = self.s
        if self.feasible():
            return []
        singles: dict[str, int] = {}
        whole: set[str] = set()
        chosen: list[int] = []
        for i in self._order(small_first):
            u = s.units[i]
            if u.gang is not None and (u.gang in whole or singles.get(u.gang, 0) >= s.spare.get(u.gang, 0)):
                continue
            if all(self.refs.get(k, 0) for k, _, _ in u.pods):
                continue
            if u.gang is not None:
                singles[u.gang] = singles.get(u.gang, 0) + 1
            elif u.whole:
                whole.add(u.key)
            chosen.append(i)
            self._apply(u, +1)
            if self.feasible():
                return chosen
        return None

    def prune(self, chosen: list[int]) -> list[int]:
        """Drop every unit the placement does not need, highest priority, most work lost, then largest first."""
        s = self.s
        kept = set(chosen)
        for i in sorted(chosen, key=lambda i: (-s.units[i].priority, -s.units[i].loss, -len(s.units[i].pods), -i)):
            self._apply(s.units[i], -1)
            if self.feasible():
                kept.discard(i)
            else:
                self._apply(s.units[i], +1)
        return [i for i in chosen if i in kept]
