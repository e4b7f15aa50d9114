"""The gang rules of one attempt: quorum, roles, minResources, Strict/NonStrict, gang groups, pods scheduled alone.

Contract (over a CycleSession):
- `attempt_gang(session, gang) -> bool` (False: it only waited, not counted against the cycle's budget): a gang
  short of live members, of its gang group or tree (core/gang/trees.py), or with unready members
  (core/gang/readiness.py) waits; otherwise all pending members are placed at once inside a checkpoint. Quorum
  (bound + reservations + placements >= minMember and every role's minimum) reached: bound if its tree admits it,
  else kept as reservations. Missed: reclaim reservations, then group preemption; else Strict releases all and
  NonStrict keeps its placements as reservations; both back off.
- `schedule_alone(session, unit, pods, gang)`: pods without a gang or members of a satisfied gang, placed as ordinary
  pods (a gang's topology still applies); a pod alone that does not fit preempts lower-priority pods.
More: docs/modules.md#coreganggang_rulespy.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.fit.affinity import coupled
from gangsched.core.fit.pod_spread import hard as spread_hard
from gangsched.core.gang.partial_gangs import partial_gate, partial_note
from gangsched.core.gang.readiness import gang_blocked, ready_alone
from gangsched.core.gang.trees import describe, roles_short, tree_of, tree_ready, tree_short
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import GangStatus
from gangsched.core.placement.domains import domain_tree
from gangsched.core.placement.late_members import place_near_gang
from gangsched.core.placement.placement import nominated_fit, place
from gangsched.core.preemption.preempt_alone import preempt_alone
from gangsched.core.preemption.preempt_gang import (
    preempt,
    release_lower_nominations,
    release_nominations,
    settle_nominations,
)
from gangsched.core.preemption.reclaim import reclaim
from gangsched.core.preemption.reclaim import report as report_reclaimed
from gangsched.core.records.records import PodRecord
from gangsched.core.transaction.messages import (
    Shortfall,
    backoff,
    changed,
    event,
    explain,
    fail,
    failed_scheduling,
    report_status,
    success,
    tell,
    wait,
)
from gangsched.core.transaction.session import Checkpoint, CycleSession, Members, preemptor_key
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.core.values.resources import format_resources
from gangsched.core.values.units import UnitKey

MAX_PREEMPTING_ALONE = 16  # pods of one unit scheduled alone (late members) that look for victims per attempt


@dataclass(slots=True)
class _Attempt:
    """The placement tried for a gang's pending members, inside a checkpoint."""

    mark: Checkpoint
    lower: list[str]  # lower-priority preemptors whose nominations were released for it
    placed: list[tuple[PodRecord, str]]
    short: list[Shortfall]
    tier: int | None
    have: int  # bound + reserved + placed
    quorum: bool
    role_short: str | None  # "role ps: 0 of minimum 1 placeable" when a role's minimum is not met


def _why(session: CycleSession, spec: GangSpec, attempt: _Attempt) -> str:
    """What is short: the role, then the size classes, else the count."""
    parts = [attempt.role_short] if attempt.role_short is not None else []
    if attempt.short:
        parts.append(explain(session, attempt.short))
    return "; ".join(parts) or f"{attempt.have} of minMember {spec.min_member} placed"


