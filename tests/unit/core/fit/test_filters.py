"""Node filters (core/fit/filters.py), scheduling gates and unsupported constraints (core/gang/readiness.py).

Oracles:
- kube-scheduler pkg/scheduler/framework/plugins/nodeports/node_ports_test.go `TestNodePorts` (the table below
  keeps its case names) and `TestGetContainerPorts`; pkg/scheduler/framework/types.go HostPortInfo
  (hostIP "" is 0.0.0.0, protocol "" is TCP; 0.0.0.0 conflicts with every IP on the same protocol and port);
  pkg/scheduler/util GetHostPorts (restartable init containers count, hostPort 0 does not).
- KEP-3521 pod scheduling readiness: a gated pod is never scheduled; the scheduler leaves the apiserver's
  PodScheduled=False reason SchedulingGated condition alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.cycle.simulate import step
from gangsched.core.fit.filters import port_conflict
from gangsched.core.fit.usage import PortCounts
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.records.records import HostPort
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangMode, GangSpec
from tests.builders import add_gang, add_nodes, add_pod, pod_obj, pod_record

CFG = SchedulerConfig()


def _ports(*infos: str) -> list[dict[str, Any]]:
    """Container ports from "PROTOCOL/hostIP/hostPort" strings, as node_ports_test.go's newPod builds them."""
    out = []
    for info in infos:
        protocol, ip, port = info.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": protocol})
    return out


def _with_ports(*infos: str) -> dict[str, Any]:
    return {"containers": [{"name": "c", "ports": _ports(*infos), "resources": {"requests": {"cpu": "1"}}}]}


NODE_PORTS = [  # (TestNodePorts name, the pod's ports, the ports of the pod already on the node, conflict)
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], False),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], False),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
    (
        "first tcp port conflict",
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        True,
    ),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], True),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        True,
    ),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ["UDP/127.0.0.1/8001"],
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        True,
    ),
]


@pytest.mark.parametrize(("name", "wanted", "existing", "conflict"), NODE_PORTS, ids=[c[0] for c in NODE_PORTS])
def test_node_ports_table(name: str, wanted: list[str], existing: list[str], conflict: bool) -> None:
    """TestNodePorts through the scheduler: the node already runs a pod (another scheduler's) with `existing`."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1)
    add_pod(c, "running", ours=False, node=node, phase="Running", spec_extra=_with_ports(*existing))
    key = add_pod(c, "p", spec_extra=_with_ports(*wanted))
    plan = step(c, CFG, 0.0)
    assert (plan.bindings == []) is conflict, name
    if conflict:
        (condition,) = plan.conditions
        assert "host port" in condition.message and "in use" in condition.message
    else:
        assert plan.bindings == [(key, node)]


def test_skip_filter_pod_without_host_ports_has_no_filter() -> None:
    """TestNodePorts "skip filter": a pod without host ports is not filtered (and pays nothing)."""
    pod = pod_record(
        pod_obj("p", spec_extra={"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}), gang=None, ours=True
    )
    assert pod.sclass.host_ports == ()


def test_port_conflict_sums_the_store_and_the_cycle() -> None:
    """A released reservation frees its ports for the cycle: the workspace's count goes below the store's."""
    port = HostPort("0.0.0.0", "TCP", 8080)
    store: PortCounts = {port: 1, ("TCP", 8080): 1}
    released: PortCounts = {port: -1, ("TCP", 8080): -1}
    assert port_conflict([port], store) == port
    assert port_conflict([port], store, released) is None
    assert port_conflict([HostPort("10.0.0.1", "TCP", 8080)], store) is not None


def test_get_container_ports_sidecars_count_init_containers_and_port_zero_do_not() -> None:
    """GetHostPorts / TestGetContainerPorts: every container's hostPort > 0, restartable init containers too;
    defaults: hostIP 0.0.0.0, protocol TCP."""
    spec = {
        "initContainers": [
            {"name": "init", "ports": [{"containerPort": 1, "hostPort": 7001}]},
            {"name": "sidecar", "restartPolicy": "Always", "ports": [{"containerPort": 2, "hostPort": 7002}]},
        ],
        "containers": [
            {"name": "a", "ports": [{"containerPort": 8001, "hostPort": 8001}, {"containerPort": 8005}]},
            {"name": "b", "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]},
        ],
    }
    pod = pod_record(pod_obj("p", spec_extra=spec), gang=None, ours=True)
    assert pod.sclass.host_ports == (
        HostPort("0.0.0.0", "TCP", 7002),
        HostPort("0.0.0.0", "TCP", 8001),
        HostPort("10.0.0.1", "UDP", 53),
    )


@pytest.mark.parametrize(
    ("port", "field"),
    [
        ({"containerPort": 1, "hostPort": 70000}, "spec.containers[0].ports[0].hostPort"),
        ({"containerPort": 1, "hostPort": "80"}, "spec.containers[0].ports[0].hostPort"),
        ({"containerPort": 1, "hostPort": 80, "protocol": "HTTP"}, "spec.containers[0].ports[0].protocol"),
    ],
)
def test_bad_host_port_names_the_field(port: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidField) as caught:
        pod_record(pod_obj("p", spec_extra={"containers": [{"name": "c", "ports": [port]}]}), gang=None, ours=True)
    assert caught.value.field == field


def test_gang_members_placed_in_the_same_cycle_never_share_a_host_port() -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 3)
    keys = add_gang(c, "web", 3, spec_extra=_with_ports("TCP//8080"))
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == keys
    assert sorted(n for _, n in plan.bindings) == nodes


def test_strict_gang_with_more_host_port_members_than_nodes_fails_naming_the_port() -> None:
    c = SchedulerState()
    add_nodes(c, 2)
    add_gang(c, "web", 3, spec_extra=_with_ports("TCP//8080"))
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    assert (
        "2 nodes fit; 1 more pod blocked by: one pod per node (host ports)" in plan.gang_status["default/web"].message
    )


def test_reserved_members_hold_their_host_ports() -> None:
    """A NonStrict gang's reservation keeps its port: a later pod asking for it finds no node."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1)
    first, _ = add_gang(c, "web", 2, mode=GangMode.NON_STRICT, spec_extra=_with_ports("TCP//9000"))
    plan = step(c, CFG, 0.0)
    assert plan.reservations == [(first, node)] and c.store.host_ports[node]
    add_pod(c, "solo", priority=100, spec_extra=_with_ports("TCP//9000"))
    plan = step(c, CFG, 100.0)
    assert not plan.bindings
    assert any("host port 9000/TCP in use (1 node)" in x.message for x in plan.conditions)


