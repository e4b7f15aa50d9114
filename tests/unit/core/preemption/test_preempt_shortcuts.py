"""The victim search's shortcuts decide exactly as the full computation (docs/development.md "Behaviour-neutral
changes of the core"): the members that fit each node read from the workspace's class view (`counts`), and
victim_units' near-set (units charged off the searched nodes left out; a gang is near whole, so whether a member of
higher priority blocks it is asked of its members). The oracle is the search's own contract (core/preemption/
victim_search.py module docstring): units charged off the searched nodes free nothing there, and a node's room is
allocatable - used - the workspace's tentative usage."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.preemption.victim_search import PreemptionChoice, find_victims
from gangsched.core.preemption.victim_tracker import victim_units
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import NetworkTopology
from tests.builders import add_nodes, add_pod
from tests.unit.core.preemption.test_preemption import nodes, pending_gang, running_gang, story_tree


def _instance() -> tuple[SchedulerState, str]:
    """12 nodes in story_tree's topology (the ones searched): two victim gangs of different priorities, lone
    victims, a free node; 20 nodes outside it, each with a lone low-priority pod (so the near-set is used)."""
    c = SchedulerState()
    add_nodes(c, 12, prefix="node", gpu=8)
    for far in add_nodes(c, 20, prefix="far", gpu=8):
        add_pod(c, f"on-{far}", node=far, phase="Running", gpu=8, priority=0)
    c.set_topology(story_tree())
    running_gang(c, "gang1", nodes(4), priority=5)
    running_gang(c, "gang2", nodes(3, 4), priority=1, min_member=2)
    for i in (8, 9, 10):
        add_pod(c, f"lone{i}", node=f"node{i}", phase="Running", gpu=4, priority=i % 3)
    (first, *_) = pending_gang(c, "big", 8, group_size=4)
    return c, first


def _search(c: SchedulerState, first: str, **kw: Any) -> PreemptionChoice | None:
    session = CycleSession(c, 100.0, SchedulerConfig())
    cls = c.pods[first].sclass
    session.workspace.place("node7", {"nvidia.com/gpu": 2})  # tentative usage: the workspace's extra
    view = session.workspace.view(cls)
    return find_victims(
        c.store,
        requests=cls.requests,
        count=8,
        priority=1000,
        feasible=view.idx.pref.keys() & set(nodes(12)),
        extra=session.workspace.extra,
        topology=NetworkTopology(group_size=4),
        tree=c.store.topology,
        now=100.0,
        counts=view.count_of if kw.pop("counts", False) else None,
        **kw,
    )


def test_counts_from_the_view_decide_as_computed_room() -> None:
    c, first = _instance()
    computed = _search(c, first)
    assert computed is not None and computed.victims  # (the instance does preempt: the comparison means something)
    assert _search(c, first, counts=True) == computed


def test_near_set_left_out_changes_no_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    c, first = _instance()
    with_near = _search(c, first, excluded=())

    def every_unit(cluster: Any, priority: int, excluded: Any, protected: Any, nodes: Any, *rest: Any) -> Any:
        # (no near-set: every unit of the cluster)
        return victim_units(cluster, priority, excluded, protected, None, *rest)

    monkeypatch.setattr("gangsched.core.preemption.victim_search.victim_units", every_unit)
    assert _search(c, first, excluded=()) == with_near
