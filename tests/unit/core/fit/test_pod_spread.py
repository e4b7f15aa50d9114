"""PodTopologySpread (DoNotSchedule) for our pods: core/fit/pod_spread.py, core/placement/spread_place.py,
models/pod_spread.py.

Oracles:
- kube-scheduler pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go: `TestSingleConstraint` and
  `TestMultipleConstraints` (the table below keeps their case names, nodes, existing pods and expected codes:
  Success, Unschedulable, UnschedulableAndUnresolvable), `TestPreFilterState` ("NodeAffinityPolicy honored/ignored",
  "NodeTaintsPolicy honored/ignored", matchLabelKeys cases, "normal case with null label selector"), and the
  minDomains cases of `TestSingleConstraint` (fewer eligible domains than minDomains: the global minimum is 0).
- filtering.go `Filter`: 'existing matching num' + 'if self-match (1 or 0)' - 'global minimum' <= 'maxSkew';
  common.go `countPodsMatchSelector` (other namespaces and terminating pods do not count),
  `nodeLabelsMatchSpreadConstraints`, `matchNodeInclusionPolicies`, `filterTopologySpreadConstraints` (nil
  selector = labels.Nothing(), defaults minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore,
  matchLabelKeys merged from the pod's labels).
- pkg/apis/core/validation `validateTopologySpreadConstraints` for the bad-input cases.
Each table case runs through the scheduler once per node: only that node has room for the incoming pod (the
others keep their labels and pods, so domains and counts are unchanged), and the pod is bound there exactly when
upstream's Filter says Success.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from gangsched.models.node import node_from_api
from tests.builders import add_nodes, node_obj, pod_obj, pod_record

CFG = SchedulerConfig()
S, U, UU = "Success", "Unschedulable", "UnschedulableAndUnresolvable"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def spread(skew: int, key: str, selector: dict[str, Any] | None = FOO, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", **extra}
    if selector is not None:
        c["labelSelector"] = selector
    return c


# (node name, labels, taints)
ZONES2 = [
    ("node-a", {"zone": "zone1", "node": "node-a"}, None),
    ("node-b", {"zone": "zone1", "node": "node-b"}, None),
    ("node-x", {"zone": "zone2", "node": "node-x"}, None),
    ("node-y", {"zone": "zone2", "node": "node-y"}, None),
]
FOO_PODS = [("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-y1", "node-y"), ("p-y2", "node-y")]


def existing(*where: tuple[str, str], labels: dict[str, str] | None = None, ns: str = "default") -> list[Any]:
    return [(name, node, {"foo": ""} if labels is None else labels, ns) for name, node in where]


CASES: list[tuple[str, dict[str, Any], list[Any], list[Any], dict[str, str]]] = [
    # (upstream case name, incoming pod spec extra + labels, nodes, existing pods (name, node, labels, ns), codes)
    (
        "no existing pods",
        {"c": [spread(1, "zone")]},
        ZONES2,
        [],
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], S),
    ),
    (
        "no existing pods, incoming pod doesn't match itself",
        {"c": [spread(1, "zone", BAR)]},
        ZONES2,
        [],
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], S),
    ),
    (
        "existing pods in a different namespace do not count",
        {"c": [spread(1, "zone")]},
        ZONES2,
        existing(("p-a1", "node-a"), ("p-b1", "node-a"), ns="ns1") + existing(("p-x1", "node-x"), ("p-y1", "node-y")),
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        {"c": [spread(1, "zone")]},
        ZONES2,
        existing(*FOO_PODS, ("p-y3", "node-y")),
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], S),
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        {"c": [spread(1, "zone")]},
        [ZONES2[0], ("node-b", {"zon": "zone1", "node": "node-b"}, None), ZONES2[2], ZONES2[3]],
        existing(("p-a1", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y")),
        {"node-a": S, "node-b": UU, "node-x": U, "node-y": U},
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        {"c": [spread(1, "rack")]},
        [ZONES2[0], ZONES2[2]],
        [],
        {"node-a": UU, "node-x": UU},
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        {"c": [spread(1, "node")]},
        ZONES2,
        existing(*FOO_PODS, ("p-y3", "node-y")),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        {"c": [spread(2, "node")]},
        ZONES2,
        existing(*FOO_PODS, ("p-y3", "node-y")),
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        {"c": [spread(1, "node")], "labels": {"bar": ""}},
        ZONES2,
        existing(*FOO_PODS, ("p-y3", "node-y")),
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "terminating Pods should be excluded",
        {"c": [spread(1, "node")]},
        [("node-a", {"node": "node-a"}, None), ("node-b", {"node": "node-b"}, None)],
        [("p-a", "node-a", {"foo": ""}, "default", "terminating"), ("p-b", "node-b", {"foo": ""}, "default")],
        {"node-a": S, "node-b": U},
    ),
    (
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        {"c": [spread(1, "zone"), spread(1, "node")]},
        ZONES2,
        existing(*FOO_PODS, ("p-y3", "node-y")),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "normal case with null label selector (matches nothing: every node fits)",
        {"c": [spread(1, "zone", None)]},
        ZONES2,
        existing(*FOO_PODS),
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], S),
    ),
    (
        # TestPreFilterState "NodeAffinityPolicy honored with labelSelectors": node-x and node-y are not
        # eligible (the pod's affinity refuses them), so zone2 is no domain and zone1 (3 pods) is the minimum
        "NodeAffinityPolicy honored: only the nodes the pod's affinity accepts are domains",
        {"c": [spread(1, "zone")], "affinity": ("zone", ["zone1"])},
        ZONES2,
        existing(*FOO_PODS),
        {"node-a": S, "node-b": S, "node-x": UU, "node-y": UU},
    ),
    (
        "NodeAffinityPolicy ignored: zone2 counts, so zone1 is over the skew",
        {"c": [spread(1, "zone", nodeAffinityPolicy="Ignore")], "affinity": ("zone", ["zone1"])},
        ZONES2,
        existing(("p-a1", "node-a"), ("p-a2", "node-a")),
        {"node-a": U, "node-b": U, "node-x": UU, "node-y": UU},
    ),
    (
        # TestPreFilterState "NodeTaintsPolicy honored": the tainted node-c is no domain
        "NodeTaintsPolicy honored: a node with a taint the pod does not tolerate is no domain",
        {"c": [spread(1, "node", BAR, nodeTaintsPolicy="Honor")], "labels": {"bar": ""}},
        [
            ("node-a", {"node": "node-a"}, None),
            ("node-b", {"node": "node-b"}, None),
            ("node-c", {"node": "node-c"}, [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        ],
        existing(("p-a", "node-a"), ("p-b", "node-b"), ("p-c", "node-b"), labels={"bar": ""}),
        {"node-a": S, "node-b": U, "node-c": "tainted"},
    ),
    (
        "NodeTaintsPolicy ignored: the tainted node-c is a domain with 0 pods",
        {"c": [spread(1, "node", BAR)], "labels": {"bar": ""}},
        [
            ("node-a", {"node": "node-a"}, None),
            ("node-b", {"node": "node-b"}, None),
            ("node-c", {"node": "node-c"}, [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        ],
        existing(("p-a", "node-a"), ("p-b", "node-b"), ("p-c", "node-b"), labels={"bar": ""}),
        {"node-a": U, "node-b": U, "node-c": "tainted"},
    ),
    (
        "pods spread across zone as 2/1, minDomains is 3 (2 domains < 3: the global minimum is 0)",
        {"c": [spread(2, "zone", minDomains=3)]},
        ZONES2,
        existing(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-x1", "node-x")),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zone as 2/1, minDomains is 2 (enough domains: the minimum is 1)",
        {"c": [spread(1, "zone", minDomains=2)]},
        ZONES2,
        existing(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-x1", "node-x")),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "matchLabelKeys: the pod's value is merged into the selector (other versions do not count)",
        {"c": [spread(1, "node", matchLabelKeys=["version"])], "labels": {"foo": "", "version": "v2"}},
        [("node-a", {"node": "node-a"}, None), ("node-b", {"node": "node-b"}, None)],
        existing(("p-a", "node-a"), labels={"foo": "", "version": "v1"})
        + existing(("p-b", "node-b"), labels={"foo": "", "version": "v2"}),
        {"node-a": S, "node-b": U},
    ),
]


def _pod(name: str, case: dict[str, Any], *, cpu: str | None, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"topologySpreadConstraints": case["c"]}
    if "affinity" in case:
        key, values = case["affinity"]
        term = {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    return pod_obj(name, cpu=cpu, node=node, spec_extra=spec, labels=case.get("labels", {"foo": ""}))


def _cluster(nodes: list[Any], pods: list[Any], roomy: str) -> SchedulerState:
    c = SchedulerState()
    for name, labels, taints in nodes:
        cpu = "4" if name == roomy else "1"
        c.upsert_node(node_from_api(node_obj(name, cpu=cpu, labels=labels, taints=taints)))
    for name, node, labels, ns, *flags in pods:
        obj = pod_obj(name, namespace=ns, cpu=None, node=node, phase="Running", labels=labels)
        pod = pod_record(obj, c, gang=None, ours=False)
        c.upsert_pod(pod)
        if flags:
            c.set_leaving(pod.key, True)
    return c


@pytest.mark.parametrize(("name", "case", "nodes", "pods", "codes"), CASES, ids=[c[0] for c in CASES])
def test_filter_table(
    name: str, case: dict[str, Any], nodes: list[Any], pods: list[Any], codes: dict[str, str]
) -> None:
    for node, code in codes.items():
        c = _cluster(nodes, pods, node)
        key = pod_record(_pod("p", case, cpu="2"), c, gang=None, ours=True).key
        c.upsert_pod(pod_record(_pod("p", case, cpu="2"), c, gang=None, ours=True))
        plan = step(c, CFG, 0.0)
        if code == S:
            assert plan.bindings == [(key, node)], (name, node)
            continue
        assert not plan.bindings, (name, node)
        if code == "tainted":
            continue  # the taint itself (TaintToleration) refuses the pod; the case checks the other nodes
        (condition,) = plan.conditions
        want = "PodTopologySpread: no label" if code == UU else "PodTopologySpread: maxSkew"
        if code == UU and name.startswith("NodeAffinity"):
            want = "node affinity"  # the NodeAffinity filter refuses it first (UnschedulableAndUnresolvable)
        assert want in condition.message, (name, node, condition.message)


# ----- gangs: members placed in the same cycle count -----

ZONE_NODES = [
    (f"{z}-{i}", {"zone": z, "kubernetes.io/hostname": f"{z}-{i}"}) for z in ("za", "zb", "zc") for i in (0, 1)
]


def _zones(c: SchedulerState, *, full: tuple[str, ...] = (), taint: tuple[str, ...] = ()) -> None:
    for name, labels in ZONE_NODES:
        z = labels["zone"]
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if z in taint else None
        c.upsert_node(node_from_api(node_obj(name, cpu="0" if z in full else "32", labels=labels, taints=taints)))


def _gang(c: SchedulerState, name: str, n: int, constraint: dict[str, Any], **spec: Any) -> list[str]:
    c.upsert_gang(GangSpec("default", name, n))
    keys = []
    for i in range(n):
        obj = pod_obj(
            f"{name}-{i}", spec_extra={"topologySpreadConstraints": [constraint], **spec}, labels={"app": "x"}
        )
        pod = pod_record(obj, c, gang=f"default/{name}", rank=i, ours=True)
        c.upsert_pod(pod)
        keys.append(pod.key)
    return keys


APP = {"matchLabels": {"app": "x"}}


def _per_zone(c: SchedulerState, bindings: list[tuple[str, str]]) -> list[int]:
    zones = [c.nodes[node].labels["zone"] for _, node in bindings]
    return [zones.count(z) for z in ("za", "zb", "zc")]


def test_gang_of_six_over_three_zones_max_skew_one_ends_two_two_two() -> None:
    """Without the constraint binpack puts all six on one node (32 CPUs); kube-scheduler placing them one after
    another with maxSkew 1 can only reach 2/2/2."""
    c = SchedulerState()
    _zones(c)
    keys = _gang(c, "g", 6, spread(1, "zone", APP))
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == keys
    assert _per_zone(c, plan.bindings) == [2, 2, 2]


def test_two_gangs_in_one_cycle_count_each_other() -> None:
    """The second gang's domains count the first gang's members placed earlier in the same cycle."""
    c = SchedulerState()
    _zones(c)
    _gang(c, "a", 2, spread(1, "zone", APP))
    _gang(c, "b", 4, spread(1, "zone", APP))
    plan = step(c, SchedulerConfig(max_units_per_cycle=2), 0.0)
    assert len(plan.bindings) == 6
    assert _per_zone(c, plan.bindings) == [2, 2, 2]


def test_bound_pods_count() -> None:
    """Pods already bound (another scheduler's, same namespace and labels) count: za holds 2, so a gang of 4 fills
    zb and zc first (1/1, then 2/2 once the minimum rose)."""
    c = SchedulerState()
    _zones(c)
    for i in range(2):
        obj = pod_obj(f"old-{i}", cpu=None, node="za-0", phase="Running", labels={"app": "x"})
        c.upsert_pod(pod_record(obj, c, gang=None, ours=False))
    _gang(c, "g", 4, spread(1, "zone", APP))
    plan = step(c, CFG, 0.0)
    assert _per_zone(c, plan.bindings) == [0, 2, 2]


def test_gang_that_cannot_keep_the_skew_waits_naming_the_plugin() -> None:
    """zc has no room but is a domain (eligible, 0 pods): at most one member per zone fits za and zb."""
    c = SchedulerState()
    _zones(c, full=("zc",))
    _gang(c, "g", 6, spread(1, "zone", APP))
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    message = plan.gang_status["default/g"].message
    assert "PodTopologySpread: maxSkew 1 on zone (3 domains) would be exceeded" in message, message


@pytest.mark.parametrize(("min_domains", "placed"), [(None, [2, 2, 0]), (3, None)])
def test_min_domains(min_domains: int | None, placed: list[int] | None) -> None:
    """Two zones with nodes (zc's nodes gone): minDomains 3 makes the global minimum 0, so each zone takes one."""
    c = SchedulerState()
    for name, labels in ZONE_NODES[:4]:
        c.upsert_node(node_from_api(node_obj(name, labels=labels)))
    extra = {} if min_domains is None else {"minDomains": min_domains}
    _gang(c, "g", 4, spread(1, "zone", APP, **extra))
    plan = step(c, CFG, 0.0)
    if placed is None:
        assert not plan.bindings
        assert "fewer than minDomains 3" in plan.gang_status["default/g"].message
    else:
        assert _per_zone(c, plan.bindings) == placed


@pytest.mark.parametrize(("policy", "placed"), [("Honor", [2, 2, 0]), ("Ignore", None)])
def test_node_taints_policy(policy: str, placed: list[int] | None) -> None:
    """zc's nodes carry a taint the pods do not tolerate: Honor leaves zc out of the domains, Ignore (the default)
    counts it with 0 pods, so za and zb take one member each and the gang of 4 cannot be placed."""
    c = SchedulerState()
    _zones(c, taint=("zc",))
    _gang(c, "g", 4, spread(1, "zone", APP, nodeTaintsPolicy=policy))
    plan = step(c, CFG, 0.0)
    if placed is None:
        assert not plan.bindings
    else:
        assert _per_zone(c, plan.bindings) == placed


@pytest.mark.parametrize(("policy", "placed"), [("Honor", [2, 2, 0]), ("Ignore", None)])
def test_node_affinity_policy(policy: str, placed: list[int] | None) -> None:
    """The pods' nodeSelector-like affinity accepts za and zb: Honor (the default) leaves zc out of the domains."""
    c = SchedulerState()
    _zones(c)
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["za", "zb"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    _gang(c, "g", 4, spread(1, "zone", APP, nodeAffinityPolicy=policy), affinity=affinity)
    plan = step(c, CFG, 0.0)
    if placed is None:
        assert not plan.bindings
    else:
        assert _per_zone(c, plan.bindings) == placed


def test_nodes_without_the_key_are_no_candidates() -> None:
    c = SchedulerState()
    add_nodes(c, 2)  # labelled kubernetes.io/hostname only
    _gang(c, "g", 2, spread(1, "zone", APP))
    plan = step(c, CFG, 0.0)
    assert not plan.bindings
    assert "PodTopologySpread: no label zone (2 nodes)" in plan.gang_status["default/g"].message


def test_two_classes_are_each_placed_keeping_the_skew() -> None:
    """A gang of two scheduling classes (core/placement/quorum_placement.py) whose classes share the selector: each
    class is placed pod by pod counting the other's members, the final spread keeps maxSkew 1."""
    c = SchedulerState()
    _zones(c)
    c.upsert_gang(GangSpec("default", "g", 4))
    for i in range(4):
        spec = {"topologySpreadConstraints": [spread(1, "zone", APP)]}
        obj = pod_obj(f"g-{i}", cpu=str(1 + i % 2), spec_extra=spec, labels={"app": "x"})
        c.upsert_pod(pod_record(obj, c, gang="default/g", rank=i, ours=True))
    plan = step(c, CFG, 0.0)
    zones = _per_zone(c, plan.bindings)
    assert len(plan.bindings) == 4 and max(zones) - min(zones) <= 1


def test_network_topology_placement_that_breaks_the_skew_is_not_made() -> None:
    """Hard tier 1 puts the whole gang under one ToR, which is one zone: the placement is checked against the
    zone spread constraint and refused (core/placement/placement.py), the gang waits naming PodTopologySpread."""
    c = SchedulerState()
    names = ["za-0", "za-1", "zb-0", "zb-1"]
    for name in names:
        c.upsert_node(node_from_api(node_obj(name, gpu=8, labels={"zone": name[:2], "kubernetes.io/hostname": name})))
    tors = [Domain(1, "tor-a", parents=("spine",), children=("za-0", "za-1"))]
    tors.append(Domain(1, "tor-b", parents=("spine",), children=("zb-0", "zb-1")))
    c.set_topology(TopologyTree.from_domains([*tors, Domain(2, "spine")]))
    c.upsert_gang(GangSpec("default", "g", 4, network_topology=NetworkTopology(TopologyMode.HARD, 1)))
    for i in range(4):
        spec = {"topologySpreadConstraints": [spread(1, "zone", APP)]}
        obj = pod_obj(f"g-{i}", gpu=1, spec_extra=spec, labels={"app": "x"})
        c.upsert_pod(pod_record(obj, c, gang="default/g", rank=i, ours=True))
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    assert "PodTopologySpread: maxSkew 1 on zone" in plan.gang_status["default/g"].message


# ----- parsing -----


def _parse(constraints: list[Any], labels: dict[str, str] | None = None) -> Any:
    obj = pod_obj("p", spec_extra={"topologySpreadConstraints": constraints}, labels=labels or {"foo": ""})
    return pod_record(obj, gang=None, ours=True)


def test_parse_defaults_and_self_match() -> None:
    (c,) = _parse([spread(1, "zone")]).sclass.spread
    assert (c.max_skew, c.topology_key, c.namespace, c.min_domains) == (1, "zone", "default", 1)
    assert c.self_match and c.honor_affinity and not c.honor_taints
    (nil,) = _parse([spread(1, "zone", None)]).sclass.spread
    assert nil.selector is None and not nil.self_match


def test_parse_match_label_keys_merges_the_pods_value() -> None:
    (c,) = _parse([spread(1, "zone", matchLabelKeys=["version", "absent"])], {"foo": "", "version": "v2"}).sclass.spread
    assert c.selector is not None and ("version", "v2") in c.selector.labels
    assert not any(k == "absent" for k, _ in c.selector.labels)


def test_schedule_anyway_is_kept_as_a_preference() -> None:
    soft = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": FOO}
    pod = _parse([soft, spread(1, "node")])
    assert [c.hard for c in pod.sclass.spread] == [True, False]  # DoNotSchedule first
    assert not pod.unready and not pod.unsupported


@pytest.mark.parametrize(
    ("constraint", "field"),
    [
        (spread(0, "zone"), "spec.topologySpreadConstraints[0].maxSkew"),
        (spread(10**40, "zone"), "spec.topologySpreadConstraints[0].maxSkew"),
        (spread(1, ""), "spec.topologySpreadConstraints[0].topologyKey"),
        (
            {**spread(1, "zone"), "whenUnsatisfiable": "Sometimes"},
            "spec.topologySpreadConstraints[0].whenUnsatisfiable",
        ),
        (spread(1, "zone", minDomains=0), "spec.topologySpreadConstraints[0].minDomains"),
        (
            {**spread(1, "zone", minDomains=2), "whenUnsatisfiable": "ScheduleAnyway"},
            "spec.topologySpreadConstraints[0].minDomains",
        ),
        (spread(1, "zone", nodeAffinityPolicy="Always"), "spec.topologySpreadConstraints[0].nodeAffinityPolicy"),
        (spread(1, "zone", nodeTaintsPolicy="honor"), "spec.topologySpreadConstraints[0].nodeTaintsPolicy"),
        (spread(1, "zone", None, matchLabelKeys=["a"]), "spec.topologySpreadConstraints[0].matchLabelKeys"),
        (
            spread(1, "zone", {"matchLabels": {"a": "1"}}, matchLabelKeys=["a"]),
            "spec.topologySpreadConstraints[0].matchLabelKeys[0]",
        ),
        ("zone", "spec.topologySpreadConstraints[0]"),
    ],
)
def test_bad_constraints_name_the_field(constraint: Any, field: str) -> None:
    with pytest.raises(InvalidField) as caught:
        _parse([constraint])
    assert caught.value.field == field


def test_duplicate_pair_is_refused() -> None:
    with pytest.raises(InvalidField) as caught:
        _parse([spread(1, "zone"), spread(2, "zone")])
    assert caught.value.field == "spec.topologySpreadConstraints[1]"


# ----- the domain arithmetic -----


def _constraint(**kw: Any) -> Any:
    from gangsched.core.records.records import LabelSelector, SpreadConstraint

    return SpreadConstraint(
        **{
            "max_skew": 1,
            "topology_key": "zone",
            "namespace": "default",
            "selector": LabelSelector((), ()),
            "self_match": True,
            **kw,
        }
    )


def test_domains_minimum_rises_when_the_last_lowest_domain_gains_a_pod() -> None:
    """criticalPaths in filtering.go: the minimum over the domains, kept as pods are added (here a histogram)."""
    from gangsched.core.fit.pod_spread import Domains

    d = Domains(_constraint(), {"a": "za", "b": "zb", "c": "zc"}, [("a", 1)])
    assert (d.floor(), d.allows("za"), d.allows("zb")) == (0, False, True)
    assert not d.add("b")  # zc still holds the minimum 0
    assert d.add("c")  # every domain has 1 now
    assert d.floor() == 1 and d.allows("za")
    assert not d.add("x")  # a node that is not eligible counts nowhere


def test_domains_min_domains_floor_and_no_self_match() -> None:
    from gangsched.core.fit.pod_spread import Domains

    d = Domains(_constraint(min_domains=3, max_skew=2), {"a": "za", "b": "zb"}, [("a", 1), ("b", 1)])
    assert d.floor() == 0 and d.skew("za") == 2 and d.allows("za")
    d.add("a")
    assert not d.allows("za") and "fewer than minDomains 3" in d.describe()
    other = Domains(_constraint(self_match=False), {"a": "za", "b": "zb"}, [("a", 2)])
    assert other.skew("za") == 2 and other.skew("zb") == 0  # placing it changes no count


def test_zone_and_hostname_constraints_together() -> None:
    """TestMultipleConstraints in a gang: maxSkew 1 on zone and on hostname, six members on six nodes: one per
    node (the hostname constraint parks a used node until every node has one), 2/2/2 over the zones."""
    c = SchedulerState()
    _zones(c)
    host = spread(1, "kubernetes.io/hostname", APP)
    c.upsert_gang(GangSpec("default", "g", 6))
    for i in range(6):
        spec = {"topologySpreadConstraints": [spread(1, "zone", APP), host]}
        obj = pod_obj(f"g-{i}", spec_extra=spec, labels={"app": "x"})
        c.upsert_pod(pod_record(obj, c, gang="default/g", rank=i, ours=True))
    plan = step(c, CFG, 0.0)
    assert len({node for _, node in plan.bindings}) == 6
    assert _per_zone(c, plan.bindings) == [2, 2, 2]


def test_spread_with_required_anti_affinity() -> None:
    """A zone spread constraint and required anti-affinity on the hostname (core/fit/affinity.py): both hold."""
    c = SchedulerState()
    _zones(c)
    term = {"labelSelector": APP, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    _gang(c, "g", 6, spread(1, "zone", APP), affinity=anti)
    plan = step(c, CFG, 0.0)
    assert len({node for _, node in plan.bindings}) == 6
    assert _per_zone(c, plan.bindings) == [2, 2, 2]


def test_replacement_of_a_satisfied_gang_goes_where_the_skew_allows() -> None:
    """A satisfied gang's replacement member is placed alone (core/placement/late_members.py) and still keeps the skew:
    with 2/2/2 bound and one member gone, only the zone it left takes the new one."""
    c = SchedulerState()
    _zones(c)
    keys = _gang(c, "g", 6, spread(1, "zone", APP))
    plan = step(c, CFG, 0.0)
    where = dict(plan.bindings)
    gone = keys[0]
    c.remove_pod(gone)
    obj = pod_obj("g-new", spec_extra={"topologySpreadConstraints": [spread(1, "zone", APP)]}, labels={"app": "x"})
    c.upsert_pod(pod_record(obj, c, gang="default/g", rank=0, ours=True))
    plan = step(c, CFG, 1.0)
    assert [k for k, _ in plan.bindings] == ["default/g-new"]
    assert c.nodes[plan.bindings[0][1]].labels["zone"] == c.nodes[where[gone]].labels["zone"]


def test_a_gang_short_of_room_is_not_blamed_on_the_spread() -> None:
    """maxSkew 10 never binds here; the gang is short of room (six 1-CPU nodes for seven members), and the message
    says so (core/transaction/messages.py's generic "no more nodes"), not PodTopologySpread."""
    c = SchedulerState()
    for name, labels in ZONE_NODES:
        c.upsert_node(node_from_api(node_obj(name, cpu="1", labels=labels)))
    _gang(c, "g", 7, spread(10, "zone", APP))
    plan = step(c, CFG, 0.0)
    message = plan.gang_status["default/g"].message
    assert not plan.bindings and "PodTopologySpread" not in message and "no more nodes" in message, message


# ----- ScheduleAnyway: a preference (kube-scheduler's PodTopologySpread Score) -----


def soft(key: str, selector: dict[str, Any] | None = APP) -> dict[str, Any]:
    return {**spread(1, key, selector), "whenUnsatisfiable": "ScheduleAnyway"}


def test_schedule_anyway_prefers_the_least_loaded_zones() -> None:
    """scoring.go: a node scores higher the fewer matching pods its domain holds; binpack alone would put all six
    on one node. Nothing is reported as unsupported."""
    c = SchedulerState()
    _zones(c)
    _gang(c, "g", 6, soft("zone"))
    plan = step(c, CFG, 0.0)
    assert _per_zone(c, plan.bindings) == [2, 2, 2]
    assert not [e for e in plan.events if e.reason == "Unsupported"]


def test_schedule_anyway_never_refuses() -> None:
    """zc has no room: DoNotSchedule would stop at one member per zone; ScheduleAnyway places all six in za and
    zb, still least-loaded first (3/3)."""
    c = SchedulerState()
    _zones(c, full=("zc",))
    _gang(c, "g", 6, soft("zone"))
    plan = step(c, CFG, 0.0)
    assert _per_zone(c, plan.bindings) == [3, 3, 0]


def test_schedule_anyway_nodes_without_the_key_come_last_but_are_used() -> None:
    """Nodes without the key are ignored by the score (they come last), never filtered: binpack alone would fill
    the small unlabelled node first."""
    c = SchedulerState()
    c.upsert_node(node_from_api(node_obj("zoned", cpu="32", labels={"zone": "za"})))
    c.upsert_node(node_from_api(node_obj("bare", cpu="2", labels={"kubernetes.io/hostname": "bare"})))
    _gang(c, "g", 3, soft("zone"))
    plan = step(c, CFG, 0.0)
    assert [n for _, n in plan.bindings] == ["zoned"] * 3
    c2 = SchedulerState()
    c2.upsert_node(node_from_api(node_obj("zoned", cpu="1", labels={"zone": "za"})))
    c2.upsert_node(node_from_api(node_obj("bare", cpu="2", labels={"kubernetes.io/hostname": "bare"})))
    _gang(c2, "g", 3, soft("zone"))
    assert sorted(n for _, n in step(c2, CFG, 0.0).bindings) == ["bare", "bare", "zoned"]


def test_schedule_anyway_next_to_do_not_schedule_never_refuses() -> None:
    """A DoNotSchedule zone constraint groups the nodes (2/2/2); a ScheduleAnyway one on the hostname that a
    binpack placement ignores (two members per node) never refuses a node."""
    c = SchedulerState()
    _zones(c)
    c.upsert_gang(GangSpec("default", "g", 6))
    for i in range(6):
        spec = {"topologySpreadConstraints": [spread(1, "zone", APP), soft("kubernetes.io/hostname")]}
        obj = pod_obj(f"g-{i}", spec_extra=spec, labels={"app": "x"})
        c.upsert_pod(pod_record(obj, c, gang="default/g", rank=i, ours=True))
    plan = step(c, CFG, 0.0)
    assert _per_zone(c, plan.bindings) == [2, 2, 2]


def test_a_gang_the_skew_forbids_evicts_nobody() -> None:
    """minDomains 4 over three zones: at most one member per zone, whatever is evicted; the low-priority pods
    filling every node must not be evicted in vain: the victim search counts resources, not the skew, so a gang
    with a DoNotSchedule constraint does not preempt (core/preemption/preempt_gang.py, as with host ports). Control: the
    same gang without the constraint preempts."""
    c = SchedulerState()
    _zones(c)
    for i, (name, _) in enumerate(ZONE_NODES):
        obj = pod_obj(f"low-{i}", cpu="32", node=name, phase="Running", priority=-10)
        c.upsert_pod(pod_record(obj, c, gang=None, ours=False))
    _gang(c, "g", 6, spread(1, "zone", APP, minDomains=4))
    for now in (0.0, 1.0, 30.0):
        plan = step(c, CFG, now)
        assert not plan.evictions and not plan.bindings
    control = SchedulerState()
    _zones(control)
    for i, (name, _) in enumerate(ZONE_NODES):
        obj = pod_obj(f"low-{i}", cpu="32", node=name, phase="Running", priority=-10)
        control.upsert_pod(pod_record(obj, control, gang=None, ours=False))
    control.upsert_gang(GangSpec("default", "g", 6))
    for i in range(6):
        obj = pod_obj(f"g-{i}", labels={"app": "x"})
        control.upsert_pod(pod_record(obj, control, gang="default/g", rank=i, ours=True))
    assert step(control, CFG, 0.0).evictions


# ----- randomized: against a sequential replay of the filter -----


def _water_fill(cap: dict[str, int], count: dict[str, int], skew: int, min_domains: int, n: int) -> int:
    """How many pods kube-scheduler's Filter lets in one after another, each into the allowed domain with the
    fewest matching pods (an independent oracle: filtering.go's rule on plain counts)."""
    cap, count = dict(cap), dict(count)
    placed = 0
    while placed < n:
        floor = 0 if len(count) < min_domains else min(count.values())
        allowed = [d for d in count if cap[d] > 0 and count[d] + 1 - floor <= skew]
        if not allowed:
            break
        d = min(allowed, key=lambda x: (count[x], x))
        cap[d] -= 1
        count[d] += 1
        placed += 1
    return placed


@pytest.mark.parametrize("seed", range(40))
def test_random_clusters_against_the_filter_replayed(seed: int) -> None:
    """Random zones, room and matching pods already bound: a NonStrict gang places exactly as many members as the
    oracle lets in, and the final counts keep the skew (the last pod into each domain saw a minimum <= the final
    one, so final count - final minimum <= maxSkew is necessary)."""
    _random_case(seed, CFG)


def _random_case(seed: int, config: SchedulerConfig) -> None:
    import random

    rnd = random.Random(seed)
    zones = [f"z{i}" for i in range(rnd.randint(2, 4))]
    skew, min_domains, n = rnd.randint(1, 2), rnd.choice([1, 1, 3, 5]), rnd.randint(1, 9)
    c = SchedulerState()
    cap: dict[str, int] = {}
    count: dict[str, int] = {}
    for z in zones:
        cap[z] = count[z] = 0
        for j in range(rnd.randint(1, 2)):
            name, room, old = f"{z}-{j}", rnd.randint(0, 3), rnd.randint(0, 2)
            c.upsert_node(node_from_api(node_obj(name, cpu=str(room), labels={"zone": z})))
            cap[z] += room
            count[z] += old
            for k in range(old):
                obj = pod_obj(f"old-{name}-{k}", cpu=None, node=name, phase="Running", labels={"app": "x"})
                c.upsert_pod(pod_record(obj, c, gang=None, ours=False))
    want = _water_fill(cap, count, skew, min_domains, n)
    c.upsert_gang(GangSpec("default", "g", 1, mode=GangMode.NON_STRICT))
    constraint = spread(skew, "zone", APP, **({"minDomains": min_domains} if min_domains > 1 else {}))
    for i in range(n):
        obj = pod_obj(f"g-{i}", spec_extra={"topologySpreadConstraints": [constraint]}, labels={"app": "x"})
        c.upsert_pod(pod_record(obj, c, gang="default/g", rank=i, ours=True))
    plan = step(c, config, 0.0)
    placed = [*plan.bindings, *plan.reservations]
    assert len(placed) == want, (seed, cap, count, skew, min_domains, n, placed)
    for _, node in placed:
        count[c.nodes[node].labels["zone"]] += 1
    touched = {c.nodes[node].labels["zone"] for _, node in placed}
    floor = 0 if len(count) < min_domains else min(count.values())
    assert all(count[z] - floor <= skew for z in touched), (seed, count)


@pytest.mark.parametrize("seed", range(40))
def test_random_clusters_with_the_spread_score_strategy(seed: int) -> None:
    """The same oracle with scoreStrategy spread (one pod per node per round, emptiest first)."""
    _random_case(seed, SchedulerConfig(score_strategy="spread"))
