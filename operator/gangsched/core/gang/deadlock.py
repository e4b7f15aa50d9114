"""NonStrict deadlocks: gangs holding reservations that each wait for capacity another of them holds.

Contract: `resolve_deadlocks(session, retry) -> (retry, victims)`, once per cycle after the timeouts and before the
queue; pure, every change through the session:
- Waiters: NonStrict gangs with reservations from earlier cycles, short of minMember by k with k pending members.
  A waiter is blocked when those k do not fit on free plus coming capacity (pods with a declared run time, or
  leaving). Edge A -> B: A is blocked and B holds a reservation on a node one of A's classes could use.
- Per strongly connected component of two or more gangs, the victim (lowest priority, then newest, then greatest
  key) loses all its reservations and its waiting time, backs off, and gets a Warning `DeadlockResolved`.
- Returns `retry` plus the other gangs of the cycles, and the victims' units; the plan lists each `Deadlock`.
Strict gangs and bound pods are never touched; nothing is computed unless two NonStrict gangs hold reservations.
More: docs/modules.md#coregangdeadlockpy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from gangsched.core.fit.capacity import class_index
from gangsched.core.fit.filters import filters_for
from gangsched.core.fit.matching import static_block
from gangsched.core.gang.coming_fit import coming_gain, fits
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import Deadlock, GangStatus
from gangsched.core.records.records import NodeRecord, SchedulingClass
from gangsched.core.transaction.messages import backoff, event, report_status
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangMode
from gangsched.core.values.units import UnitKey

Room = dict[str, dict[str, int]]  # node -> resources
MAX_ROUNDS = 16  # victims chosen per cycle, at most (a larger knot is untied over the next cycles)


@dataclass(slots=True)
class _Room:
    """Capacity free now in the cycle's workspace (releases included) and, once `coming` is set, what is coming,
    per node, read the first time a node is asked for (`at`): the store's coming capacity (core/memory/coming.py)
    plus `evicting`, the pods being evicted it does not count; and how many pods of a class fit in all of it (a
    memo)."""

    session: CycleSession
    known: dict[str, dict[str, int]]
    counts: dict[SchedulingClass, tuple[int, bool]]  # class -> (pods that fit, whether that is all of them)
    coming: Mapping[str, Mapping[str, int]] | None = None  # node -> requests of the pods there that will end
    evicting: dict[str, dict[str, int]] = field(default_factory=dict)  # the same, of the victims not in `coming`

    def at(self, node: str) -> dict[str, int]:
        free = self.known.get(node)
        if free is None:
            free = self.known[node] = self.session.workspace.free(node)
            if self.coming is not None:
                self._add_coming(node, free)
        return free

    def _add_coming(self, node: str, free: dict[str, int]) -> None:
        assert self.coming is not None
        for src in (self.coming.get(node), self.evicting.get(node)):
            if src is not None:
                _add(free, src, 1)

    def is_coming(self, node: str) -> bool:
        return self.coming is not None and (node in self.coming or node in self.evicting)

    def released(self, node: str, requests: Mapping[str, int]) -> None:
        """A reservation on `node` was released in the workspace (which nodes not read yet will show)."""
        if node in self.known:
            _add(self.known[node], requests, 1)
        self.counts.clear()


@dataclass(slots=True)
class _Waiter:
    gang: GangState
    held: list[tuple[str, str]]  # (pod_key, node) reservations from earlier cycles
    need: Counter[SchedulingClass]  # the members it misses, per class (empty: it waits for nothing held)
    on: dict[str, dict[str, int]]  # node -> resources its reservations take there


def resolve_deadlocks(session: CycleSession, retry: Set[UnitKey]) -> tuple[set[UnitKey], set[UnitKey]]:
    """See the module docstring."""
    out, victims = set(retry), set[UnitKey]()
    waiters = _waiters(session)
    room: _Room | None = None
    survivors: set[UnitKey] = set()
    for _ in range(min(len(waiters), MAX_ROUNDS)):
        graph = _graph(session, waiters)  # who could use whose capacity: a superset of the wait-for edges
        suspects = {k for c in _cycles(graph, waiters) for k in c}
        if not suspects:
            break  # (the common case: no cycle even before asking who is blocked; nothing per node was read)
        room = _room(session) if room is None else room
        for key in suspects:
            if not _blocked(session, waiters[key].need, room):
                graph[key] = []  # not blocked: it waits for nobody
        cycles = _cycles(graph, waiters)
        if not cycles:
            break
        for component in cycles:
            victim = max(component, key=lambda k: _loss_order(waiters[k].gang))
            _release(session, waiters.pop(victim), _cycle_through(graph, victim, set(component)), room)
            victims.add(UnitKey.gang(victim))
            survivors.update(UnitKey.gang(k) for k in component if k != victim)
    return out | (survivors - victims), victims


def _loss_order(gang: GangState) -> tuple[int, float, str]:
    """Greatest loses: lowest priority, then newest, then greatest key."""
    created = gang.created if gang.created is not None else gang.member_created
    return (-gang.priority, created, gang.key)


def _waiters(session: CycleSession) -> dict[str, _Waiter]:
    store = session.store
    out: dict[str, _Waiter] = {}
    candidates = []
    for key in store.reserving():
        gang = store.gangs.get(key)
        spec = gang.spec if gang is not None else None
        if gang is None or spec is None or spec.mode != GangMode.NON_STRICT:
            continue
        if not session.is_satisfied(gang) and not session.is_timed_out(gang):
            candidates.append((gang, spec))
    if len(candidates) < 2:
        return out  # (no two gangs to wait on each other: O(reserving gangs), nothing per member)
    for gang, spec in candidates:
        members = session.members(gang)
        held = [(k, n) for k, n in members.reserved if not session.is_placed(k)]
        if not held:
            continue
        missing = spec.min_member - len(members.bound) - len(members.reserved)
        need: Counter[SchedulingClass] = Counter()
        if 0 < missing <= len(members.pending):
            need.update(p.sclass for p in members.pending[:missing])
        on: dict[str, dict[str, int]] = {}
        for pod_key, node in held:
            _add(on.setdefault(node, {}), store.pods[pod_key].requests, 1)
        out[gang.key] = _Waiter(gang, held, need, on)
    return out


def _add(into: dict[str, int], requests: Mapping[str, int], sign: int) -> None:
    for r, q in requests.items():
        into[r] = into.get(r, 0) + sign * q


def _room(session: CycleSession) -> _Room:
    """Per node: free in the workspace now (the nominations held), read as nodes are asked for."""
    return _Room(session, {}, {})


def _add_coming(room: _Room) -> None:
    """From now on each node's room includes the requests of pods bound there that will end: a declared run time,
    or leaving (the store keeps those per node as pods change, core/memory/coming.py), or evicted (the victims it
    does not count, O(victims))."""
    session = room.session
    store = session.store
    pods, pods_on, counted = store.pods, store.pods_on, store.coming.of
    evicting: dict[str, dict[str, int]] = {}
    for pod_key in session.state.evicting:
        pod = pods.get(pod_key)
        if pod_key in counted or pod is None or pod.node_name is None or pod.terminal:
            continue
        if pod_key in pods_on.get(pod.node_name, ()):
            _add(evicting.setdefault(pod.node_name, {}), pod.requests, 1)
    room.coming, room.evicting = store.coming.by_node, evicting
    for name, free in room.known.items():
        room._add_coming(name, free)
    room.counts.clear()


def _blocked(session: CycleSession, need: Counter[SchedulingClass], room: _Room) -> bool:
    """The members do not fit on what is free, nor on what is free and coming (read only when free is short)."""
    if _fits(session, need, room):
        return False
    if room.coming is not None:
        return True
    _add_coming(room)
    return not _fits(session, need, room)


def _fits(session: CycleSession, need: Counter[SchedulingClass], room: _Room) -> bool:
    """Whether the members fit on `room` (one class: its memoized count; several: greedy, largest class first)."""
    if len(need) == 1:
        ((cls, count),) = need.items()
        have, whole = room.counts.get(cls, (0, False))
        if have < count and not whole:
            have, whole = room.counts[cls] = _slots(session, cls, count, room)
        return count <= have
    left: dict[str, dict[str, int]] = {}
    for cls, count in sorted(need.items(), key=lambda x: -sum(x[0].requests.values())):
        if _take(session, cls, count, room, left) < count:
            return False
    return True


def _slots(session: CycleSession, cls: SchedulingClass, count: int, room: _Room) -> tuple[int, bool]:
    """How many pods of the class fit on `room`, and whether that is all of them (else: at least `count`). Without a
    node filter: the workspace view's fit counts (core/fit/capacity.py: the same resources, kept incrementally),
    plus what the coming capacity adds (core/gang/coming_fit.py, kept per class in the store), corrected on the
    nodes where the room differs from the store (the workspace's nominations and releases, the victims' nodes);
    with one, node by node until `count` fit."""
    if filters_for(cls):
        taken = _take(session, cls, count, room, {})
        return taken, taken < count
    view = session.workspace.view(cls)
    total = view.slots()
    if room.coming is None:
        return total, True
    gained, gain = coming_gain(session.store, view.idx)
    total += gained
    wanted = [(r, q) for r, q in cls.requests.items() if q > 0]
    for name in {*session.workspace.extra, *room.evicting}:
        if name in view.idx.pref and room.is_coming(name):
            total += fits(room.at(name), wanted) - view.count_of(name) - gain.get(name, 0)
    return total, True


def _take(session: CycleSession, cls: SchedulingClass, count: int, room: _Room, left: Room) -> int:
    """Place up to `count` pods of the class on `room` minus what `left` already took (kept in `left`), on the
    nodes whose static filters take the class (its capacity index's eligible nodes, core/fit/capacity.py)."""
    wanted = {r: q for r, q in cls.requests.items() if q > 0}
    taken = 0
    for name in class_index(session.store, cls, spread=session.workspace.spread).pref:
        if taken >= count:
            break
        have = left.get(name) or room.at(name)
        n = min(min((have.get(r, 0) // q for r, q in wanted.items()), default=count), count - taken)
        if n > 0:
            have = left[name] = dict(have)
            _add(have, {r: q * n for r, q in wanted.items()}, -1)
            taken += n
    return taken


def _graph(session: CycleSession, waiters: Mapping[str, _Waiter]) -> dict[str, list[str]]:
    """Gangs and the classes they need as one graph, O(gangs x classes) edges: gang A -> each class it needs, class
    -> each gang holding a reservation that class could use; A -> class -> B (A != B) is the edge A -> B."""
    nodes = session.store.nodes
    graph: dict[str, list[str]] = {}
    for key, w in waiters.items():
        out = []
        for cls in w.need:
            name = f"\0{cls.id}"  # (never a gang's key)
            if name not in graph:
                graph[name] = [
                    o for o, h in waiters.items() if any(_usable(cls, nodes.get(n), r) for n, r in h.on.items())
                ]
            out.append(name)
        graph[key] = out
    return graph


def _cycles(graph: Mapping[str, list[str]], waiters: Mapping[str, _Waiter]) -> list[list[str]]:
    """The gangs of each strongly connected component holding two or more gangs (A -> class -> A is no edge, and
    never joins two gangs: a path between two gangs without it is made of wait-for edges)."""
    out = []
    for component in _components(graph):
        gangs = [k for k in component if k in waiters]
        if len(gangs) > 1:
            out.append(gangs)
    return out


def _usable(cls: SchedulingClass, node: NodeRecord | None, held: Mapping[str, int]) -> bool:
    """Whether a reservation on `node` holds a resource (other than the pod count) the class requests, there."""
    if node is None or static_block(cls, node) is not None:
        return False
    return any(q > 0 and r != "pods" and held.get(r, 0) > 0 for r, q in cls.requests.items())


def _components(graph: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iterative (no recursion limit), in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            edges = graph[v]
            if i < len(edges):
                work.append((v, i + 1))
                w = edges[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                out.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def _cycle_through(graph: Mapping[str, list[str]], start: str, within: Set[str]) -> list[str]:
    """A shortest wait-for cycle from `start` back to it inside its component (BFS), as the list of gangs."""
    parent: dict[str, str] = {start: start}
    expanded: set[str] = set()
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for cls in graph[v]:
                holders = graph[cls]
                if v != start and start in holders:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return list(reversed(path))
                if cls in expanded:
                    continue
                expanded.add(cls)
                for w in holders:
                    if w in within and w not in parent:
                        parent[w] = v
                        nxt.append(w)
        frontier = nxt
    return [start]


def _release(session: CycleSession, victim: _Waiter, cycle: list[str], room: _Room) -> None:
    gang = victim.gang
    held: dict[str, int] = {}
    for pod_key, node in victim.held:
        requests = session.store.pods[pod_key].requests
        session.release(pod_key, node)
        room.released(node, requests)
        _add(held, requests, 1)
    session.set_wait_start(gang.key, None)
    backoff(session, gang.unit)
    starts = [session.store.gangs[k].first_reserved for k in cycle]
    formed = max((t for t in starts if t is not None), default=session.now)
    session.plan.deadlocks.append(Deadlock(tuple(cycle), gang.key, len(victim.held), held, formed))
    message = f"{_count(len(victim.held))} released: {describe(cycle)}"
    event(session, "PodGroup", gang.key, "Warning", "DeadlockResolved", message)
    members = session.members(gang)
    report_status(session, gang, GangStatus(len(members.bound), 0, len(members.pending), "DeadlockResolved", message))


def _count(n: int) -> str:
    return "1 reservation" if n == 1 else f"{n} reservations"


def describe(cycle: list[str]) -> str:
    """'deadlock with ns/b (ns/a waits for capacity ns/b holds, ns/b for ns/a)' for the cycle [ns/a, ns/b]."""
    others = ", ".join(cycle[1:])
    links = [f"{cycle[0]} waits for capacity {cycle[1 % len(cycle)]} holds"]
    links += [f"{a} for {b}" for a, b in zip(cycle[1:], cycle[2:] + cycle[:1], strict=True)]
    return f"deadlock with {others} ({', '.join(links)})"
