"""Large gangs do not starve: capacity held for the gang that has waited longest, and bounded backfill into it.

Contract (over a CycleSession: `hold_capacity` after the timeouts, `lifted` around each attempt, `finish` at the end):
- Who: unschedulable gangs failing for at least `config.hold_after_seconds` (0: no holds), by priority desc, then
  waiting time, then key: the first per priority level, at most `config.max_held_gangs`.
- Where: the nodes where it would start soonest (next-fit on allocatable; inside one allowed domain with a hard
  topology); a gang that fits nowhere holds nothing. What: free capacity there up to its need; never a
  reservation, never an over-commit. A held gang is attempted first in its priority level (`first_in_level`).
- `lifted`: the held gang, units of higher priority, or units whose pods all declare run times ending before the
  held gang's earliest start (`shadow`) see held capacity; others never do.
- Events CapacityHeld / CapacityHoldEnded; `hold_wakeup(session)`. Cost: one pass over queued gangs per cycle.
More: docs/modules.md#coregangstarvationpy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from gangsched.core.fit.capacity import fit_count
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import CapacityHold, GangStatus
from gangsched.core.records.records import PodRecord, pods_by_class
from gangsched.core.transaction.messages import event
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec, TopologyMode
from gangsched.core.values.resources import Resources
from gangsched.core.values.units import UnitKey

SUFFIX = "holding capacity on"


@dataclass(slots=True)
class _Active:
    """A hold in this cycle: its record, the gang's priority and what it took in the workspace."""

    record: CapacityHold
    priority: int
    taken: dict[str, Resources] = field(default_factory=dict)
    shadow: float | None = None  # memo of the gang's earliest start


@dataclass(slots=True)
class Holds:
    """The cycle's holds, in order (the first takes first)."""

    active: list[_Active] = field(default_factory=list)


def _eligible(session: CycleSession, gang: GangState) -> bool:
    last = gang.last_status
    spec = gang.spec
    network = spec.network_topology if spec is not None else None
    if network is not None and network.mode == TopologyMode.HARD and session.store.topology is None:
        return False  # it waits for a topology, not for capacity
    return (
        spec is not None
        and not gang.satisfied
        and not session.is_timed_out(gang)
        and last is not None
        and last.reason == "Unschedulable"
        and not session.state.victims_of(gang.key)
    )


def _candidates(session: CycleSession) -> Iterator[GangState]:
    """Eligible gangs (module docstring), by priority desc, then waiting_since, then key; eligibility is asked as
    they are taken (the caller stops early)."""
    cfg = session.config
    if cfg.hold_after_seconds <= 0:
        return
    queue = session.state.queue
    queued = queue.queued_gang_units
    gangs = session.store.gangs
    cutoff = session.now - cfg.hold_after_seconds
    found: list[tuple[int, float, str]] = []
    backoffs = queue.gang_backoffs
    for key in queued:  # (the gangs with pending members: fewer than those with a queue record)
        st = backoffs.get(key)
        since = st.waiting_since if st is not None else None
        if since is not None and since <= cutoff:
            found.append((-gangs[key].priority, since, key))
    found.sort()
    for _, _, key in found:
        if _eligible(session, gangs[key]):
            yield gangs[key]


def _targets(
    session: CycleSession, pods: list[PodRecord], spec: GangSpec | None = None
) -> tuple[tuple[str, Resources], ...] | None:
    """Where the members would go on the nodes' allocatable (module docstring); None: they never fit."""
    first = session.workspace.view(pods[0].sclass)
    order = sorted(first.idx.pref, key=lambda n: (-first.count_of(n), n))
    tree = session.store.topology
    network = spec.network_topology if spec is not None else None
    if tree is None or network is None or network.mode != TopologyMode.HARD or network.highest_tier_allowed is None:
        return _layout(session, pods, order, None)
    tier = network.highest_tier_allowed
    if tier > tree.tiers:  # a tier above the tree's: the whole cluster is one domain
        return _layout(session, pods, order, None)
    domains: dict[int, list[str]] = {}
    for name in order:
        index = tree.node_index.get(name)
        if index is not None:
            domains.setdefault(tree.domain_index(index, tier), []).append(name)
    # the domains with the most free room for the first class first (where the gang would start soonest)
    ranked = sorted(domains.items(), key=lambda item: (-sum(first.count_of(n) for n in item[1]), item[0]))
    for _, names in ranked:
        allowed = tree.domain_nodes(names[0], tier)
        found = _layout(session, pods, names, allowed)
        if found is not None:
            return found
    return None


