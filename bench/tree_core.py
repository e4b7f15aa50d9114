"""Benchmark of a gang tree: core.tree_gang1000_ms, a 1,000-pod gang declared as a 3-level tree (a root needing 4
middle groups, each needing its 5 leaf gangs of 50 pods: Kubernetes 1.37 CompositePodGroups over PodGroups) on 5,000
nodes: the decision that binds the whole tree, median of repeated runs (schedule() is pure: the same decision), with
core.gang1000_nodes5000_ms measured in the same run for comparison (`make bench BENCH=tree`)."""

from __future__ import annotations

import statistics
import time

from bench.bench_core import _cluster, _decision_ms, _pod, bench_gang1000
from bench.common import figure, log, summary
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from gangsched.core.values.gangtree import GangTree, TreeNode
from gangsched.models.pod import pod_from_api

MIDS, LEAVES, PODS = 4, 5, 50  # 4 x 5 x 50 = 1,000 pods


def _tree() -> GangTree:
    mids = [f"bench/mid-{m}" for m in range(MIDS)]
    nodes = [TreeNode("bench/root", MIDS, tuple(mids))]
    for m, mid in enumerate(mids):
        leaves = tuple(f"bench/leaf-{m}-{i}" for i in range(LEAVES))
        nodes.append(TreeNode(mid, LEAVES, leaves))
        nodes.extend(TreeNode(leaf, PODS) for leaf in leaves)
    return GangTree("bench/root", tuple(nodes))


def tree_cluster() -> SchedulerState:
    c = _cluster(5000)
    tree = _tree()
    for leaf in tree.leaves():
        name = leaf.partition("/")[2]
        c.upsert_gang(GangSpec("bench", name, PODS, tree=tree))
        for r in range(PODS):
            pod = pod_from_api(_pod(f"{name}-{r}", gpu=8), gang=leaf, rank=r, ours=True, classes=c.classes)
            c.upsert_pod(pod)
    return c


def bench_tree_gang1000() -> None:
    c = tree_cluster()
    config = SchedulerConfig()
    t0 = time.perf_counter()
    plan = schedule(c, 0.0, config)
    cold = (time.perf_counter() - t0) * 1000
    assert len(plan.bindings) == MIDS * LEAVES * PODS, len(plan.bindings)
    samples = _decision_ms(c, config, 9)
    figure(
        "core.tree_gang1000_ms",
        statistics.median(samples),
        unit="ms",
        target=25,
        better="lower",
        levels=3,
        leaf_gangs=MIDS * LEAVES,
        cold_first_decision_ms=round(cold, 2),
        **summary(samples),
    )


def main() -> None:
    log("core: gang of 1000 on 5000 nodes (for comparison, same run)")
    bench_gang1000()
    log("core: a 1000-pod gang as a 3-level tree (20 leaf gangs) on 5000 nodes")
    bench_tree_gang1000()


if __name__ == "__main__":
    main()
