"""The preemption step of a cycle: a gang that does not reach its quorum evicts lower-priority victims, and the
capacity nominated for preemptors while their victims terminate.

Contract (over a CycleSession; the victim search itself is core/preemption/victim_search.py):
- `preempt(session, gang, members, pending) -> bool`: for pending members none of which has preemptionPolicy
  Never; classes handled one by one (core/preemption/preempt_classes.py) except with a networkTopology; members
  with host ports or DoNotSchedule spread constraints do not preempt. True: victims chosen (evictions,
  nominations, events, status Preempting) or still terminating; False: nothing to preempt, nominations cleared.
- `release_nominations(session, pods)`: a preemptor's nominated capacity is its own; `release_lower_nominations`:
  lower-priority preemptors' nominations do not bind these members; `settle_nominations`: a lower-priority
  preemptor whose nominated nodes were used loses them (event NominationLost), the others' are put back.
More: docs/modules.md#corepreemptionpreempt_gangpy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Set as AbstractSet

from gangsched.core.fit.affinity import coupled
from gangsched.core.fit.pod_spread import hard as spread_hard
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import GangStatus
from gangsched.core.memory.podstate import NOMINATED
from gangsched.core.preemption.preempt_classes import choose_classes
from gangsched.core.preemption.victim_search import PreemptionChoice, find_victims, tier_label
from gangsched.core.records.records import PodRecord
from gangsched.core.transaction.messages import backoff, changed, conditions, event, report_status
from gangsched.core.transaction.session import POD_PREEMPTOR, CycleSession, Members


def release_nominations(session: CycleSession, pods: list[PodRecord]) -> None:
    if not session.store.pods_in(NOMINATED):
        return
    for pod in pods:
        node = session.nomination(pod.key)
        if node is not None:
            session.workspace.release(node, pod.sclass.requests)


def _preemptor(session: CycleSession, key: str) -> tuple[str, str, int] | None:
    """The kind ("PodGroup" or "Pod"), key and priority of the preemptor whose nominations are under `key` (None:
    gone)."""
    if key.startswith(POD_PREEMPTOR):
        pod = session.store.pods.get(key[len(POD_PREEMPTOR) :])
        return ("Pod", pod.key, pod.priority) if pod is not None else None
    other = session.store.gangs.get(key)
    return ("PodGroup", key, other.priority) if other is not None else None


def release_lower_nominations(session: CycleSession, own: str, pending: list[PodRecord]) -> list[str]:
    """Release (in the open transaction) the nominations of preemptors (gangs, or pods alone) of lower priority than
    these pods; `own`: the key of their own nominations (session.py `preemptor_key`)."""
    if not session.nominated or not pending:
        return []
    priority = min(p.priority for p in pending)
    out = []
    for other_key, noms in session.nominated.items():
        preemptor = _preemptor(session, other_key)
        if other_key == own or preemptor is None or preemptor[2] >= priority:
            continue
        for _, node, requests in noms:
            session.workspace.release(node, requests)
        out.append(other_key)
    return out


def settle_nominations(session: CycleSession, who: str, lower: list[str], placed: list[tuple[PodRecord, str]]) -> None:
    """After a kept placement: lower-priority preemptors lose the nominated nodes it used; other nominations come back.
    `who`: the preemptor that used them, as messages name it ("gang ns/g", "pod ns/p")."""
    used = {node for _, node in placed}
    for other_key in lower:
        noms = session.nominated[other_key]
        if any(node in used for _, node, _ in noms):
            session.clear_nominations(key for key, _, _ in noms)
            session.take_nominated(other_key)
            message = f"its held nodes went to higher-priority {who}; it will choose again"
            preemptor = _preemptor(session, other_key)
            if preemptor is not None:
                event(session, preemptor[0], preemptor[1], "Warning", "NominationLost", message)
        else:
            for _, node, requests in noms:
                session.workspace.place(node, requests)


def preempt(session: CycleSession, gang: GangState, members: Members, pending: list[PodRecord]) -> bool:
    """Group preemption for a gang that does not reach its quorum (see the module docstring)."""
    if not pending or any(p.preemption_policy == "Never" for p in pending):
        return False
    mixed = len({p.sclass.id for p in pending}) > 1
    if mixed and gang.spec is not None and gang.spec.network_topology is not None and session.store.topology:
        message = (
            "a gang whose pending members have different sizes and a networkTopology does not preempt "
            "(group preemption places one size per topology domain search); it waits for free capacity"
        )
        event(session, "PodGroup", gang.key, "Warning", "PreemptionUnsupported", message)
        return False
    if any(p.sclass.host_ports or coupled(p.sclass) or spread_hard(p.sclass) for p in pending):
        return False  # the victim search counts resources, not host ports, pod affinity or skew: it would evict in vain
    outstanding = session.state.victims_of(gang.key)
    lowest = session.store.lowest_priority()
    if not outstanding and (lowest is None or lowest >= min(p.priority for p in pending)):
        session.clear_nominations(p.key for p in pending)
        return False  # nobody has a lower priority: nothing to preempt
    if outstanding:
        _wait_for_victims(session, gang, members, pending, len(outstanding))
        return True
    refused = session.state.refused_for(gang.key)
    if mixed:
        got = _choose_mixed(session, pending, refused)
        choice = got[1] if got is not None else None
        pending = got[0] if got is not None else pending
    else:
        choice = _choose(session, gang, pending, refused)
    if choice is None:
        session.clear_nominations(p.key for p in pending)
        if not mixed:
            _report_budgets(session, gang, pending, refused)
        if refused:
            message = (
                f"the eviction of {len(refused)} victim(s) was refused (PodDisruptionBudget): they are not asked "
                "again for this gang until their budget, the pods or the cluster's nodes change"
            )
            event(session, "PodGroup", gang.key, "Warning", "PreemptionRefused", message)
        return False
    _record_choice(session, gang, members, pending, choice)
    backoff(session, gang.unit)
    return True


def _wait_for_victims(
    session: CycleSession, gang: GangState, members: Members, pending: list[PodRecord], outstanding: int
) -> None:
    message = f"waiting for {outstanding} preempted pod(s) to terminate"
    unit = gang.unit
    backoff(session, unit)
    tier = gang.last_status.tier if gang.last_status is not None else None
    status = GangStatus(len(members.bound), len(members.reserved), len(pending), "Preempting", message, tier)
    report_status(session, gang, status)
    changed(session, unit, message)


def _choose_mixed(
    session: CycleSession, pending: list[PodRecord], refused: AbstractSet[str]
) -> tuple[list[PodRecord], PreemptionChoice] | None:
    """Members of several sizes (core/preemption/preempt_classes.py); their own nominations are released for the
    search."""
    mark = session.checkpoint()
    release_nominations(session, pending)
    got = choose_classes(session, pending, min(p.priority for p in pending), session.excluded_victims(), refused)
    if got is None:
        session.rollback(mark)
    else:
        session.commit(mark)
    return got


def _report_budgets(
    session: CycleSession, gang: GangState, pending: list[PodRecord], refused: AbstractSet[str]
) -> None:
    """Under `preemption.pdb: respect`, when only victim gangs some PodDisruptionBudget would cut short make room,
    Warning `PreemptionRefused` names them (nothing is evicted)."""
    protected = session.state.protected
    if session.config.preemption_pdb != "respect" or not protected:
        return
    choice = _choose(session, gang, pending, refused, respect_pdb=False, keep=False)
    pods = session.store.pods
    gangs = sorted({g for v in choice.victims if v in protected and (g := pods[v].gang)} if choice else set())
    if gangs:
        message = (
            f"preemption would leave victim gang(s) {', '.join(gangs)} below their quorum: a PodDisruptionBudget's "
            "status says the eviction of some of their members would be refused (preemption.pdb: respect); "
            "nothing is evicted until the budget allows it"
        )
        event(session, "PodGroup", gang.key, "Warning", "PreemptionRefused", message)


def _choose(
    session: CycleSession,
    gang: GangState,
    pending: list[PodRecord],
    refused: AbstractSet[str],
    *,
    respect_pdb: bool | None = None,
    keep: bool = True,
) -> PreemptionChoice | None:
    """The victims and nodes; the members' own nominations are released for the search (kept on success, unless
    `keep` is False: a search only to explain). `respect_pdb`: None for the configured policy."""
    spec = gang.spec
    assert spec is not None
    store = session.store
    cls = pending[0].sclass
    view = session.workspace.view(cls)
    tree = store.topology if spec.network_topology is not None else None
    mark = session.checkpoint()
    release_nominations(session, pending)
    choice = find_victims(
        store,
        requests=cls.requests,
        count=len(pending),
        priority=min(p.priority for p in pending),
        feasible=view.idx.pref.keys(),
        extra=session.workspace.extra,
        topology=spec.network_topology if tree is not None else None,
        tree=tree,
        excluded=session.excluded_victims(),
        refused=refused,
        protected=session.state.protected,
        respect_pdb=session.config.preemption_pdb == "respect" if respect_pdb is None else respect_pdb,
        now=session.now,
        counts=None if view.idx.filters else view.count_of,  # (no filter: its counts are the free room's)
    )
    if choice is None or not keep:
        session.rollback(mark)
    else:
        session.commit(mark)
    return choice


def _record_choice(
    session: CycleSession, gang: GangState, members: Members, pending: list[PodRecord], choice: PreemptionChoice
) -> None:
    pods = session.store.pods
    grace = max((pods[v].grace for v in choice.victims if v in pods), default=0.0)
    session.evict(gang.key, choice.victims, session.now + grace)  # its waiting time waits for them (timers.py)
    session.nominate(gang.key, pending, list(choice.nodes))  # the held capacity moves to the new nominations
    if gang.first_reserved is None and gang.key not in session.plan.first_reserved:
        session.set_wait_start(gang.key, session.now)  # the waiting time bounds how long it holds nodes
    tree = session.store.topology
    label = tier_label(choice.whole_tier, tree.tiers if tree is not None else None)
    message = (
        f"preempting {len(choice.victims)} lower-priority pod(s) of {', '.join(choice.victim_units)} "
        f"for {label} placement; {len(pending)} member(s) nominated"
    )
    status = GangStatus(
        len(members.bound), len(members.reserved), len(pending), "Preempting", message, choice.whole_tier
    )
    report_status(session, gang, status)
    changed(session, gang.unit, message)
    event(session, "PodGroup", gang.key, "Normal", "Preempting", message)
    conditions(session, pending, "Preempting", message)
    _report_victims(session, gang, choice, label)


def _report_victims(session: CycleSession, gang: GangState, choice: PreemptionChoice, label: str) -> None:
    pods = session.store.pods
    per_gang: Counter[str] = Counter()
    for victim in choice.victims:
        event(session, "Pod", victim, "Normal", "Preempted", f"Preempted by gang {gang.key} for {label} placement")
        victim_gang = pods[victim].gang
        if victim_gang is not None:
            per_gang[victim_gang] += 1
    for victim_gang, count in sorted(per_gang.items()):
        note = f"{count} member(s) preempted by gang {gang.key} for {label} placement"
        event(session, "PodGroup", victim_gang, "Warning", "Preempted", note)
        state = session.store.gangs.get(victim_gang)
        if state is not None and all(
            session.is_evicting(k) for k in state.members if k in pods and pods[k].node_name and not pods[k].terminal
        ):
            status = GangStatus(0, 0, 0, "Preempted", f"{note}; it must reach its quorum again")
            report_status(session, state, status)