def attempt_gang(session: CycleSession, gang: GangState) -> bool:
    spec = gang.spec
    assert spec is not None
    if partial_gate(session, gang):  # a bind burst cut short (core/gang/partial_gangs.py)
        return False
    members = session.members(gang)
    if gang_blocked(session, gang, members):  # gated or unready members (core/gang/readiness.py)
        return False
    alive = len(members.bound) + len(members.reserved) + len(members.pending)
    if not _enough_pods(session, gang, spec, members, alive):
        return False
    if (spec.group or spec.tree) and not _tree_has_pods(session, gang, spec, members):
        return False
    pending = members.pending
    if spec.total_member is not None:
        room = spec.total_member - len(members.bound) - len(members.reserved)
        pending = pending[: max(room, 0)]
    if not pending:
        return False
    if spec.min_resources and _min_resources_short(session, gang, spec, members):
        return True
    attempt = _try_place(session, gang, spec, members, pending)
    strict = spec.mode == GangMode.STRICT
    if not attempt.quorum and (strict or _could_preempt(session, gang, pending)):
        session.rollback(attempt.mark)
        taken = _reclaim(session, gang, spec, members, pending)
        if taken is None:
            if (not strict or not members.reserved) and preempt(session, gang, members, pending):
                return True
            if strict:
                _strict_failure(session, gang, spec, members, attempt, pending, alive)
                return True
            taken = _try_place(session, gang, spec, members, pending)  # NonStrict: nothing to take, keep what fits
        attempt = taken
    session.commit(attempt.mark)
    _keep(session, gang, attempt)
    if not attempt.quorum:  # NonStrict: keep what fits
        _nonstrict_progress(session, gang, spec, members, attempt, pending, alive)
        return True
    _quorum_reached(session, gang, spec, members, attempt, alive)
    unplaced = [p for p in pending if not session.is_placed(p.key)]
    if unplaced or attempt.short:
        backoff(session, gang.unit)
    else:
        success(session, gang.unit)
    return True


def _enough_pods(session: CycleSession, gang: GangState, spec: GangSpec, members: Members, alive: int) -> bool:
    if alive < spec.min_member:
        wait(session, gang, "WaitingForPods", f"{alive} of minMember {spec.min_member} pods exist")
        return False
    short = roles_short(spec, members.roles(session.store.pods, members.pending))
    if short is not None:
        wait(session, gang, "WaitingForPods", f"{short} pods exist")
        return False
    return True


def _tree_has_pods(session: CycleSession, gang: GangState, spec: GangSpec, members: Members) -> bool:
    """Koordinator's basic requirements check (a gang group), kube-scheduler's PreEnqueue (a gang tree): until it
    passes the gang holds nothing and its waiting time does not run (core/gang/trees.py)."""
    tree = tree_of(spec)
    assert tree is not None
    short = tree_short(session, gang, tree)
    if short is None:
        return True
    for pod_key, node in members.reserved:
        session.release(pod_key, node)
    if gang.first_reserved is not None:
        session.set_wait_start(gang.key, None)
    wait(session, gang, "WaitingForGangGroup", f"waiting for {describe(tree).partition(' [')[0]}: {short}")
    return False


def _try_place(
    session: CycleSession, gang: GangState, spec: GangSpec, members: Members, pending: list[PodRecord]
) -> _Attempt:
    mark = session.checkpoint()
    release_nominations(session, pending)  # a preemptor's nominated capacity is its own to use
    lower = release_lower_nominations(session, gang.key, pending)  # lower-priority preemptors' do not bind it
    outcome = nominated_fit(session, gang, pending)  # victims gone: the members go where they were nominated
    if outcome is None:
        counted = members.roles(session.store.pods)
        domains = domain_tree(session, gang)  # Kubernetes' hard topology constraints (core/placement/domains.py)
        outcome = place(
            session, spec, pending, partial=spec.mode == GangMode.NON_STRICT, counted=counted, domains=domains
        )
    placed, short, tier = outcome
    have = len(members.bound) + len(members.reserved) + len(placed)
    new = [pod for pod, _ in placed]
    role_short = roles_short(spec, members.roles(session.store.pods, new), placeable=True)
    quorum = have >= spec.min_member and role_short is None
    return _Attempt(mark, lower, placed, short, tier, have, quorum, role_short)


def _could_preempt(session: CycleSession, gang: GangState, pending: list[PodRecord]) -> bool:
    """Whether a NonStrict gang short of its quorum could take anything: its victims are still terminating, or
    there is a pod of lower priority and none of its members says preemptionPolicy Never."""
    if session.state.victims_of(gang.key):
        return True
    if any(p.preemption_policy == "Never" for p in pending):
        return False
    lowest = session.store.lowest_priority()
    return lowest is not None and lowest < min(p.priority for p in pending)


