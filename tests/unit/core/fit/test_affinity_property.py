"""Property tests of the incremental InterPodAffinity limits (core/fit/capacity.py over core/fit/pod_counts.py): after
any sequence of pods coming, moving, leaving and nodes relabelled, the store's class indexes equal a rebuild from
scratch; a cycle's workspace views, after any placements and rollbacks, equal the limits computed afresh.

Oracle: the definition of the filter (kube-scheduler interpodaffinity/filtering.go, evaluated per node from the
full pod list by core/fit/affinity.py `check`), against which the incremental bookkeeping must never drift.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gangsched.core.fit.capacity import ClassIndex, Workspace, class_index, fit_count
from gangsched.core.fit.filters import limit
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.records.records import SchedulingClass
from gangsched.models.node import node_from_api
from tests.builders import node_obj, pod_obj, pod_record

HOST = "kubernetes.io/hostname"


def _spec(kind: str | None, key: str, app: str) -> dict[str, Any]:
    if kind is None:
        return {}
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def _pod(name: str, app: str, spec: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return pod_obj(name, cpu="1", labels={"app": app}, spec_extra=spec, **kw)


def _node(c: SchedulerState, i: int, zone: int | None) -> None:
    labels = {HOST: f"n{i}"} | ({"zone": f"z{zone}"} if zone is not None else {})
    c.upsert_node(node_from_api(node_obj(f"n{i}", cpu="4", labels=labels)))


SHAPES = [  # the incoming classes: (app label, kind, topology key, selected app)
    ("a", "podAffinity", "zone", "a"),  # self-affine: the first-pod rule
    ("a", "podAffinity", "zone", "b"),
    ("b", "podAntiAffinity", HOST, "b"),
    ("b", "podAntiAffinity", "zone", "a"),
    ("a", None, "zone", "a"),  # no term: existing pods' anti-affinity only
    ("c", "podAntiAffinity", "zone", "c"),  # a selector of its own: its counter may be registered mid-cycle
]


def _classes(c: SchedulerState) -> list[SchedulingClass]:
    out = []
    for i, (app, kind, key, selected) in enumerate(SHAPES):
        pod = pod_record(_pod(f"incoming-{i}", app, _spec(kind, key, selected)), c, gang=None, ours=True)
        c.upsert_pod(pod)
        out.append(c.store.pods[pod.key].sclass)
    return out


def _mutate(c: SchedulerState, rng: random.Random, step: int) -> None:
    roll = rng.random()
    bound = [k for k, p in c.store.pods.items() if p.node_name is not None]
    if roll < 0.5 or not bound:
        kind = rng.choice([None, None, "podAntiAffinity"])
        spec = _spec(kind, rng.choice([HOST, "zone"]), rng.choice("ab"))
        node = f"n{rng.randrange(8)}"
        obj = _pod(f"p{step}", rng.choice("abc"), spec, node=node, phase="Running")
        c.upsert_pod(pod_record(obj, c, gang=None, ours=False))
    elif roll < 0.75:
        c.remove_pod(rng.choice(bound))
    elif roll < 0.9:
        key = rng.choice(bound)
        c.store.set_leaving(key, True)
    else:
        i = rng.randrange(8)
        _node(c, i, rng.choice([None, 0, 1, 2]))


def _fresh(c: SchedulerState, cls: SchedulingClass) -> dict[str, int]:
    idx = ClassIndex(cls, False)
    idx.rebuild(c.store)
    return idx.count


@pytest.mark.parametrize("seed", range(12))
def test_store_indexes_follow_every_change_as_a_rebuild_would(seed: int) -> None:
    rng = random.Random(seed)
    c = SchedulerState()
    for i in range(8):
        _node(c, i, i % 3 if i < 7 else None)
    classes = _classes(c)
    for step in range(60):
        _mutate(c, rng, step)
        for cls in classes:
            assert class_index(c.store, cls, spread=False).count == _fresh(c, cls), (seed, step, cls.id)


@pytest.mark.parametrize("seed", range(12))
def test_workspace_views_follow_placements_and_rollbacks(seed: int) -> None:
    rng = random.Random(100 + seed)
    c = SchedulerState()
    for i in range(8):
        _node(c, i, i % 3 if i < 7 else None)
    classes = _classes(c)
    for step in range(20):
        _mutate(c, rng, step)
    ws = Workspace(c.store, spread=False)
    for cls in classes[:2]:
        ws.view(cls)  # some views exist before the placements, the others are created after (new counters)
    marks: list[int] = []
    for _ in range(25):
        if marks and rng.random() < 0.2:
            ws.rollback(marks.pop())
            continue
        marks.append(ws.begin())
        cls = rng.choice(classes)
        ws.place(f"n{rng.randrange(8)}", cls.requests, 1, cls=cls)
        for view_cls in rng.sample(classes, 3):
            view = ws.view(view_cls)
            for name, node in c.store.nodes.items():
                if name not in view.idx.pref:
                    continue
                want = fit_count(view_cls.requests, node.allocatable, c.store.used.get(name), ws.extra.get(name))
                if want and view.idx.filters:
                    want = min(want, limit(view.idx.filters, view_cls, name, ws.usage))
                assert view.count_of(name) == want, (seed, view_cls.id, name)