def _layout(
    session: CycleSession, pods: list[PodRecord], order: list[str], allowed: frozenset[str] | None
) -> tuple[tuple[str, Resources], ...] | None:
    """The members laid out next-fit on the allocatable of `order`'s nodes (then the other classes' feasible nodes),
    only on `allowed` nodes when given; None: they do not fit."""
    nodes = session.store.nodes
    by_class = pods_by_class(pods)
    room: dict[str, Resources] = {}
    out: dict[str, Resources] = {}
    for members in by_class.values():
        cls = members[0].sclass
        feasible = session.workspace.view(cls).idx.pref
        left = len(members)
        for name in order if cls is pods[0].sclass else order + sorted(set(feasible) - set(order)):
            if name not in feasible or (allowed is not None and name not in allowed):
                continue
            free = room.setdefault(name, dict(nodes[name].allocatable))
            take = min(left, fit_count(cls.requests, free, None), 1 if cls.host_ports else left)
            if take <= 0:
                continue
            target = out.setdefault(name, {})
            for r, q in cls.requests.items():
                free[r] = free.get(r, 0) - q * take
                target[r] = target.get(r, 0) + q * take
            left -= take
            if not left:
                break
        if left:
            return None
    return tuple(out.items())


def _record(session: CycleSession, gang: GangState, old: CapacityHold | None) -> CapacityHold:
    """The gang's hold, kept or (re)computed; empty targets when it never fits (remembered, not held)."""
    pending = session.members(gang).pending
    gen = session.store.static_gen
    if old is not None and old.static_gen == gen and old.members == len(pending):
        return old
    targets = (_targets(session, pending, gang.spec) if pending else None) or ()
    since = old.since if old is not None and old.targets else session.now
    return CapacityHold(gang.key, since, targets, gen, len(pending))


def hold_capacity(session: CycleSession) -> Holds:
    """Start, keep or end the holds of this cycle and take their capacity in the workspace."""
    holds = Holds()
    existing = session.state.queue.holds
    chosen: list[tuple[GangState, CapacityHold]] = []
    levels: set[int] = set()
    for gang in _candidates(session):
        if len(holds.active) >= session.config.max_held_gangs:
            break
        if gang.priority in levels:
            continue
        old = existing.get(gang.key)
        record = _record(session, gang, old)
        chosen.append((gang, record))
        if record is not old:
            session.plan.capacity_holds[gang.key] = record
        if record.targets:
            levels.add(gang.priority)
            holds.active.append(_Active(record, gang.priority))
            if old is None or not old.targets:
                _announce(session, gang, record)
        elif old is not None and old.targets:
            _end(session, gang.key, old, forget=False)  # (its record without targets is kept)
    keys = {g.key for g, _ in chosen}
    for gang_key, held in existing.items():
        if gang_key not in keys:
            _end(session, gang_key, held)
    for active in holds.active:
        _take(session, active)
    return holds


def _announce(session: CycleSession, gang: GangState, record: CapacityHold) -> None:
    nodes = ", ".join(n for n, _ in record.targets[:8]) + (", ..." if len(record.targets) > 8 else "")
    why = (
        f"holding capacity on {len(record.targets)} nodes ({nodes}) for this gang: unschedulable for "
        f"{session.now - _since(session, gang):.0f}s; gangs of priority <= {gang.priority} may use it only "
        "with a declared run time that ends before this gang can start"
    )
    event(session, "PodGroup", gang.key, "Normal", "CapacityHeld", why)


def _since(session: CycleSession, gang: GangState) -> float:
    st = session.state.queue.gang_backoffs.get(gang.key)
    return st.waiting_since if st is not None and st.waiting_since is not None else session.now


def _end(session: CycleSession, gang_key: str, record: CapacityHold, *, forget: bool = True) -> None:
    if forget:
        session.plan.capacity_holds[gang_key] = None
    gang = session.store.gangs.get(gang_key)
    if gang is None or gang.satisfied or not gang.pending or not record.targets:
        return
    event(session, "PodGroup", gang_key, "Normal", "CapacityHoldEnded", "no longer holding capacity for this gang")
    last = gang.last_status
    if last is not None and SUFFIX in last.message and gang_key not in session.plan.gang_status:
        session.plan.gang_status[gang_key] = replace(last, message=_strip(last.message))


def _take(session: CycleSession, active: _Active) -> None:
    workspace = session.workspace
    nodes = session.store.nodes
    for name, target in active.record.targets:
        if name not in nodes:
            continue
        amount = workspace.free_of(name, target)
        if amount:
            workspace.place(name, amount)
            active.taken[name] = amount


def _lift(session: CycleSession, active: _Active) -> None:
    for name, amount in active.taken.items():
        session.workspace.release(name, amount)
    active.taken.clear()


def _run_seconds(session: CycleSession, unit: UnitKey) -> float | None:
    """The longest declared run time of the unit's pending pods; None when one has none."""
    pods = session.store.pods
    keys = [unit.key] if unit.is_pod else list(session.store.gangs[unit.key].pending)
    longest = 0.0
    for key in keys:
        run = pods[key].run_seconds
        if run is None:
            return None
        longest = max(longest, run)
    return longest if keys else None


