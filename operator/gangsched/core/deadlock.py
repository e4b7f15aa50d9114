"""NonStrict deadlocks: gangs holding reservations that each wait for capacity another of them holds.

A NonStrict gang keeps what fits as reservations and waits for the rest (core/gang_rules.py). Two such gangs can
each hold part of what the other needs: neither ever completes, and both hold their capacity until their waiting
times end. That is a deadlock, not a full cluster: a gang waiting for capacity that running pods hold is not in one.
The wait-for graph is the classic one (Coffman et al., "System Deadlocks", 1971; Holt's resource-allocation
graph): a cycle among holders that each wait for another is a deadlock; one process per cycle is rolled back.

Contract: `resolve_deadlocks(session, retry) -> (retry, victims)`, run once per cycle after the timeouts and
before the queue (core/scheduler.py); pure, every change through the session:
- The waiters: NonStrict gangs with a spec, not satisfied nor timed out, holding reservations from earlier
  cycles (bindings in flight are bound), short of minMember by k members, with at least k pending (not gated nor
  held) members: those k (rank order) are what they need, counted per scheduling class. A gang waiting for pods,
  or at quorum (waiting for its gang group), waits for nothing held and has no edge.
- A waiter is blocked when its needed members do not fit (greedily, class by class, nodes whose static filters
  take the class: selector, required node affinity, taints, cordon) on the capacity free now (the cycle's
  workspace: nominations held) plus the capacity that is *coming*: pods bound there that declare a run time
  (PodRecord.run_seconds, as core/starvation.py) or are leaving (evicted, terminating). Pods without a declared
  run time never count as coming.
- Edge A -> B: A is blocked and B (another waiter) holds a reservation on a node that takes one of A's needed
  classes, of a resource that class requests. Cycles are the strongly connected components of more than one
  gang (Tarjan, iterative: O(gangs + edges)); a self-loop is impossible (no edge to itself).
- Per component, the victim is the gang with the lowest priority, then the newest (latest creation: the
  PodGroup's, else its earliest member's), then the greatest key. Its reservations are all released (in the
  workspace at once: the rest of the cycle sees that capacity free), its waiting time is cleared (it starts
  again with its next reservation), it backs off, and a Warning `DeadlockResolved` on its PodGroup names the
  cycle ("released 4 reservations: deadlock with ns/b (ns/a waits for capacity ns/b holds, ns/b for ns/a)").
  The graph is then rebuilt over the rest until no cycle remains (at most one round per waiter).
- Returns `retry` plus the other gangs of the cycles (attempted this cycle, backoff or not, so they take the
  freed capacity at once) and the victims' units (not attempted this cycle). The plan's `deadlocks` lists each
  `Deadlock` (the replay and the metrics read it). Strict gangs and bound pods are never touched. Cost: nothing
  unless two blocked waiters exist; then O(nodes + pods charged on them) once, plus waiters x classes x nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass

from gangsched.core.gangs import GangState
from gangsched.core.gangspec import GangMode
from gangsched.core.matching import static_block
from gangsched.core.messages import backoff, event, report_status
from gangsched.core.plan import Deadlock, GangStatus
from gangsched.core.records import NodeRecord, SchedulingClass
from gangsched.core.session import CycleSession
from gangsched.core.units import UnitKey

Room = dict[str, dict[str, int]]  # node -> capacity free now or coming


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
    if sum(1 for w in waiters.values() if w.need) < 2:
        return out, victims  # (the common case: no two gangs waiting on each other; costs O(reserving gangs))
    room = _room(session)
    survivors: set[UnitKey] = set()
    for _ in range(len(waiters)):
        graph = _graph(session, waiters, room)
        cycles = [c for c in _components(graph) if len(c) > 1]
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
    for key in store.reserving():
        gang = store.gangs.get(key)
        spec = gang.spec if gang is not None else None
        if gang is None or spec is None or spec.mode != GangMode.NON_STRICT:
            continue
        if session.is_satisfied(gang) or session.is_timed_out(gang):
            continue
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
        out[key] = _Waiter(gang, held, need, on)
    return out


def _add(into: dict[str, int], requests: Mapping[str, int], sign: int) -> None:
    for r, q in requests.items():
        into[r] = into.get(r, 0) + sign * q


def _room(session: CycleSession) -> Room:
    """Per node: free in the workspace now, plus the requests of pods that will end (declared run time, leaving)."""
    store = session.store
    pods, pods_on = store.pods, store.pods_on
    leaving = session.state.leaving
    evicting = session.state.evicting
    room: Room = {}
    for name in store.nodes:
        free = session.workspace.free(name)
        for pod_key in pods_on.get(name, ()):
            pod = pods.get(pod_key)
            if pod is None or pod.node_name is None or pod.terminal:
                continue
            if pod.run_seconds is not None or pod_key in leaving or pod_key in evicting:
                _add(free, pod.requests, 1)
        room[name] = free
    return room


def _fits(session: CycleSession, need: Counter[SchedulingClass], room: Room) -> bool:
    """Whether the members fit on `room` (greedy, largest class first; a copy of room is consumed)."""
    nodes = session.store.nodes
    left: Room = {}
    for cls, count in sorted(need.items(), key=lambda x: -sum(x[0].requests.values())):
        wanted = {r: q for r, q in cls.requests.items() if q > 0}
        for name, free in room.items():
            if count <= 0:
                break
            if static_block(cls, nodes[name]) is not None:
                continue
            have = left.setdefault(name, dict(free))
            n = min((have.get(r, 0) // q for r, q in wanted.items()), default=count)
            n = min(n, count)
            if n > 0:
                _add(have, {r: q * n for r, q in wanted.items()}, -1)
                count -= n
        if count > 0:
            return False
    return True


def _graph(session: CycleSession, waiters: Mapping[str, _Waiter], room: Room) -> dict[str, list[str]]:
    nodes = session.store.nodes
    graph: dict[str, list[str]] = {key: [] for key in waiters}
    for key, w in waiters.items():
        if not w.need or _fits(session, w.need, room):
            continue
        for other, h in waiters.items():
            if other != key and any(_usable(w.need, nodes.get(n), res) for n, res in h.on.items()):
                graph[key].append(other)
    return graph


def _usable(need: Iterable[SchedulingClass], node: NodeRecord | None, held: Mapping[str, int]) -> bool:
    """Whether a reservation on `node` holds a resource (other than the pod count) a needed class requests there."""
    if node is None:
        return False
    for cls in need:
        if static_block(cls, node) is None and any(
            q > 0 and r != "pods" and held.get(r, 0) > 0 for r, q in cls.requests.items()
        ):
            return True
    return False


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
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in graph[v]:
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return list(reversed(path))
                if w in within and w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def _release(session: CycleSession, victim: _Waiter, cycle: list[str], room: Room) -> None:
    gang = victim.gang
    held: dict[str, int] = {}
    for pod_key, node in victim.held:
        requests = session.store.pods[pod_key].requests
        session.release(pod_key, node)
        _add(room.setdefault(node, {}), requests, 1)
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
