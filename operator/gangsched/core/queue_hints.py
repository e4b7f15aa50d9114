"""Queueing hints: whether capacity freed since a gang backed off could let it progress, without attempting it.

Contract: `cannot_progress(session, gang) -> bool`, asked by core/scheduler.py, in place of its attempt, for a gang
that backed off after a failure and whose backoff would end early only because capacity was freed since. True
only when a necessary condition for any progress fails: its pending members, each in a free slot of its class as
the attempt would find them (the cycle's workspace view, core/capacity.py: its fit counts summed, after the
preemptors' nominations and the starvation holds it may not use, core/starvation.py), are fewer than it needs
(Strict: minMember, holding nothing yet; NonStrict: one). It answers False (attempt it) whenever that count could
understate what an attempt sees: the gang could preempt or reclaim (a pod of lower priority exists), holds
reservations or nominations, has bound, gated or held members, is in a gang group, declares minResources, or a
member's class has its own pod (anti-)affinity or topology spread terms (their limits follow the pods the gang
places itself; host ports and existing pods' anti-affinity only lower them). The idea is kube-scheduler's
QueueingHintFn (an event requeues a pod only when it may make it schedulable): a skipped gang's backoff still ends
with time (config.backoff_max_seconds at the latest), and the plan records the freed generation it covered
(`Plan.hint_skips`), so the next cycles at the same capacity do not ask again.
"""

from __future__ import annotations

from gangsched.core.gangs import GangState
from gangsched.core.gangspec import GangMode
from gangsched.core.pod_spread import PodTopologySpread
from gangsched.core.records import SchedulingClass
from gangsched.core.session import CycleSession


def cannot_progress(session: CycleSession, gang: GangState) -> bool:
    """See the module docstring."""
    spec = gang.spec
    if spec is None or gang.satisfied or spec.group or spec.min_resources:
        return False
    lowest = session.store.lowest_priority()
    if lowest is None or gang.priority > lowest or session.state.victims_of(gang.key):
        return False
    members = session.members(gang)
    if members.bound or members.gated or members.held or not members.pending:
        return False
    strict = spec.mode == GangMode.STRICT
    if members.reserved and strict:
        return False
    wanted: dict[int, tuple[SchedulingClass, int]] = {}
    for pod in members.pending:
        if session.nomination(pod.key) is not None:
            return False
        cls, n = wanted.get(pod.sclass.id, (pod.sclass, 0))
        wanted[cls.id] = (cls, n + 1)
    need = spec.min_member if strict else 1
    fits = 0
    for cls, n in wanted.values():
        view = session.workspace.view(cls)
        if cls.affinity or cls.anti_affinity or any(isinstance(f, PodTopologySpread) for f in view.idx.filters):
            return False
        fits += min(n, sum(abs(k[1]) * len(b) for k, b in view.buckets.items()))  # its free slots
        if fits >= need:
            return False
    return True
