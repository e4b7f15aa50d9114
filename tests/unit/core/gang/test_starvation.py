"""Large gangs do not starve (issue 13 item 12): capacity held for the gang unschedulable longest, bounded backfill.

Oracles (nobody here wrote them):
- Slurm's backfill scheduler (src/plugins/sched/backfill/backfill.c `_attempt_backfill`; slurm.conf man page:
  "Backfill scheduling will initiate lower-priority jobs if doing so does not delay the expected initiation time of
  any higher priority job"), which needs each job's time limit: a job without one cannot be proven not to delay.
- IBM LSF's backfill ("LSF assumes that a job can run until its run limit expires"; reserved slots may be used by
  jobs that finish before the big job's computed start).
- Volcano's design for starving big jobs (docs/design/resource-reservation-design.md: the target job is picked by
  waiting time; the nodes locked for it take no new jobs).
All runs use virtual time: `now` is an argument of every cycle (the core reads no clock).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.gang.starvation import hold_capacity, rfc3339, shadow
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, NetworkTopology, TopologyMode
from tests.builders import add_nodes, pod_obj, pod_record

BIG = "default/big"
GPU = "nvidia.com/gpu"


def _pod(
    name: str, *, gang: str, gpu: int, run: float | None, created: float, node: str | None = None
) -> dict[str, Any]:
    annotations = {"scheduling.gangsched.io/expected-duration": f"{run:g}s"} if run is not None else None
    phase = "Running" if node else "Pending"
    return pod_obj(name, gpu=gpu, node=node, phase=phase, annotations=annotations, created=rfc3339(created))


class Sim:
    """A cluster driven in virtual time: bound pods run for their duration, then succeed."""

    def __init__(self, config: SchedulerConfig, *, nodes: int = 8, gpus: int = 8) -> None:
        self.c = SchedulerState()
        self.config = config
        self.nodes = add_nodes(self.c, nodes, prefix="node", gpu=gpus)
        self.now = 0.0
        self.running: dict[str, float] = {}  # pod -> when it ends
        self.duration: dict[str, float] = {}
        self.started: dict[str, float] = {}  # gang -> first bind time
        self.plans: list[Plan] = []
        self.serial = 0

    def gang(
        self, name: str, members: int, gpu: int, *, run: float | None, duration: float, declare: bool = True
    ) -> str:
        key = f"default/{name}"
        self.c.upsert_gang(GangSpec("default", name, members))
        for i in range(members):
            pod = pod_record(
                _pod(f"{name}-{i}", gang=key, gpu=gpu, run=run if declare else None, created=self.now),
                self.c,
                gang=key,
                rank=i,
                ours=True,
            )
            self.c.upsert_pod(dataclasses.replace(pod, created=self.now))
            self.duration[pod.key] = duration
        return key

    def running_pod(self, name: str, node: str, *, run: float, ends: float) -> None:
        key = f"default/{name}"
        self.c.upsert_gang(GangSpec("default", name, 1))
        pod = pod_record(
            _pod(f"{name}-0", gang=key, gpu=1, run=run, created=0.0, node=node), self.c, gang=key, rank=0, ours=True
        )
        self.c.upsert_pod(dataclasses.replace(pod, started=ends - run))
        self.running[pod.key] = ends

    def small(self, *, run: float, declare: bool = True) -> str:
        self.serial += 1
        return self.gang(f"s{self.serial}", 1, 1, run=run, duration=run, declare=declare)

    def cycles(self) -> None:
        for _ in range(200):
            plan = schedule(self.c, self.now, self.config)
            self.c.apply(plan)
            self.plans.append(plan)
            for key, node in plan.bindings:
                self.c.bind_succeeded(key)
                pod = self.c.pods[key]
                self.c.upsert_pod(dataclasses.replace(pod, node_name=node, phase="Running", started=self.now))
                self.running[key] = self.now + self.duration[key]
                gang = pod.gang
                assert gang is not None
                self.started.setdefault(gang, self.now)
            if plan.empty:
                return
        raise AssertionError("the cycles did not settle")

    def advance(self, dt: float) -> None:
        self.now += dt
        for key, end in list(self.running.items()):
            if end <= self.now:
                del self.running[key]
                self.c.upsert_pod(dataclasses.replace(self.c.pods[key], phase="Succeeded"))


def _busy_cluster(hold_after: float, *, declare: bool = True, horizon: float = 100.0) -> Sim:
    """8 nodes x 8 GPUs full of 1-GPU jobs of 8 s (one ends every 1/8 s); 10 new ones a second (8 end); at t=1 a
    gang of 8 x 8 GPUs of the same priority arrives."""
    sim = Sim(SchedulerConfig(max_units_per_cycle=64, hold_after_seconds=hold_after, backoff_max_seconds=10.0))
    for i in range(64):
        sim.running_pod(f"r{i}", sim.nodes[i % 8], run=8.0, ends=8.0 * (i + 1) / 64)
    sim.cycles()
    steps = int(horizon / 0.5)
    for step in range(steps):
        sim.advance(0.5)
        if step == 1:
            sim.gang("big", 8, 8, run=None, duration=1000.0)
        for _ in range(5):
            sim.small(run=8.0, declare=declare)
        sim.cycles()
        if BIG in sim.started:
            break
    return sim


def test_without_the_rule_the_big_gang_never_starts() -> None:
    sim = _busy_cluster(0.0)
    assert BIG not in sim.started
    assert not any(p.capacity_holds for p in sim.plans)
    assert sum(1 for g in sim.started if g != BIG) > 700  # the small gangs kept every GPU busy


def test_with_the_rule_the_big_gang_starts_within_hold_after_plus_the_longest_run() -> None:
    """Bound: it arrives at t=1, is unschedulable from then; the hold starts 60 s later; the running jobs (8 s
    each, declared) end within 8 s and nothing new may start in held capacity: started by 1 + 60 + 8 (+ a step)."""
    sim = _busy_cluster(60.0)
    assert BIG in sim.started
    assert 61.0 <= sim.started[BIG] <= 1.0 + 60.0 + 8.0 + 0.5
    held = [e for p in sim.plans for e in p.events if e.reason == "CapacityHeld" and e.name == "big"]
    assert len(held) == 1 and held[0].message.startswith("holding capacity on 8 nodes")
    statuses = [p.gang_status[BIG] for p in sim.plans if BIG in p.gang_status]
    assert any("holding capacity on 8 nodes for this gang since 1970-01-01T00:01:" in s.message for s in statuses)
    assert statuses[-1].reason == "Binding"  # its quorum decided: Scheduled once the binds succeed (state/status.py)
    assert BIG not in sim.c.queue.holds  # the hold ended with the start


def test_undeclared_small_jobs_never_backfill_yet_the_big_gang_starts_as_soon() -> None:
    sim = _busy_cluster(60.0, declare=False)
    assert BIG in sim.started and sim.started[BIG] <= 1.0 + 60.0 + 8.0 + 0.5


def _held_setup(units: int = 64) -> Sim:
    """2 nodes x 8 GPUs: node0 full until t=100 (one 8-GPU... as 8 declared 1-GPU jobs), node1 half full until t=100;
    a 16-GPU gang (2 x 8) unschedulable since t=0; at t=61 it holds node1's free half."""
    sim = Sim(SchedulerConfig(max_units_per_cycle=units, hold_after_seconds=60.0), nodes=2)
    for i in range(12):
        sim.running_pod(f"r{i}", sim.nodes[0] if i < 8 else sim.nodes[1], run=100.0, ends=100.0)
    sim.gang("big", 2, 8, run=None, duration=50.0)
    sim.cycles()
    sim.advance(61.0)
    sim.cycles()
    assert BIG in sim.c.queue.holds and BIG not in sim.started
    return sim


