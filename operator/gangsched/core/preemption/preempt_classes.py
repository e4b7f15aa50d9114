"""Group preemption for a gang whose pending members have different sizes (several scheduling classes).

Contract (over a CycleSession; called by core/preemption/preempt_gang.py for a gang without topology):
`choose_classes(session, pending, priority, excluded, refused=()) -> (ordered_pending, PreemptionChoice) | None`
(`refused`: as find_victims takes it). The classes
are taken largest request first (the hardest to fit), each on the capacity the previous ones left: a class that
fits on the free capacity takes it without victims; otherwise `find_victims` (core/preemption/victim_search.py, count =
the class's members) chooses victims for it among the pods not yet chosen, and their capacity counts as freed for the
later classes. Greedy: the victim set is not guaranteed minimal over all class orders. None when some class finds
no room, or when no victim is needed at all (the gang fits: nothing to preempt). Everything it does to the
workspace is rolled back: the caller evicts and nominates (`ordered_pending[i]` goes to `choice.nodes[i]`).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from gangsched.core.fit.capacity import ClassView
from gangsched.core.preemption.victim_search import PreemptionChoice, find_victims
from gangsched.core.records.records import PodRecord, pods_by_class
from gangsched.core.transaction.session import CycleSession


def _size(pod: PodRecord) -> tuple[int, ...]:
    return tuple(sorted((q for r, q in pod.sclass.requests.items() if r != "pods"), reverse=True))


def _on_free(view: ClassView, count: int) -> list[str] | None:
    """The nodes of `count` pods on the free capacity of their class, or None when it is short."""
    free = [(node, fits) for node, fits in view.ordered() if fits > 0]
    if sum(fits for _, fits in free) < count:
        return None
    chosen: list[str] = []
    for node, fits in free:
        chosen.extend([node] * min(fits, count - len(chosen)))
    return chosen


def choose_classes(
    session: CycleSession,
    pending: list[PodRecord],
    priority: int,
    excluded: AbstractSet[str],
    refused: AbstractSet[str] = frozenset(),
) -> tuple[list[PodRecord], PreemptionChoice] | None:
    classes = sorted(pods_by_class(pending).values(), key=lambda ms: _size(ms[0]), reverse=True)
    store = session.store
    workspace = session.workspace
    mark = workspace.begin()
    victims: set[str] = set()
    units: set[str] = set()
    ordered: list[PodRecord] = []
    nodes: list[str] = []
    top, protected = -(1 << 62), False
    for members in classes:
        cls = members[0].sclass
        view = workspace.view(cls)
        chosen = _on_free(view, len(members))
        if chosen is None:
            choice = find_victims(
                store,
                requests=cls.requests,
                count=len(members),
                priority=priority,
                feasible=view.idx.pref.keys(),
                extra=workspace.extra,
                topology=None,
                tree=None,
                excluded=excluded | victims,
                refused=refused,
                protected=session.state.protected,
                respect_pdb=session.config.preemption_pdb == "respect",
                now=session.now,
            )
            if choice is None:
                workspace.rollback(mark)
                return None
            for key in choice.victims:  # their capacity is free for the later classes
                pod = store.pods[key]
                if pod.node_name is not None:
                    workspace.release(pod.node_name, pod.sclass.requests)
            victims.update(choice.victims)
            units.update(choice.victim_units)
            top, protected = max(top, choice.max_priority), protected or choice.protected
            chosen = list(choice.nodes)
        for node in chosen:
            workspace.place(node, cls.requests)
        ordered.extend(members)
        nodes.extend(chosen)
    workspace.rollback(mark)
    if not victims:
        return None
    result = PreemptionChoice(tuple(sorted(victims)), tuple(sorted(units)), tuple(nodes), None, None, top, protected)
    return ordered, result
