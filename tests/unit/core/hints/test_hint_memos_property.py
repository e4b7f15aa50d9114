"""Property: the memos that follow the accounting log instead of recounting give what a recount gives.

- core/transaction/fit_counts.py (the counts of a failure message, "N nodes fit; ... insufficient <r> (k nodes)"):
equal to
  one pass over every eligible node with the workspace's tentative usage, after any sequence of pods charged,
  uncharged and workspace changes. The reasons follow kube-scheduler's NodeResourcesFit
  (pkg/scheduler/framework/plugins/noderesources/fit.go `fitsRequest`: "Insufficient <resource>" for each resource
  a node lacks); a node is counted here once, under the first of them in name order.
- core/hints/reach.py (what a gang could reach with every lower-priority pod gone, kube-scheduler's
  defaultpreemption `SelectVictimsOnNode` check): the memo carried from cycle to cycle equals a fresh count.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.core.fit.capacity import class_index, fit_count
from gangsched.core.hints.reach import reach_fits
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyPlacement, TopologyTree, place_network
from gangsched.core.transaction.fit_counts import fit_counts, reason
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, NetworkTopology, TopologyMode
from gangsched.core.values.resources import sub_into
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig()
# steps: (kind, node index, gpus, cpus, priority): 0 adds a running pod, 1 removes the oldest, 2 adds workspace usage
steps = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 5), st.integers(0, 4), st.integers(1, 12), st.integers(0, 2)),
    max_size=30,
)


def cluster() -> SchedulerState:
    c = SchedulerState()
    add_nodes(c, 4, gpu=4, cpu="16")
    add_nodes(c, 2, prefix="cpu", cpu="16")  # no GPU: never fit a GPU class ("insufficient nvidia.com/gpu")
    return c


def brute(session: CycleSession, pod_key: str) -> tuple[int, Counter[str]]:
    cls = session.store.pods[pod_key].sclass
    idx = class_index(session.store, cls, spread=False)
    requests = sorted((r, q) for r, q in cls.requests.items() if q > 0)
    fit, reasons = 0, Counter[str]()
    for name in idx.pref:
        alloc = session.store.nodes[name].allocatable
        why = reason(requests, alloc, session.store.used.get(name) or {}, session.workspace.extra.get(name) or {})
        if why is None:
            fit += 1
        else:
            reasons[why] += 1
    return fit, reasons


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps, probe=st.tuples(st.integers(0, 3), st.integers(1, 8)))
def test_lacking_equals_a_recount(ops: list[tuple[int, int, int, int, int]], probe: tuple[int, int]) -> None:
    c = cluster()
    nodes = sorted(c.store.nodes)
    probe_key = add_pod(c, "probe", gpu=probe[0], cpu=str(probe[1]))  # pending: the class the message is about
    running: list[str] = []
    extra: list[tuple[str, dict[str, int]]] = []
    for i, (kind, node, gpu, cpu, prio) in enumerate(ops):
        name = nodes[node % len(nodes)]
        if kind == 0:
            running.append(add_pod(c, f"p{i}", gpu=gpu, cpu=str(cpu), node=name, phase="Running", priority=prio))
        elif kind == 1 and running:
            c.remove_pod(running.pop(0))
        else:
            extra.append((name, {"cpu": cpu * 1000, "nvidia.com/gpu": gpu}))
        session = CycleSession(c, float(i), CFG)
        for where, amount in extra[-2:]:  # this cycle's tentative usage (a hold, a placement)
            session.workspace.place(where, amount)
        idx = class_index(c.store, c.store.pods[probe_key].sclass, spread=False)
        assert fit_counts(session, idx) == brute(session, probe_key)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=steps, count=st.integers(1, 6), tier=st.sampled_from([None, 1, 2]))
def test_reach_memo_equals_a_fresh_count(
    ops: list[tuple[int, int, int, int, int]], count: int, tier: int | None
) -> None:
    c = cluster()
    nodes = sorted(c.store.nodes)
    network = None
    if tier is not None:  # hard within a tier-1 domain (two nodes) or the spine (tier 2); the CPU nodes are in none
        tor = {"tor-a": ("n0", "n1"), "tor-b": ("n2", "n3")}
        domains = [Domain(1, name, parents=("spine",), children=members) for name, members in tor.items()]
        c.set_topology(TopologyTree.from_domains([*domains, Domain(2, "spine")]))
        network = NetworkTopology(TopologyMode.HARD, tier)
    c.upsert_gang(GangSpec("default", "g", count, network_topology=network), created=0.0)
    for i in range(count):
        add_pod(c, f"g-{i}", gang="default/g", rank=i, gpu=2, cpu="2", priority=1)
    gang = c.store.gangs["default/g"]
    cls = c.store.pods["default/g-0"].sclass
    running: list[str] = []
    for i, (kind, node, gpu, cpu, prio) in enumerate(ops):
        name = nodes[node % len(nodes)]
        if kind == 0:
            running.append(add_pod(c, f"p{i}", gpu=gpu, cpu=str(cpu), node=name, phase="Running", priority=prio))
        elif running:
            c.remove_pod(running.pop(0))
        session = CycleSession(c, float(i), CFG)
        fits = reach_fits(session, gang, cls, count, 1, network)  # from the memo of the last cycle
        memo = session.plan.reach_memos[gang.unit]
        state = c.queue.unit_state(gang.unit)
        if state is not None:
            state.reach = None  # hidden: counted from scratch
        fresh = CycleSession(c, float(i), CFG)
        assert reach_fits(fresh, gang, cls, count, 1, network) == fits
        again = fresh.plan.reach_memos[gang.unit]
        assert dict(again.cap) == dict(memo.cap)
        assert {d: n for d, n in (again.sums or {}).items() if n} == {d: n for d, n in (memo.sums or {}).items() if n}
        c.queue.record_reach(gang.unit, memo)  # (what SchedulerState.apply does with the plan)
        held = CycleSession(c, float(i), CFG)  # this cycle's workspace takes some capacity (a hold, a placement)
        held.workspace.place(name, {"nvidia.com/gpu": gpu, "cpu": cpu * 1000})
        assert reach_fits(held, gang, cls, count, 1, network, workspace=True) == on_workspace(held, count, network)


def on_workspace(session: CycleSession, count: int, network: NetworkTopology | None) -> bool:
    """Whether `count` members of g's class fit the workspace's free capacity with every priority-0 pod gone."""
    store = session.store
    cls = store.pods["default/g-0"].sclass
    cap: dict[str, int] = {}
    for name in class_index(store, cls, spread=False).pref:
        used = dict(store.used.get(name) or {})
        for key in store.pods_on.get(name, ()):
            if store.pods[key].priority < 1:
                sub_into(used, store.pods[key].sclass.requests)
        extra = session.workspace.extra.get(name)
        cap[name] = fit_count(cls.requests, store.nodes[name].allocatable, used, extra)
    if network is None or store.topology is None:
        return sum(cap.values()) >= count
    return isinstance(place_network(store.topology, cap, count, network), TopologyPlacement)
