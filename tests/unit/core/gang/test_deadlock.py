"""NonStrict deadlocks (issue 15 item 4): a wait-for cycle among gangs holding reservations is found in one cycle
and resolved by releasing the reservations of one gang (lowest priority, then the newest).

Oracle: the wait-for graph of deadlock detection (Coffman, Elphick, Shoshani, "System Deadlocks", ACM Computing
Surveys 1971; Holt's resource-allocation graph): a cycle among processes that each hold resources and wait for
resources another holds is a deadlock, resolved by rolling back one process of each cycle. kube-scheduler's
analogue for pods waiting in Permit is Unreserve of the rejected pod (pkg/scheduler/framework/interface.go
`ReservePlugin`; scheduler-plugins coscheduling rejects a gang's waiting pods when its PodGroup times out).
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.plan import Plan, UnitBackoff
from gangsched.core.memory.podstate import RESERVED
from gangsched.core.memory.queue import SchedulingQueue
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.core.values.units import UnitKey
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=8)


def gang(
    c: SchedulerState, name: str, n: int, *, priority: int = 0, created: float = 0.0, strict: bool = False, **kw: object
) -> list[str]:
    mode = GangMode.STRICT if strict else GangMode.NON_STRICT
    c.upsert_gang(GangSpec("default", name, n, mode=mode), created=created)
    return [add_pod(c, f"{name}-{i}", gang=f"default/{name}", rank=i, gpu=8, priority=priority, **kw) for i in range(n)]  # type: ignore[arg-type]


def hold(c: SchedulerState, start: float, reservations: list[tuple[str, str]]) -> None:
    """Reservations as earlier cycles would have left them (through the state's own apply)."""
    gangs = {c.pods[k].gang for k, _ in reservations}
    c.apply(Plan(reservations=reservations, first_reserved={g: start for g in gangs if g is not None}))


def reserved_by(c: SchedulerState, name: str) -> list[str]:
    return sorted(k for k in c.store.pods_in(RESERVED) if k.startswith(f"default/{name}-"))


def two_halves(*, a_priority: int = 0, b_priority: int = 0) -> SchedulerState:
    """4 nodes of 8 GPUs; a and b (4 x 8 GPUs each, minMember 4) each hold 2 nodes: the smallest deadlock."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    a = gang(c, "a", 4, priority=a_priority, created=0.0)
    b = gang(c, "b", 4, priority=b_priority, created=5.0)
    hold(c, 10.0, [(a[0], "n0"), (a[1], "n1"), (b[0], "n2"), (b[1], "n3")])
    return c


def test_the_smallest_deadlock_releases_the_newest_and_the_other_completes_in_the_same_cycle() -> None:
    c = two_halves()
    plan = step(c, CFG, 11.0)
    assert [(d.cycle, d.victim, d.released) for d in plan.deadlocks] == [(("default/b", "default/a"), "default/b", 2)]
    assert sorted(k for k, _ in plan.bindings) == [f"default/a-{i}" for i in range(4)]  # a took b's two nodes
    assert not reserved_by(c, "b")
    (ev,) = [e for e in plan.events if e.reason == "DeadlockResolved"]
    assert (ev.name, ev.type) == ("b", "Warning")
    assert ev.message == (
        "2 reservations released: deadlock with default/a "
        "(default/b waits for capacity default/a holds, default/a for default/b)"
    )
    assert c.gangs["default/a"].satisfied
    assert c.gangs["default/b"].first_reserved is None  # its waiting time starts again with its next reservation
    assert c.queue.unit_state(c.gangs["default/b"].unit) is not None  # it backs off


def test_lowest_priority_loses_before_the_newest() -> None:
    c = two_halves(a_priority=0, b_priority=100)
    plan = step(c, CFG, 11.0)
    assert [d.victim for d in plan.deadlocks] == ["default/a"]
    assert sorted(k for k, _ in plan.bindings) == [f"default/b-{i}" for i in range(4)]


def test_a_deadlock_reached_through_cycles_is_found_in_the_next_cycle() -> None:
    """a reserves the two free nodes; b (higher priority) arrives and takes each node freed by a running pod."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    for i in (2, 3):
        add_pod(c, f"run-{i}", node=f"n{i}", phase="Running", gpu=8, cpu="1")
    gang(c, "a", 4, priority=0)
    assert len(step(c, CFG, 0.0).reservations) == 2
    gang(c, "b", 4, priority=100, created=1.0)
    plan = step(c, CFG, 1.0)
    assert not plan.reservations and not plan.deadlocks  # merely full: nobody holds what b could use but a
    c.remove_pod("default/run-2")
    plan = step(c, CFG, 2.0)
    assert len(reserved_by(c, "b")) == 1 and len(reserved_by(c, "a")) == 2 and not plan.deadlocks
    c.remove_pod("default/run-3")  # n3 is free, but neither fits without the other's nodes
    plan = step(c, CFG, 3.0)
    assert [(d.cycle, d.victim, d.formed) for d in plan.deadlocks] == [(("default/a", "default/b"), "default/a", 2.0)]
    assert sorted(k for k, _ in plan.bindings) == [f"default/b-{i}" for i in range(4)]
    assert not reserved_by(c, "a")


def test_no_deadlock_when_the_cluster_is_merely_full() -> None:
    """a holds 2 nodes and waits for 2 running pods; b waits with nothing held: no cycle, nothing released."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    for i in (2, 3):
        add_pod(c, f"run-{i}", node=f"n{i}", phase="Running", gpu=8)
    a = gang(c, "a", 4)
    gang(c, "b", 4, created=5.0)
    hold(c, 0.0, [(a[0], "n0"), (a[1], "n1")])
    plan = step(c, CFG, 1.0)
    assert not plan.deadlocks and not plan.releases


def test_no_deadlock_when_running_pods_will_free_the_capacity() -> None:
    """Each holds half, but the running pods declare a run time: their capacity is coming, nobody is blocked."""
    c = SchedulerState()
    add_nodes(c, 6, gpu=8)
    for i in (4, 5):
        add_pod(c, f"run-{i}", node=f"n{i}", phase="Running", gpu=8, spec_extra={"activeDeadlineSeconds": 60})
    a, b = gang(c, "a", 4), gang(c, "b", 4, created=5.0)
    hold(c, 0.0, [(a[0], "n0"), (a[1], "n1"), (b[0], "n2"), (b[1], "n3")])
    plan = step(c, CFG, 1.0)
    assert not plan.deadlocks and not plan.releases
    c2 = SchedulerState()  # the same without declared run times: a deadlock
    add_nodes(c2, 6, gpu=8)
    for i in (4, 5):
        add_pod(c2, f"run-{i}", node=f"n{i}", phase="Running", gpu=8)
    a, b = gang(c2, "a", 4), gang(c2, "b", 4, created=5.0)
    hold(c2, 0.0, [(a[0], "n0"), (a[1], "n1"), (b[0], "n2"), (b[1], "n3")])
    assert [d.victim for d in step(c2, CFG, 1.0).deadlocks] == ["default/b"]


def test_three_gangs_in_a_cycle() -> None:
    """6 nodes restricted by label: a runs on pool x|y, b on y|z, c on z|x; each holds one pool node and needs two."""
    c = SchedulerState()
    for pool in ("x", "y", "z"):
        add_nodes(c, 1, prefix=f"{pool}", gpu=8, labels={"pool": pool})
    pools = {"a": ("x", "y"), "b": ("y", "z"), "c": ("z", "x")}
    keys = {}
    for i, (name, allowed) in enumerate(pools.items()):
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": list(allowed)}]}
                    ]
                }
            }
        }
        keys[name] = gang(c, name, 2, created=float(i), spec_extra={"affinity": affinity})
    hold(c, 0.0, [(keys["a"][0], "x0"), (keys["b"][0], "y0"), (keys["c"][0], "z0")])
    plan = step(c, CFG, 1.0)
    (d,) = plan.deadlocks
    assert d.victim == "default/c" and sorted(d.cycle) == ["default/a", "default/b", "default/c"]
    assert d.cycle[0] == "default/c"
    # c holds z0, which b needs: b completes on y0 + z0; a still waits for y0 (held by b, now running): no cycle
    assert sorted(k for k, _ in plan.bindings) == sorted(keys["b"])
    assert not step(c, CFG, 2.0).deadlocks


def test_strict_gangs_and_bound_pods_are_never_touched() -> None:
    """A Strict gang waiting for its gang group holds reservations: it is no waiter, and never released here."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    c.upsert_gang(GangSpec("default", "s", 1, group=("default/s", "default/t")), created=0.0)
    s = add_pod(c, "s-0", gang="default/s", rank=0, gpu=8)
    add_pod(c, "run-0", node="n3", phase="Running", gpu=8)
    a = gang(c, "a", 3, created=1.0)
    hold(c, 0.0, [(s, "n0"), (a[0], "n1")])
    plan = step(c, CFG, 1.0)
    assert not plan.deadlocks and s not in plan.releases and "default/run-0" not in plan.evictions


def test_a_gang_never_waits_for_itself() -> None:
    """One NonStrict gang holding 2 of 4 nodes on a full cluster: blocked, but no cycle (no edge to itself)."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    for i in (2, 3):
        add_pod(c, f"run-{i}", node=f"n{i}", phase="Running", gpu=8)
    a = gang(c, "a", 4)
    hold(c, 0.0, [(a[0], "n0"), (a[1], "n1")])
    plan = step(c, CFG, 1.0)
    assert not plan.deadlocks and not plan.releases


def test_gangs_that_fit_on_free_capacity_wait_for_nobody() -> None:
    """a and b each hold 2 nodes and need 2 more; 4 nodes are free (they only waited for their backoff): no cycle,
    and both complete there."""
    c = SchedulerState()
    add_nodes(c, 8, gpu=8)
    a, b = gang(c, "a", 4), gang(c, "b", 4, created=5.0)
    hold(c, 0.0, [(a[0], "n0"), (a[1], "n1"), (b[0], "n2"), (b[1], "n3")])
    plan = step(c, CFG, 1.0)
    assert not plan.deadlocks and not plan.releases
    assert len(plan.bindings) == 8


def test_the_record_names_what_was_released() -> None:
    c = two_halves()
    (d,) = step(c, CFG, 11.0).deadlocks
    assert d.held["nvidia.com/gpu"] == 16 and d.released == 2 and d.formed == 10.0


def test_a_victims_release_wakes_no_backed_off_unit() -> None:
    """Capacity freed by a deadlock victim is for the gangs of its cycle (attempted in the same cycle): it must not
    end other units' backoffs, or the next gang in line reserves it, closes the knot again, and the scheduler loops
    at one instant (found by the what-if replay: 100,000 cycles at t=49 without converging). A later free (a pod
    ending) still ends them, as kube-scheduler requeues on cluster events."""
    queue = SchedulingQueue()
    unit = UnitKey.gang("ns/waiting")
    queue.record_backoff(unit, UnitBackoff(attempts=3, until=60.0, failed_at=10.0), freed_gen=5)
    assert queue.ready(unit, 20.0, freed_gen=6)  # capacity freed since: the backoff ends early
    queue.rebase_freed(6)  # a victim's release (core/memory/scheduler_state.py when the plan has deadlocks)
    assert not queue.ready(unit, 20.0, freed_gen=6)
    assert queue.ready(unit, 20.0, freed_gen=7) and queue.ready(unit, 60.0, freed_gen=6)