def test_backfill_with_a_declared_run_time_ending_before_the_big_gang_can_start_is_allowed() -> None:
    sim = _held_setup()
    session = CycleSession(sim.c, sim.now, sim.config)
    assert shadow(session, sim.c.queue.holds[BIG]) == 100.0
    short = sim.small(run=30.0)  # 61 + 30 <= 100
    sim.cycles()
    assert short in sim.started


def test_backfill_without_a_declared_run_time_or_ending_too_late_is_refused() -> None:
    sim = _held_setup()
    undeclared = sim.small(run=30.0, declare=False)
    too_long = sim.small(run=60.0)  # 61 + 60 > 100
    sim.cycles()
    assert undeclared not in sim.started and too_long not in sim.started
    messages = [p.gang_status[too_long].message for p in sim.plans if too_long in p.gang_status]
    assert messages and "insufficient nvidia.com/gpu" in messages[-1]


def test_a_higher_priority_gang_may_use_held_capacity() -> None:
    sim = _held_setup()
    sim.c.upsert_gang(GangSpec("default", "vip", 1))
    pod = pod_record(
        _pod("vip-0", gang="default/vip", gpu=4, run=None, created=sim.now), sim.c, gang="default/vip", ours=True
    )
    sim.c.upsert_pod(dataclasses.replace(pod, priority=1000))
    sim.duration[pod.key] = 10.0
    sim.cycles()
    assert "default/vip" in sim.started


