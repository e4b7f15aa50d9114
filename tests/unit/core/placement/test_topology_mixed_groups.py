"""Data-parallel groups and ranks for gangs of several scheduling classes (issue 13 item 4: "gangs of several
scheduling classes use the same tier ladder and rank layout as single-class gangs"), core/placement/topology_mixed.py.

Oracle: the network-topology-aware PodGroup design of seed 004 (a DP group is `groupSize` consecutive ranks, kept
within the lowest tier that can hold it: strategies (1,1), (2,1), (2,2), ...), as core/topology applies it to
single-class gangs; MPI Operator's launcher is rank 0 before the workers (mpi-operator v2beta1
pkg/controller/mpi_job_controller.go builds the hostfile with the launcher's slots first when it runs a worker
process) and KubeRay's head before its workers, so the first DP group holds the launcher or head.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, NetworkTopology, TopologyMode
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=1)
TOR = {"n0": "tor-a", "n1": "tor-a", "n2": "tor-b", "n3": "tor-b"}


def _cluster(c: SchedulerState) -> None:
    add_nodes(c, 4, gpu=8, cpu="16")
    c.set_topology(
        TopologyTree.from_domains(
            [
                Domain(1, "tor-a", parents=("spine",), children=("n0", "n1")),
                Domain(1, "tor-b", parents=("spine",), children=("n2", "n3")),
                Domain(2, "spine"),
            ]
        )
    )


def _gang(c: SchedulerState, workers: int, group_size: int, mode: TopologyMode = TopologyMode.SOFT) -> list[str]:
    """A launcher (cpu only, rank 0) and `workers` 8-GPU workers (ranks 1..): keys in rank order."""
    network = NetworkTopology(mode, 2, group_size=group_size)
    c.upsert_gang(GangSpec("default", "mpi", 1 + workers, network_topology=network))
    keys = [add_pod(c, "mpi-launcher", gang="default/mpi", rank=0, cpu="2")]
    keys += [add_pod(c, f"mpi-w{i}", gang="default/mpi", rank=1 + i, gpu=8, cpu="1") for i in range(workers)]
    return keys


def test_each_group_of_a_launcher_and_workers_stays_in_one_tor() -> None:
    """Launcher + 3 workers, groupSize 2, on an empty cluster: the gang needs the spine (3 GPU nodes), its groups
    (launcher, w0) and (w1, w2) each stay in one tor. Without groups, w0 and w1 took tor-a's two nodes and w2 went
    to tor-b, splitting the second group."""
    c = SchedulerState()
    _cluster(c)
    keys = _gang(c, 3, 2)
    plan = step(c, CFG, 0.0)
    where = dict(plan.bindings)
    assert sorted(where) == sorted(keys)
    launcher, w0, w1, w2 = keys
    assert TOR[where[launcher]] == TOR[where[w0]]
    assert TOR[where[w1]] == TOR[where[w2]] != TOR[where[w0]]
    assert plan.gang_status["default/mpi"].tier == 2


def test_the_first_group_takes_the_tightest_tor() -> None:
    """tor-b has one GPU node left (a blocker on n3): the first group (launcher, w0) fits there and takes it,
    the second group (w1, w2) takes tor-a whole."""
    c = SchedulerState()
    _cluster(c)
    add_pod(c, "blocker", gpu=8, node="n3", phase="Running")
    launcher, w0, w1, w2 = _gang(c, 3, 2)
    where = dict(step(c, CFG, 0.0).bindings)
    assert where[launcher] == where[w0] == "n2"
    assert {where[w1], where[w2]} == {"n0", "n1"}


def test_groups_too_large_for_any_tor_are_placed_at_the_whole_tier() -> None:
    """groupSize 4 (launcher + 3 workers) fits no tor of two GPU nodes: the gang is placed at tier 2 anyway (the
    pair (2, 2) of the ladder), hard mode included."""
    c = SchedulerState()
    _cluster(c)
    keys = _gang(c, 4, 4, TopologyMode.HARD)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys)
    assert plan.gang_status["default/mpi"].tier == 2


def test_group_size_one_changes_nothing() -> None:
    c, d = SchedulerState(), SchedulerState()
    _cluster(c)
    _cluster(d)
    _gang(c, 3, 1)
    c.upsert_gang(GangSpec("default", "mpi", 4, network_topology=NetworkTopology(TopologyMode.SOFT, 2)))
    _gang(d, 3, 1)
    assert step(c, CFG, 0.0).bindings == step(d, CFG, 0.0).bindings


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gpus=st.lists(st.integers(0, 8), min_size=4, max_size=4),
    workers=st.integers(1, 5),
    worker_gpu=st.integers(1, 8),
    group_size=st.integers(2, 4),
)
def test_groups_never_over_commit_and_stay_in_the_reported_tier(
    gpus: list[int], workers: int, worker_gpu: int, group_size: int
) -> None:
    """Whatever the free capacity: bound members never exceed a node's GPUs, every member is in one domain of the
    tier reported, and a gang that fits at all is bound (groups are a preference, never a reason to wait)."""
    c = SchedulerState()
    _cluster(c)
    for i, used in enumerate(gpus):
        if used:
            add_pod(c, f"used-{i}", gpu=used, node=f"n{i}", phase="Running")
    network = NetworkTopology(TopologyMode.SOFT, 2, group_size=group_size)
    c.upsert_gang(GangSpec("default", "g", 1 + workers, network_topology=network))
    add_pod(c, "g-head", gang="default/g", rank=0, cpu="2")
    for i in range(workers):
        add_pod(c, f"g-w{i}", gang="default/g", rank=1 + i, gpu=worker_gpu)
    plan = step(c, CFG, 0.0)
    free = {f"n{i}": 8 - used for i, used in enumerate(gpus)}
    fits = sum(f // worker_gpu for f in free.values()) >= workers
    assert bool(plan.bindings) == fits
    if not fits:
        return
    taken = Counter[str]()
    for key, node in plan.bindings:
        if key != "default/g-head":
            taken[node] += worker_gpu
    assert all(taken[n] <= free[n] for n in taken), (taken, free)
    tier = plan.gang_status["default/g"].tier
    nodes = {node for _, node in plan.bindings}
    assert tier == 2 or len({TOR[n] for n in nodes}) == 1, (tier, nodes)
