"""Preemption for a pod scheduled alone (without a gang, or a late member or replacement of a satisfied gang):
kube-scheduler's DefaultPreemption for a single pod, reservations first, gangs taken whole.

Contract (over a CycleSession): `preempt_alone(session, unit, pod, gang=None) -> str` for a pending pod that did
not fit (`gang`: its satisfied gang, for a late member; the pod's nominations are under `preemptor_key(unit)`):
- "bound": lower-priority reservations were taken (core/preemption/reclaim.py) and the pod is bound;
- "preempting": victims chosen by group preemption's search (count 1; a late member of a hard-topology gang only
  inside its domain) and the pod nominated, or its victims are still terminating and it waits;
- "": nothing to take (preemptionPolicy Never, no lower priority, no choice); its nomination is cleared.
The caller backs the unit off unless it is done. More: docs/modules.md#corepreemptionpreempt_alonepy.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from gangsched.core.memory.gangs import GangState
from gangsched.core.placement.late_members import hard_domain, place_near_gang
from gangsched.core.placement.pickers import Placed
from gangsched.core.placement.placement import place
from gangsched.core.preemption.preempt_gang import release_nominations
from gangsched.core.preemption.reclaim import reclaim
from gangsched.core.preemption.reclaim import report as report_reclaimed
from gangsched.core.preemption.victim_search import find_victims
from gangsched.core.records.records import PodRecord
from gangsched.core.transaction.messages import changed, conditions, event
from gangsched.core.transaction.session import Checkpoint, CycleSession, preemptor_key
from gangsched.core.values.units import UnitKey


@dataclass(slots=True)
class _Try:
    mark: Checkpoint
    placed: Placed

    @property
    def quorum(self) -> bool:
        return bool(self.placed)


def place_alone(session: CycleSession, gang: GangState | None, pods: list[PodRecord]) -> Placed:
    """Where pods scheduled alone go now (a late member near its gang: core/placement/late_members.py)."""
    if gang is not None:
        return place_near_gang(session, gang, pods)[0]
    return place(session, None, pods, partial=True)[0]


def preempt_alone(session: CycleSession, unit: UnitKey, pod: PodRecord, gang: GangState | None = None) -> str:
    if pod.preemption_policy == "Never":
        return ""
    outstanding = session.state.victims_of(pod.key)
    if outstanding:
        message = f"waiting for {len(outstanding)} preempted pod(s) to terminate"
        if changed(session, unit, message):
            conditions(session, [pod], "Preempting", message)
        return "preempting"
    lowest = session.store.lowest_priority()
    if lowest is None or lowest >= pod.priority:
        session.clear_nominations([pod.key])
        return ""
    mark = session.checkpoint()
    release_nominations(session, [pod])  # its own held node counts as free for the search
    if _reclaim(session, unit, pod, gang):
        session.commit(mark)
        return "bound"
    view = session.workspace.view(pod.sclass)
    domain = hard_domain(session, gang) if gang is not None else None
    feasible: Collection[str] = view.idx.pref.keys() if domain is None else domain & view.idx.pref.keys()
    choice = find_victims(
        session.store,
        requests=pod.sclass.requests,
        count=1,
        priority=pod.priority,
        feasible=feasible,
        extra=session.workspace.extra,
        topology=None,
        tree=None,
        excluded=session.excluded_victims(),
        refused=session.state.refused_for(pod.key),
        protected=session.state.protected,
        respect_pdb=session.config.preemption_pdb == "respect",
        now=session.now,
    )
    if choice is None:
        session.rollback(mark)
        session.clear_nominations([pod.key])
        return ""
    session.commit(mark)
    pods = session.store.pods
    grace = max((pods[v].grace for v in choice.victims if v in pods), default=0.0)
    session.evict(pod.key, choice.victims, session.now + grace)
    node = choice.nodes[0]
    session.nominate(preemptor_key(unit), [pod], [node])
    message = (
        f"preempting {len(choice.victims)} lower-priority pod(s) of {', '.join(choice.victim_units)}; "
        f"nominated on {node}"
    )
    changed(session, unit, message)
    conditions(session, [pod], "Preempting", message)
    event(session, "Pod", pod.key, "Normal", "Preempting", message)
    for victim in choice.victims:
        event(session, "Pod", victim, "Normal", "Preempted", f"Preempted by pod {pod.key} on node {node}")
    return "preempting"


def _reclaim(session: CycleSession, unit: UnitKey, pod: PodRecord, gang: GangState | None) -> bool:
    """Lower-priority gangs' reservations taken, gang by gang, until the pod fits: then it is bound."""

    def try_place() -> _Try:
        return _Try(session.checkpoint(), place_alone(session, gang, [pod]))

    got = reclaim(session, pod.gang or pod.key, [pod], try_place)
    if got is None:
        return False
    mark, attempt, released = got
    session.commit(attempt.mark)
    session.commit(mark)
    session.take_nominated(preemptor_key(unit), {pod.key})
    session.bind([(p.key, node) for p, node in attempt.placed])
    report_reclaimed(session, "Pod", pod.key, released)
    return True