def test_the_held_gang_starts_when_its_nodes_free() -> None:
    sim = _held_setup()
    sim.advance(39.0)  # t=100: every running job ends
    sim.cycles()
    assert sim.started.get(BIG) == 100.0


def test_the_held_gang_is_attempted_first_in_its_priority_level() -> None:
    """One unit per cycle: small gangs queued before it (older) do not delay it once its nodes are free."""
    sim = _held_setup(units=1)
    smalls = [sim.gang(f"a{i}", 1, 1, run=None, duration=30.0) for i in range(3)]  # sorted before "big"
    sim.cycles()
    sim.advance(39.0)
    plan = schedule(sim.c, sim.now, sim.config)
    assert sorted(k for k, _ in plan.bindings) == ["default/big-0", "default/big-1"]
    assert not any(k.startswith(tuple(smalls)) for k, _ in plan.bindings)


def test_disabling_holds_ends_them() -> None:
    sim = _held_setup()
    sim.config = dataclasses.replace(sim.config, hold_after_seconds=0.0)
    sim.cycles()
    assert BIG not in sim.c.queue.holds
    ended = [e for e in sim.plans[-2].events if e.reason == "CapacityHoldEnded"]
    assert ended and ended[0].name == "big"
    assert "holding capacity" not in sim.plans[-2].gang_status[BIG].message


def test_a_gang_waiting_for_a_topology_or_too_big_for_the_cluster_holds_nothing() -> None:
    """Holds are for gangs that wait for capacity: a hard-topology gang with no topology known never starts, and a
    gang larger than every node's allocatable together never fits; neither keeps capacity from others."""
    sim = Sim(SchedulerConfig(max_units_per_cycle=64, hold_after_seconds=5.0), nodes=2)
    hard = NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=1)
    sim.c.upsert_gang(GangSpec("default", "topo", 1, network_topology=hard))
    pod = pod_record(
        _pod("topo-0", gang="default/topo", gpu=1, run=None, created=0.0), sim.c, gang="default/topo", ours=True
    )
    sim.c.upsert_pod(pod)
    sim.duration[pod.key] = 10.0
    sim.gang("huge", 3, 8, run=None, duration=10.0)  # 24 GPUs on 16
    sim.cycles()
    sim.advance(10.0)
    sim.cycles()
    holds = sim.c.queue.holds
    assert "default/topo" not in holds
    assert holds["default/huge"].targets == ()  # remembered as never fitting, not held, not in the way
    assert not any(e.reason == "CapacityHeld" for p in sim.plans for e in p.events)
    small = sim.small(run=1.0, declare=False)
    sim.cycles()
    assert small in sim.started


def test_a_gang_that_never_fits_does_not_take_the_turn_of_one_that_waits_for_capacity() -> None:
    sim = Sim(SchedulerConfig(max_units_per_cycle=64, hold_after_seconds=60.0), nodes=2)
    sim.gang("huge", 3, 8, run=None, duration=10.0)  # waited longer, but 24 GPUs never fit on 16
    sim.running_pod("r0", sim.nodes[0], run=100.0, ends=100.0)
    sim.cycles()
    sim.advance(1.0)
    sim.gang("big", 2, 8, run=None, duration=10.0)
    sim.cycles()
    sim.advance(61.0)
    sim.cycles()
    assert sim.c.queue.holds[BIG].targets and not sim.c.queue.holds["default/huge"].targets


def _held_in_two_racks(*, highest_tier: int, members: int) -> Sim:
    """4 nodes x 8 GPUs in two tier-1 domains a = {node0, node2}, b = {node1, node3}; node0 and node1 free, node2
    busy until t=100 and node3 until t=200; a gang of `members` x 8 GPUs with a hard topology of `highest_tier`
    submitted at 0, starving (and holding) by t=10."""
    sim = Sim(SchedulerConfig(max_units_per_cycle=64, hold_after_seconds=5.0), nodes=4)
    tors = {"a": ("node0", "node2"), "b": ("node1", "node3")}
    sim.c.set_topology(TopologyTree.from_domains([Domain(1, n, (), nodes) for n, nodes in tors.items()]))
    for i in range(8):
        sim.running_pod(f"r2-{i}", "node2", run=100.0, ends=100.0)
        sim.running_pod(f"r3-{i}", "node3", run=200.0, ends=200.0)
    hard = NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=highest_tier)
    sim.c.upsert_gang(GangSpec("default", "big", members, network_topology=hard))
    for i in range(members):
        pod = pod_record(_pod(f"big-{i}", gang=BIG, gpu=8, run=None, created=0.0), sim.c, gang=BIG, rank=i, ours=True)
        sim.c.upsert_pod(pod)
        sim.duration[pod.key] = 10.0
    sim.cycles()
    sim.advance(10.0)
    sim.cycles()
    return sim