def _reclaim(
    session: CycleSession, gang: GangState, spec: GangSpec, members: Members, pending: list[PodRecord]
) -> _Attempt | None:
    """Reservations of lower-priority waiting gangs go before any running pod (core/preemption/reclaim.py); the attempt
    that reached the quorum with them, or None."""
    if (members.reserved and spec.mode == GangMode.STRICT) or session.state.victims_of(gang.key):
        return None
    got = reclaim(session, gang.key, pending, lambda: _try_place(session, gang, spec, members, pending))
    if got is None:
        return None
    mark, attempt, released = got
    session.commit(mark)  # (the attempt's own checkpoint, opened inside, is committed by the caller)
    report_reclaimed(session, "PodGroup", gang.key, released)
    return attempt


def _strict_failure(
    session: CycleSession,
    gang: GangState,
    spec: GangSpec,
    members: Members,
    attempt: _Attempt,
    pending: list[PodRecord],
    alive: int,
) -> None:
    for pod_key, node in members.reserved:
        session.release(pod_key, node)
    note = partial_note(session, gang, members)  # partially bound: its waiting time runs on
    if gang.first_reserved is not None and not note:
        session.set_wait_start(gang.key, None)
    why = _why(session, spec, attempt) + note
    message = (
        f"Strict gang cannot reach its quorum ({len(members.bound)} bound + {len(attempt.placed)} fit of "
        f"minMember {spec.min_member}): {why}"
    )
    bound = len(members.bound)
    fail(session, gang, message, pending, scheduled=bound, reserved=0, pending=alive - bound)


def _keep(session: CycleSession, gang: GangState, attempt: _Attempt) -> None:
    """The placements stay (this cycle): the gang's own nominations became placements."""
    session.take_nominated(gang.key)
    if attempt.lower:
        settle_nominations(session, f"gang {gang.key}", attempt.lower, attempt.placed)
    session.place([(pod.key, node) for pod, node in attempt.placed])
    if gang.first_reserved is None and attempt.placed and gang.key not in session.plan.first_reserved:
        session.set_wait_start(gang.key, session.now)


def _nonstrict_progress(
    session: CycleSession,
    gang: GangState,
    spec: GangSpec,
    members: Members,
    attempt: _Attempt,
    pending: list[PodRecord],
    alive: int,
) -> None:
    session.reserve([(pod.key, node) for pod, node in attempt.placed])
    why = _why(session, spec, attempt)
    message = f"holding {attempt.have} of minMember {spec.min_member}: {why}"
    pods = session.store.pods
    fail(
        session,
        gang,
        message,
        [p for p in pending if not session.is_placed(p.key)],
        scheduled=len(members.bound),
        reserved=len(members.reserved) + len(attempt.placed),
        pending=alive - attempt.have,
        reserved_pods=[*(pods[key] for key, _node in members.reserved), *(pod for pod, _node in attempt.placed)],
    )


def _quorum_reached(
    session: CycleSession, gang: GangState, spec: GangSpec, members: Members, attempt: _Attempt, alive: int
) -> None:
    tree = tree_of(spec)
    group = tree_ready(session, gang, tree) if tree is not None else [gang]
    if group is not None:
        for member_gang in group:
            _bind_gang(session, member_gang, attempt.tier if member_gang is gang else None)
        return
    session.reserve([(pod.key, node) for pod, node in attempt.placed])
    assert tree is not None
    message = f"quorum reached ({attempt.have} of {spec.min_member}); waiting for {describe(tree)}"
    reserved = len(members.reserved) + len(attempt.placed)
    status = GangStatus(
        len(members.bound),
        reserved,
        alive - attempt.have,
        "WaitingForGangGroup",
        message,
        attempt.tier,
    )
    report_status(session, gang, status)
    if changed(session, gang.unit, message):
        event(session, "PodGroup", gang.key, "Normal", "WaitingForGangGroup", message)


def _bind_gang(session: CycleSession, gang: GangState, tier: int | None) -> None:
    members = session.members(gang)
    session.bind(members.reserved)
    session.satisfy(gang.key)
    count = len(members.bound) + len(members.reserved)
    message = f"{count} members bound or binding (minMember {gang.spec.min_member if gang.spec else '?'})"
    # (the Scheduled event and phase come once the binds succeeded: runtime/podgroups.py)
    report_status(session, gang, GangStatus(count, 0, len(members.pending), "Binding", message, tier))
    if gang.spec is not None and gang.spec.network_topology is not None and session.store.topology is None:
        # hard never gets here (core/placement/placement.py)
        why = "soft networkTopology not applied: no topology is known"
        event(session, "PodGroup", gang.key, "Warning", "TopologyUnknown", why)


