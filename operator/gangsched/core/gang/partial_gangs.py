"""Partially bound Strict gangs: a bind burst cut short leaves a Strict gang with fewer than minMember members bound
(through the API, still Pending, never ran), holding their nodes.

Contract (pure):
- `partial_members(session, gang, members) -> list[str]`: the bound members of a partially bound gang, else [].
- `partial_gate(session, gang) -> bool`: True while members this rule evicted still exist; otherwise starts the
  gang's waiting time if it has none (its remaining members are then placed, bound ones counting), False.
- `partial_note(session, gang, members) -> str`: what a Strict failure message adds.
- `evict_partial(session, gang) -> bool` (when its waiting time ends): evicts the bound members with the gang as
  preemptor, Warning `PartialGangEvicted`; the gang starts again whole, not timed out. False for any other gang.
Gangs that ran and lost members are core/gang/health.py's business, not this module's.
More: docs/modules.md#coregangpartial_gangspy.
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
