"""Members without a rank label are placed in natural name order (w-1, w-2, ..., w-10), through the one
natural-order function (core/values/naming.py) that models/rank.py uses too."""

from __future__ import annotations

import random

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values import naming
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from gangsched.models import rank
from gangsched.models.rank import MemberMeta, rank_order
from tests.builders import add_nodes, add_pod

NAMES = [f"w-{i}" for i in range(1, 13)]


def _gang_of_twelve(order: list[str]) -> SchedulerState:
    c = SchedulerState()
    add_nodes(c, 12, gpu=8)
    c.upsert_gang(GangSpec("default", "w", 12))
    for name in order:
        add_pod(c, name, gang="default/w", gpu=8)  # no rank
    return c


def test_members_without_rank_are_placed_in_natural_name_order() -> None:
    shuffled = NAMES[:]
    random.Random(7).shuffle(shuffled)
    c = _gang_of_twelve(shuffled)
    pending = CycleSession(c, 0.0, SchedulerConfig()).members(c.gangs["default/w"]).pending
    assert [p.name for p in pending] == NAMES  # not w-1, w-10, w-11, w-12, w-2, ...
    plan = schedule(c, 0.0, SchedulerConfig())
    placed = dict(plan.bindings)  # rank i (natural order) takes the i-th node chosen: n0, n1, ..., n11
    assert [placed[f"default/{name}"] for name in NAMES] == [f"n{i}" for i in range(12)]


def test_explicit_ranks_come_first_then_natural_order() -> None:
    c = SchedulerState()
    add_nodes(c, 12, gpu=8)
    c.upsert_gang(GangSpec("default", "w", 12))
    for name in NAMES:
        add_pod(c, name, gang="default/w", gpu=8, rank=0 if name == "w-12" else None)
    pending = CycleSession(c, 0.0, SchedulerConfig()).members(c.gangs["default/w"]).pending
    assert [p.name for p in pending] == ["w-12", *NAMES[:-1]]


def test_one_natural_order_for_the_scheduler_and_models_rank() -> None:
    assert vars(rank)["natural_key"] is naming.natural_key  # models/rank.py reuses the core's function
    members = [MemberMeta(name) for name in reversed(NAMES)]
    assert rank_order(members) == NAMES