def _min_resources_short(session: CycleSession, gang: GangState, spec: GangSpec, members: Members) -> bool:
    assert spec.min_resources is not None
    free: dict[str, int] = {}
    for name, node in session.store.nodes.items():
        if node.unschedulable:
            continue
        for resource, quantity in session.workspace.free(name).items():
            if quantity > 0:
                free[resource] = free.get(resource, 0) + quantity
    pods = session.store.pods
    for pod_key in [k for k, _ in members.reserved] + members.bound:
        for resource, quantity in pods[pod_key].requests.items():
            free[resource] = free.get(resource, 0) + quantity
    missing = {r: q for r, q in spec.min_resources if free.get(r, 0) < q}
    if not missing:
        return False
    message = (
        f"minResources {format_resources(dict(spec.min_resources))} exceed the cluster's free "
        f"capacity {format_resources({r: free.get(r, 0) for r in missing})}"
    )
    bound, reserved, pending = len(members.bound), len(members.reserved), len(members.pending)
    fail(session, gang, message, members.pending, scheduled=bound, reserved=reserved, pending=pending)
    return True


def schedule_alone(session: CycleSession, unit: UnitKey, pods: list[PodRecord], *, gang: GangState | None) -> None:
    """Pods scheduled as ordinary pods: a pod without a gang, or members of a satisfied gang. When none of them fits,
    each preempts as kube-scheduler's DefaultPreemption would (core/preemption/preempt_alone.py)."""
    pods = ready_alone(session, unit, pods)
    if not pods:
        return
    mark = session.checkpoint()
    release_nominations(session, pods)  # a preemptor's nominated node is its own to use
    lower = release_lower_nominations(session, preemptor_key(unit), pods)  # lower-priority preemptors' do not bind it
    placed, short, _ = (
        place_near_gang(session, gang, pods) if gang is not None else place(session, None, pods, partial=True)
    )
    frees = [p for p in pods if not p.sclass.host_ports and not coupled(p.sclass) and not spread_hard(p.sclass)]
    if short and not placed and frees:  # the victim search frees no ports, no domain and keeps no skew
        session.rollback(mark)
        if _preempt_each(session, unit, frees, gang, whole=len(frees) == len(pods)):
            return
        mark = session.checkpoint()
        release_nominations(session, pods)
        lower = release_lower_nominations(session, preemptor_key(unit), pods)
        placed, short, _ = place_near_gang(session, gang, pods) if gang else place(session, None, pods, partial=True)
    session.commit(mark)
    session.take_nominated(preemptor_key(unit), {pod.key for pod in pods})
    if lower:
        settle_nominations(session, f"{'pod' if gang is None else 'gang'} {unit.key}", lower, placed)
    session.bind([(pod.key, node) for pod, node in placed])
    if not short:
        success(session, unit)
        if gang is not None:
            m = session.members(gang)
            message = "quorum reached; later members schedule alone"
            status = GangStatus(len(m.bound), len(m.reserved), len(m.pending), "Scheduled", message)
            report_status(session, gang, status)
        return
    done = {pod.key for pod, _ in placed}
    failed = [pod for pod in pods if pod.key not in done]
    message = explain(session, short)
    backoff(session, unit)
    failed_scheduling(session, failed, message)
    tell(session, unit, failed, "Unschedulable", message)


def _preempt_each(
    session: CycleSession, unit: UnitKey, pods: list[PodRecord], gang: GangState | None, *, whole: bool
) -> bool:
    """Each pod that fits nowhere takes lower-priority reservations or preempts (core/preemption/preempt_alone.py),
    at most MAX_PREEMPTING_ALONE of them per attempt (the others on the next one); True when at least one did (the
    unit backs off unless these are all its pods and every one is bound)."""
    outcomes = [preempt_alone(session, unit, pod, gang) for pod in pods[:MAX_PREEMPTING_ALONE]]
    whole = whole and len(pods) <= MAX_PREEMPTING_ALONE
    if not any(outcomes):
        return False
    if whole and all(outcome == "bound" for outcome in outcomes):
        success(session, unit)
    else:
        backoff(session, unit)
    return True
