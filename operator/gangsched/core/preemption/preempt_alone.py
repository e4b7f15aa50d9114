"""Preemption for a pod without a gang: kube-scheduler's DefaultPreemption for a single pod.

Oracle: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go (`SelectVictimsOnNode`: remove
every lower-priority pod of a node, then add back as many as still let the preemptor fit, the PDB-violating
ones first considered for keeping) and pkg/scheduler/framework/preemption/preemption.go (`pickOneNodeForPreemption`:
fewest PDB violations, then the lowest highest victim priority, ..., fewest victims; the preemptor is nominated
and waits in the queue while its victims terminate). Here the victim search is group preemption's
(core/preemption/preemption.py `find_victims` with count 1 and no topology): protected (PDB) victims only as a last
resort, the lowest highest victim priority, then the fewest victims; a victim gang is taken whole (or by its members
above its quorum), so no gang is left running below its quorum, which kube-scheduler does not know about.

Contract (over a CycleSession): `preempt_alone(session, unit, pod) -> bool` for a pending pod without a gang that
did not fit. True: handled (victims chosen: evictions, the pod nominated on the node they free, events
`Preempted` on the victims, condition and event `Preempting` on the pod; or its victims are still terminating and
it waits); the unit backs off and is attempted again when capacity is freed. False: nothing to preempt
(preemptionPolicy Never, no lower priority, no choice); its nomination is cleared.
"""

from __future__ import annotations

from gangsched.core.preemption.preempting import release_nominations
from gangsched.core.preemption.preemption import find_victims
from gangsched.core.transaction.messages import backoff, changed, conditions, event
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.records import PodRecord
from gangsched.core.values.units import UnitKey


def preempt_alone(session: CycleSession, unit: UnitKey, pod: PodRecord) -> bool:
    if pod.preemption_policy == "Never":
        return False
    outstanding = session.state.victims_of(pod.key)
    if outstanding:
        message = f"waiting for {len(outstanding)} preempted pod(s) to terminate"
        backoff(session, unit)
        if changed(session, unit, message):
            conditions(session, [pod], "Preempting", message)
        return True
    lowest = session.store.lowest_priority()
    if lowest is None or lowest >= pod.priority:
        session.clear_nominations([pod.key])
        return False
    view = session.workspace.view(pod.sclass)
    mark = session.checkpoint()
    release_nominations(session, [pod])  # its own held node counts as free for the search
    choice = find_victims(
        session.store,
        requests=pod.sclass.requests,
        count=1,
        priority=pod.priority,
        feasible=view.idx.pref.keys(),
        extra=session.workspace.extra,
        topology=None,
        tree=None,
        excluded=session.excluded_victims() | session.state.refused_for(pod.key),
        protected=session.state.protected,
    )
    if choice is None:
        session.rollback(mark)
        session.clear_nominations([pod.key])
        return False
    session.commit(mark)
    pods = session.store.pods
    grace = max((pods[v].grace for v in choice.victims if v in pods), default=0.0)
    session.evict(pod.key, choice.victims, session.now + grace)
    node = choice.nodes[0]
    session.nominate(pod.key, [pod], [node])
    message = (
        f"preempting {len(choice.victims)} lower-priority pod(s) of {', '.join(choice.victim_units)}; "
        f"nominated on {node}"
    )
    backoff(session, unit)
    changed(session, unit, message)
    conditions(session, [pod], "Preempting", message)
    event(session, "Pod", pod.key, "Normal", "Preempting", message)
    for victim in choice.victims:
        event(session, "Pod", victim, "Normal", "Preempted", f"Preempted by pod {pod.key} on node {node}")
    return True