def test_a_hard_topology_gang_holds_capacity_inside_one_domain_it_can_use() -> None:
    """A gang whose members must share one tier-1 domain holds nodes of one such domain, not the freest nodes of the
    cluster: GPUs held in two domains could never start it together (Slurm's backfill reservation is a placement the
    job could start on, backfill.c `_attempt_backfill` via `_try_sched`/select_nodes with the job's topology; the
    module docstring). Domains a = {n0, n2}, b = {n1, n3}; n0 and n1 are free, n2 and n3 busy."""
    sim = _held_in_two_racks(highest_tier=1, members=2)
    held = {node for node, _ in sim.c.queue.holds[BIG].targets}
    assert held in ({"node0", "node2"}, {"node1", "node3"})
    assert held == {"node0", "node2"}  # the tie (one free node each) goes to the first domain
    small = sim.gang("one", 1, 8, run=None, duration=1000.0, declare=False)
    sim.cycles()
    assert sim.c.pods[f"{small}-0"].node_name == "node1"  # the free node outside the held domain serves others
    sim.advance(91.0)  # node2's pods end at 100
    sim.cycles()
    assert sim.started[BIG] == sim.now


def test_a_hard_topology_above_the_trees_tiers_holds_on_the_whole_cluster() -> None:
    """highestTierAllowed above the tree's tiers allows the whole cluster (core/topology/placement.py `_Placer.run`
    caps it the same way): the hold is laid out as for a gang without a topology, across domains."""
    sim = _held_in_two_racks(highest_tier=3, members=3)
    held = {node for node, _ in sim.c.queue.holds[BIG].targets}
    assert held == {"node0", "node1", "node2"}  # the two free nodes first, then the next by name


def test_rfc3339() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1704067200.5) == "2024-01-01T00:00:00Z"
    assert rfc3339(951825600) == "2000-02-29T12:00:00Z"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(1, 4), st.booleans(), st.integers(1, 30)), min_size=5, max_size=40),
    st.integers(0, 3),
)
def test_held_capacity_is_never_overcommitted_nor_given_away(arrivals: list[tuple[int, bool, int]], seed: int) -> None:
    """Random small gangs (1-4 GPUs, declared or not, 1-30 s) around a starving 4 x 8-GPU gang on 4 nodes: after
    every cycle no node is over-committed; the holds taken at the start of a cycle never exceed the free capacity;
    and what units without a declared run time bound on a held node that cycle fits in the capacity left unheld."""
    sim = Sim(SchedulerConfig(max_units_per_cycle=64, hold_after_seconds=5.0), nodes=4)
    for i in range(16):
        sim.running_pod(f"r{i}", sim.nodes[i % 4], run=20.0, ends=2.0 + (i * 7 + seed) % 20)
    sim.gang("big", 4, 8, run=None, duration=1000.0)
    for gpus, declare, run in arrivals:
        sim.advance(1.0)
        sim.serial += 1
        sim.gang(f"s{sim.serial}", 1, gpus, run=float(run), duration=float(run), declare=declare)
        session = CycleSession(sim.c, sim.now, sim.config)
        holds = hold_capacity(session)
        unheld: dict[str, int] = {}
        for node in sim.nodes:
            free = session.workspace.free(node)
            assert all(q >= 0 for q in free.values()), f"holds over-commit {node}: {free}"
            unheld[node] = free.get(GPU, 0)
        held_nodes = {n for a in holds.active for n in a.taken}
        before = len(sim.plans)
        sim.cycles()
        taken: Counter[str] = Counter()
        for plan in sim.plans[before : before + 1]:
            for key, node in plan.bindings:
                pod = sim.c.pods[key]
                if pod.gang != BIG and pod.run_seconds is None and node in held_nodes:
                    taken[node] += pod.requests.get(GPU, 0)
        for node, gpus_taken in taken.items():
            assert gpus_taken <= unheld[node], f"{node}: {gpus_taken} GPUs bound into held capacity"
        for node in sim.nodes:
            used = sim.c.used.get(node, {})
            assert used.get(GPU, 0) <= 8
            on = sim.c.store.pods_on.get(node, {})  # the index the start estimate reads agrees with `used`
            assert sum(sim.c.pods[k].requests.get(GPU, 0) for k in on) == used.get(GPU, 0)
    sim.advance(40.0)
    sim.cycles()
    assert BIG in sim.started  # every running job ended by then: nothing held it back