def test_host_ports_are_forgotten_with_the_pod() -> None:
    c = SchedulerState()
    (node,) = add_nodes(c, 1)
    key = add_pod(c, "p", node=node, phase="Running", spec_extra=_with_ports("TCP//80"))
    assert c.store.host_ports[node]
    c.remove_pod(key)
    assert not c.store.host_ports


# ----- scheduling gates -----


def _gated(c: SchedulerState, name: str, gang: str | None, rank: int | None = None) -> str:
    return add_pod(c, name, gang=gang, rank=rank, gpu=1, spec_extra={"schedulingGates": [{"name": "example.com/q"}]})


def test_gated_pod_alone_is_never_bound_and_gets_no_condition() -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    key = _gated(c, "p", None)
    plan = step(c, CFG, 0.0)
    assert plan.empty
    c.upsert_pod(pod_record(pod_obj("p", gpu=1), c, gang=None, ours=True))  # the gate removed
    assert [k for k, _ in step(c, CFG, 1.0).bindings] == [key]


def test_gang_with_a_gated_member_waits_once_then_binds_whole() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 2))
    free = add_pod(c, "g-0", gang="default/g", rank=0, gpu=1)
    gated = _gated(c, "g-1", "default/g", rank=1)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    status = plan.gang_status["default/g"]
    assert (status.reason, status.message, status.pending) == ("SchedulingGated", "1 of 2 members gated", 2)
    assert [(e.kind, e.reason, e.message) for e in plan.events] == [
        ("PodGroup", "SchedulingGated", "1 of 2 members gated")
    ]
    assert [x.pod_key for x in plan.conditions] == [free]  # the gated pod keeps the apiserver's condition
    assert step(c, CFG, 1.0).empty  # not per cycle
    c.upsert_pod(pod_record(pod_obj("g-1", gpu=1), c, gang="default/g", rank=1, ours=True))
    assert sorted(k for k, _ in step(c, CFG, 2.0).bindings) == [free, gated]


def test_gated_members_do_not_count_towards_quorum_even_when_others_suffice() -> None:
    """The gang is scheduled as a whole once its gates are gone, never partly while one is gated."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 1))
    add_pod(c, "g-0", gang="default/g", rank=0, gpu=1)
    _gated(c, "g-1", "default/g", rank=1)
    assert not step(c, CFG, 0.0).bindings


# ----- constraints gangsched does not evaluate -----

# (DRA spec.resourceClaims are allocated: tests/unit/state/test_dra_scheduling.py)


def test_do_not_schedule_spread_is_evaluated_not_held() -> None:
    """DoNotSchedule spread constraints are evaluated (tests/unit/core/fit/test_pod_spread.py): nodes without the
    topology key are no candidates, and the gang says so instead of "unsupported"."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    spread = {
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    }
    add_gang(c, "g", 2, gpu=1, spec_extra=spread)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings
    status = plan.gang_status["default/g"]
    assert status.reason != "Unsupported" and "PodTopologySpread: no label zone" in status.message


def test_a_gang_with_host_ports_never_evicts_in_vain() -> None:
    """The victim search frees resources, not ports: with the port held by a higher-priority pod, evicting the
    lower-priority pod that holds the CPU would not make room. The gang waits, evicting nobody."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1, cpu="2")
    add_pod(c, "keeper", ours=False, node=node, phase="Running", priority=1000, spec_extra=_with_ports("TCP//8080"))
    add_pod(c, "low", ours=False, node=node, phase="Running", priority=-10)
    add_gang(c, "web", 1, priority=100, spec_extra=_with_ports("TCP//8080"))
    for now in (0.0, 1.0, 10.0):
        plan = step(c, CFG, now)
        assert not plan.evictions and not plan.bindings
