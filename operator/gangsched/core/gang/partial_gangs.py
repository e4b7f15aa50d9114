"""Partially bound Strict gangs: a bind burst cut short (the leader died in the middle of it, or some binds failed
and the room went meanwhile) leaves a Strict gang with fewer than minMember members bound, holding their nodes.

A gang is *partially bound* when it is Strict, has a spec, is not satisfied, has at least one member bound and
fewer than minMember, and every bound member is bound through the API (spec.nodeName, or our binding answered)
and still in phase Pending (it never ran), none being evicted. A gang whose bound members ran and that lost
members at run time is not one of them: that is the runtime gang-health policy's business, not this module's.

Contract (pure):
- `partial_members(session, gang, members) -> list[str]`: the bound members of a partially bound gang, else [].
- (core/memory/restore.py `restore_nominations`, on becoming leader): every partially bound gang's waiting time starts
  at `now`, whatever its PodGroup's scheduleStartTime said: it is counted from the restart.
- `partial_gate(session, gang) -> bool` (before a gang's attempt): True when the gang only waits because members
  this rule evicted still exist (they must be gone before it is placed whole: their quorum is gone with them);
  otherwise a partially bound gang without a waiting time starts one now (the gang rules then place its remaining
  members, the bound ones counting towards the quorum, and keep that waiting time on a Strict failure), False.
- `partial_note(session, gang, members) -> str`: what a Strict failure message adds for a partially bound gang.
- `evict_partial(session, gang) -> bool` (core/cycle/timers.py, when the waiting time of a gang ends): for a partially
  bound gang, its bound members are evicted (the plan's evictions, with the gang as their preemptor, so the core
  never chooses them twice and the runtime evicts them like preemption victims: runtime/preemption.py; owned pods
  are re-created by their controller), a Warning `PartialGangEvicted` on the PodGroup names them, its waiting time
  ends and it is not timed out: it starts again whole. False (nothing done) for any other gang.
Oracles: scheduler-plugins coscheduling `PostFilter`/`Permit` (a gang that cannot reach its quorum within
scheduleTimeoutSeconds is rejected whole); Koordinator's gang "once-satisfied" (bound children below minMember
never satisfy it).
"""

from __future__ import annotations

from gangsched.core.memory.gangs import GangState, may_be_partial
from gangsched.core.memory.plan import GangStatus
from gangsched.core.transaction.messages import event, pod_names, report_status, wait
from gangsched.core.transaction.session import CycleSession, Members


def partial_members(session: CycleSession, gang: GangState, members: Members) -> list[str]:
    """The bound members of a partially bound gang (module docstring), else []."""
    if not may_be_partial(gang) or session.is_satisfied(gang):
        return []
    assert gang.spec is not None
    bound = members.bound
    if not bound or len(bound) >= gang.spec.min_member:
        return []
    pods = session.store.pods
    for key in bound:
        pod = pods[key]
        if pod.node_name is None or pod.phase != "Pending" or session.is_evicting(key):
            return []
    return list(bound)


def _own_evicted(session: CycleSession, gang: GangState) -> list[str]:
    """Members of the gang evicted by this rule (the gang is their preemptor) that still exist."""
    own = session.plan.preemptions.get(gang.key, ()) or session.state.victims_of(gang.key)
    return [key for key in own if key in gang.members]


def partial_gate(session: CycleSession, gang: GangState) -> bool:
    evicted = _own_evicted(session, gang)
    if evicted:
        message = (
            f"waiting for {len(evicted)} evicted member(s) of its partial bind ({pod_names(evicted)}) to go; "
            "it then starts again whole"
        )
        wait(session, gang, "WaitingForEvictedMembers", message)
        return True
    if not may_be_partial(gang) or gang.first_reserved is not None or gang.key in session.plan.first_reserved:
        return False
    if partial_members(session, gang, session.members(gang)):
        session.set_wait_start(gang.key, session.now)
    return False


def partial_note(session: CycleSession, gang: GangState, members: Members) -> str:
    bound = partial_members(session, gang, members)
    if not bound:
        return ""
    return (
        f"; {len(bound)} bound member(s) never ran ({pod_names(bound)}): they are evicted when its waiting time "
        "ends unless the rest fits by then"
    )


def evict_partial(session: CycleSession, gang: GangState) -> bool:
    members = session.members(gang)
    bound = partial_members(session, gang, members)
    if not bound:
        return False
    assert gang.spec is not None
    for pod_key, node in members.reserved:
        session.release(pod_key, node)
    session.clear_nominations(p.key for p in members.pending)
    session.evict(gang.key, tuple(bound))
    session.set_wait_start(gang.key, None)
    message = (
        f"its waiting time ended with {len(bound)} of minMember {gang.spec.min_member} members bound and never "
        f"running (a bind burst cut short): evicted {pod_names(bound)} so the gang starts again whole"
    )
    event(session, "PodGroup", gang.key, "Warning", "PartialGangEvicted", message)
    pending = len(members.pending) + len(members.reserved)
    report_status(session, gang, GangStatus(0, 0, pending, "PartialGangEvicted", message))
    return True