def shadow(session: CycleSession, record: CapacityHold) -> float:
    """The held gang's earliest start on its target nodes (module docstring)."""
    now = session.now
    store = session.store
    short: dict[str, tuple[Resources, Mapping[str, int]]] = {}
    for name, target in record.targets:
        if name in store.nodes:
            free = dict(store.nodes[name].allocatable)
            for r, q in store.used.get(name, {}).items():
                free[r] = free.get(r, 0) - q
            if any(free.get(r, 0) < q for r, q in target.items()):
                short[name] = (free, target)
    if not short:
        return now
    latest = now
    for name, (free, target) in short.items():
        ends = []
        for key in store.pods_on.get(name, ()):
            pod = store.pods[key]
            run, start = pod.run_seconds, pod.started if pod.started is not None else now
            ends.append((now if run is None else max(now, start + run), pod.requests))
        ready = now  # never reached by running pods ending: something else holds it, it may go at once
        for end, requests in sorted(ends, key=lambda e: e[0]):
            for r, q in requests.items():
                free[r] = free.get(r, 0) + q
            if all(free.get(r, 0) >= q for r, q in target.items()):
                ready = end
                break
        latest = max(latest, ready)
    return latest


def _may_use(session: CycleSession, active: _Active, unit: UnitKey, priority: int, run: float | None) -> bool:
    if unit.key == active.record.gang_key and not unit.is_pod:
        return True
    if priority > active.priority:
        return True
    if run is None:
        return False
    if active.shadow is None:
        active.shadow = shadow(session, active.record)
    return session.now + run <= active.shadow


@contextmanager
def lifted(session: CycleSession, holds: Holds, unit: UnitKey) -> Iterator[None]:
    """Around a unit's attempt: the holds it may use are given back to the workspace, then taken again."""
    store = session.store
    priority = store.pods[unit.key].priority if unit.is_pod else store.gangs[unit.key].priority
    run = _run_seconds(session, unit)
    lift = [a for a in holds.active if _may_use(session, a, unit, priority, run)]
    for active in lift:
        _lift(session, active)
    try:
        yield
    finally:
        for active in lift:
            _take(session, active)


def first_in_level(session: CycleSession, holds: Holds, order: list[UnitKey]) -> list[UnitKey]:
    """The queue order with each held gang moved to the head of its priority level (Slurm's top job)."""
    if not holds.active:
        return order
    store = session.store
    for active in holds.active:
        unit = store.gangs[active.record.gang_key].unit
        if unit not in order:
            continue
        order.remove(unit)
        at = next(
            (
                i
                for i, u in enumerate(order)
                if (store.pods[u.key].priority if u.is_pod else store.gangs[u.key].priority) <= active.priority
            ),
            len(order),
        )
        order.insert(at, unit)
    return order


def _strip(message: str) -> str:
    return message.split(f"; {SUFFIX}", 1)[0]


def finish(session: CycleSession, holds: Holds) -> None:
    """The held gangs' status messages say so (module docstring)."""
    plan = session.plan
    for active in holds.active:
        key = active.record.gang_key
        gang = session.store.gangs[key]
        base: GangStatus | None = plan.gang_status.get(key, gang.last_status)
        if base is None or base.reason != "Unschedulable" or session.is_satisfied(gang):
            continue
        count = sum(1 for name, _ in active.record.targets if name in session.store.nodes)
        message = f"{_strip(base.message)}; {SUFFIX} {count} nodes for this gang since {rfc3339(active.record.since)}"
        if base is gang.last_status and message == base.message:  # (the status it has: nothing to report)
            plan.gang_status.pop(key, None)
            continue
        status = replace(base, message=message)
        if status != gang.last_status:
            plan.gang_status[key] = status
        else:
            plan.gang_status.pop(key, None)


def hold_wakeup(session: CycleSession) -> float | None:
    """When the next backed-off gang becomes old enough for a hold (None: none, or holds are off)."""
    after = session.config.hold_after_seconds
    if after <= 0:
        return None
    queue = session.state.queue
    held, backoffs = queue.holds, queue.gang_backoffs
    times = [
        st.waiting_since + after
        for key in queue.queued_gang_units  # (only a queued gang can be held: _candidates)
        if (st := backoffs.get(key)) is not None
        and st.waiting_since is not None
        and key not in held
        and st.waiting_since + after > session.now
    ]
    return min(times, default=None)


def rfc3339(epoch: float) -> str:
    """UTC RFC 3339 of epoch seconds (the core reads no clock and imports no datetime: civil-from-days)."""
    seconds = int(epoch)
    days, rest = divmod(seconds, 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    hour, rest = divmod(rest, 3600)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{rest // 60:02d}:{rest % 60:02d}Z"
