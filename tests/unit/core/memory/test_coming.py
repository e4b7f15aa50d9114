"""Property: the store's coming capacity (core/memory/coming.py), kept as pods change, always equals one pass over
every pod: per node, the requests of the pods charged on the node they are bound to, not finished, that declare a
run time or are leaving; and its change log names every node whose coming capacity moved.

Oracle: the definition of the capacity that is coming in core/gang/deadlock.py's contract (a pod bound there that
declares a run time, PodRecord.run_seconds, or is leaving: metadata.deletionTimestamp set), which the deadlock
check recomputed from scratch at every cycle before this incremental book (commit dfd106d, `_add_coming`).
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gangsched.core.fit.capacity import class_index
from gangsched.core.gang.coming_fit import MAX_MEMOS, coming_gain
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from tests.builders import add_nodes, add_pod

OPS = st.lists(
    st.tuples(
        st.sampled_from(["bound", "pending", "bind", "bound-ok", "bind-failed", "finish", "leave", "stay", "remove"]),
        st.integers(0, 5),  # pod
        st.integers(0, 3),  # node
        st.integers(1, 4),  # GPUs
        st.booleans(),  # declares a run time
    ),
    max_size=40,
)


def _scratch(c: SchedulerState) -> dict[str, dict[str, int]]:
    store = c.store
    out: dict[str, dict[str, int]] = {}
    for key, pod in store.pods.items():
        node = pod.node_name
        if node is None or pod.terminal or key not in store.pods_on.get(node, ()):
            continue
        if pod.run_seconds is not None or key in store.leaving:
            into = out.setdefault(node, {})
            for r, q in pod.requests.items():
                into[r] = into.get(r, 0) + q
    return out


def _nonzero(by_node: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {n: {r: q for r, q in res.items() if q} for n, res in by_node.items()}


@settings(max_examples=200, deadline=None)
@given(ops=OPS)
@example(
    ops=[
        ("pending", 0, 0, 1, False),
        ("bind", 0, 1, 1, False),
        ("bound-ok", 0, 0, 1, False),
        ("leave", 0, 0, 1, False),
    ]
)
def test_the_coming_capacity_equals_a_pass_over_every_pod(ops: list[tuple[str, int, int, int, bool]]) -> None:
    c = SchedulerState()
    names = add_nodes(c, 4, gpu=8)
    coming = c.store.coming
    for op, i, n, gpu, timed in ops:
        key, name, node = f"default/p{i}", f"p{i}", names[n]
        extra = {"activeDeadlineSeconds": 60} if timed else None
        before, pos = _nonzero(_scratch(c)), coming.log_end()
        if op == "bound":
            add_pod(c, name, node=node, phase="Running", gpu=gpu, spec_extra=extra)
        elif op == "pending":
            add_pod(c, name, gpu=gpu, spec_extra=extra)
        elif op == "bind" and key in c.pods and c.pods[key].node_name is None:
            c.apply(Plan(bindings=[(key, node)]))
        elif op == "bound-ok" and c.store.reservation_of(key) is not None:
            c.bind_succeeded(key)
        elif op == "bind-failed" and c.store.reservation_of(key) is not None:
            c.bind_failed(key)
        elif op == "finish" and key in c.pods and c.pods[key].node_name is not None:
            add_pod(c, name, node=c.pods[key].node_name, phase="Succeeded", gpu=gpu, spec_extra=extra)
        elif op in ("leave", "stay"):
            c.set_leaving(key, op == "leave")
        elif op == "remove":
            c.remove_pod(key)
        after = _nonzero(_scratch(c))
        assert _nonzero(coming.by_node) == after
        assert set(coming.by_node) == set(after)  # (a node stays while a pod is counted there, even at 0)
        moved = {m for m in set(before) | set(after) if before.get(m) != after.get(m)}
        log = coming.changes_since(pos)
        assert log is not None and moved <= set(log)
    assert set(coming.of) <= set(c.pods)


def test_the_per_class_memos_are_bounded_and_a_dropped_one_is_rebuilt_alike() -> None:
    """What the coming capacity adds per class (core/gang/coming_fit.py) is kept for at most MAX_MEMOS classes; a
    class asked again after its memo was dropped gets the same counts (oracle: as above, by hand: 4 GPUs free and
    4 coming on n0 take 4 more 1-GPU pods there, the other nodes none more)."""
    c = SchedulerState()
    names = add_nodes(c, 3, gpu=8)
    add_pod(c, "run", node=names[0], phase="Running", gpu=4, spec_extra={"activeDeadlineSeconds": 60})
    classes = [c.store.pods[add_pod(c, f"probe-{g}", gpu=1, cpu=f"{g + 1}m")].sclass for g in range(MAX_MEMOS + 6)]
    assert len({cls.id for cls in classes}) == len(classes)
    for cls in [*classes, classes[0]]:
        total, gain = coming_gain(c.store, class_index(c.store, cls, spread=False))
        assert (total, dict(gain)) == (4, {names[0]: 4})
        assert len(c.store.coming.caches) <= MAX_MEMOS
