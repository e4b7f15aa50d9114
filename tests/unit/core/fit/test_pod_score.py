"""Preferred pod affinity and anti-affinity for our pods (core/fit/pod_score.py, through the scheduler): which node is
chosen.

Oracles:
- kube-scheduler pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go `TestPreferredAffinity`: the
  table keeps its case names, nodes, existing pods and incoming pod; upstream's expected scores become "the pod
  lands on one of the nodes with the highest score" (framework.MaxNodeScore). The symmetry cases (existing pods'
  own preferred terms, and their required affinity terms with hardPodAffinityWeight) are left out: gangsched does
  not count them (docs/pod-constraints.md, parity table).
- scoring.go processExistingPod (each existing pod matching a term adds the term's weight to its node's domain,
  anti-affinity terms subtract) and apis/core/validation validateWeightedPodAffinityTerms (weight 1-100).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.errors import InvalidField
from gangsched.models.node import node_from_api
from tests.builders import add_gang, node_obj, pod_obj, pod_record

CFG = SchedulerConfig()
S1 = {"security": "S1"}
S2 = {"security": "S2"}
CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
HOST = "kubernetes.io/hostname"


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def _weighted(weight: int, key: str, *exprs: dict[str, Any]) -> dict[str, Any]:
    term = {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": key}
    return {"weight": weight, "podAffinityTerm": term}


def _prefer(aff: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if aff:
        out["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": aff}
    if anti:
        out["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": anti}
    return {"affinity": out}


STAY_S1_REGION = _prefer([_weighted(5, "region", _expr("security", "In", "S1"))])
STAY_S2_REGION = _prefer([_weighted(6, "region", _expr("security", "In", "S2"))])
AFFINITY3 = _prefer(
    [
        _weighted(8, "region", _expr("security", "NotIn", "S1"), _expr("security", "In", "S2")),
        _weighted(2, "region", _expr("security", "Exists"), _expr("wrongkey", "DoesNotExist")),
    ]
)
AWAY_S1_AZ = _prefer(anti=[_weighted(5, "az", _expr("security", "In", "S1"))])
STAY_S1_REGION_AWAY_S2_AZ = _prefer(
    [_weighted(8, "region", _expr("security", "In", "S1"))], [_weighted(5, "az", _expr("security", "In", "S2"))]
)

Node = tuple[str, dict[str, str]]
# (TestPreferredAffinity name, incoming labels, incoming spec, nodes, existing pods [(node, labels)], the nodes
#  upstream scores highest)
CASES: list[tuple[str, dict[str, str], dict[str, Any], list[Node], list[tuple[str, dict[str, str]]], set[str]]] = [
    (
        (
            "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
            "which doesn't match either pods in nodes or in topology key"
        ),
        S1,
        STAY_S1_REGION,
        [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)],
        [("node1", S1), ("node2", S2), ("node3", S1)],
        {"node1"},
    ),
    (
        (
            "All the nodes that have the same topology key & label value with one of them has an existing pod "
            "that match the affinity rules, have the same score"
        ),
        {},
        STAY_S1_REGION,
        [("node1", CHINA), ("node2", CHINA_AZ1), ("node3", INDIA)],
        [("node1", S1)],
        {"node1", "node2"},
    ),
    (
        (
            "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has "
            "more matches will get high score"
        ),
        S1,
        STAY_S2_REGION,
        [("node1", CHINA), ("node2", INDIA), ("node3", CHINA), ("node4", CHINA), ("node5", INDIA)],
        [("node1", S2), ("node1", S2), ("node2", S2), ("node3", S2), ("node4", S2), ("node5", S2)],
        {"node1", "node3", "node4"},
    ),
    (
        (
            "Affinity: different Label operators and values for pod affinity scheduling preference, including "
            "some match failures "
        ),
        S1,
        AFFINITY3,
        [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)],
        [("node1", S1), ("node2", S2), ("node3", S1)],
        {"node2"},
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        S1,
        AWAY_S1_AZ,
        [("node1", AZ1), ("node2", CHINA)],
        [("node1", S1), ("node2", S2)],
        {"node2"},
    ),
    (
        (
            "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
            "comparing to others "
        ),
        S1,
        AWAY_S1_AZ,
        [("node1", AZ1), ("node2", CHINA)],
        [("node1", S1), ("node2", S1)],
        {"node2"},
    ),
    (
        (
            "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
            "unmatches will get high score"
        ),
        S1,
        AWAY_S1_AZ,
        [("node1", AZ1), ("node2", INDIA)],
        [("node1", S1), ("node1", S1), ("node2", S2)],
        {"node2"},
    ),
    (
        (
            "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
            "affinity & anti affinity"
        ),
        S1,
        STAY_S1_REGION_AWAY_S2_AZ,
        [("node1", CHINA), ("node2", AZ1)],
        [("node1", S1), ("node2", S1)],
        {"node1"},
    ),
    (
        (
            "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing "
            "pods have the same labels"
        ),
        S1,
        STAY_S1_REGION_AWAY_S2_AZ,
        [("node1", CHINA_AZ1), ("node2", INDIA), ("node3", CHINA), ("node4", CHINA), ("node5", INDIA)],
        [("node1", S1), ("node1", S1), ("node2", S1), ("node3", S1), ("node3", S1), ("node4", S1), ("node5", S1)],
        {"node1", "node3", "node4"},
    ),
]


def _pod(name: str, labels: dict[str, str], spec: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return pod_obj(name, labels=labels, spec_extra=spec, **kw)


def _add(c: SchedulerState, name: str, labels: dict[str, str], spec: dict[str, Any] | None = None, **kw: Any) -> str:
    ours, gang, rank = kw.pop("ours", True), kw.pop("gang", None), kw.pop("rank", None)
    pod = pod_record(_pod(name, labels, spec, **kw), c, gang=gang, ours=ours, rank=rank)
    c.upsert_pod(pod)
    return pod.key


@pytest.mark.parametrize("strategy", ["binpack", "spread"])  # fullest or emptiest first: the score goes first
@pytest.mark.parametrize(
    ("name", "labels", "spec", "nodes", "existing", "best"), CASES, ids=[c[0].strip() for c in CASES]
)
def test_preferred_affinity_picks_a_highest_scored_node(
    strategy: str,
    name: str,
    labels: dict[str, str],
    spec: dict[str, Any],
    nodes: list[Node],
    existing: list[tuple[str, dict[str, str]]],
    best: set[str],
) -> None:
    c = SchedulerState()
    for node, node_labels in nodes:
        c.upsert_node(node_from_api(node_obj(node, labels=node_labels)))
    for i, (node, pod_labels) in enumerate(existing):  # other schedulers' pods (cpu: binpack would prefer them)
        _add(c, f"existing-{i}", pod_labels, ours=False, node=node, phase="Running")
    key = _add(c, "p", labels, spec)
    (binding,) = step(c, SchedulerConfig(score_strategy=strategy), 0.0).bindings
    assert binding[0] == key
    assert binding[1] in best, name


def _zones(c: SchedulerState, per_zone: int, **kw: Any) -> list[str]:
    names = []
    for i in range(per_zone):  # zones interleaved: the order of the nodes alone would split a gang
        for z in range(2):
            name = f"z{z}-n{i}"
            c.upsert_node(node_from_api(node_obj(name, labels={"zone": f"z{z}", HOST: name}, **kw)))
            names.append(name)
    return names


def _gang(c: SchedulerState, name: str, n: int, spec: dict[str, Any]) -> list[str]:
    add_gang(c, name, 0, min_member=n)  # the PodGroup; the members come with their labels
    return [_add(c, f"{name}-{i}", {"app": name}, spec, gang=f"default/{name}", rank=i) for i in range(n)]


def test_gang_members_prefer_the_zone_of_the_members_placed_before_them() -> None:
    """The gang's own members count as they are placed in the cycle (kube-scheduler scores each pod against the
    pods assumed before it): four one-per-node members with a preferred zone affinity to each other share a zone."""
    c = SchedulerState()
    _zones(c, 4, cpu="1")
    keys = _gang(c, "g", 4, _prefer([_weighted(50, "zone", _expr("app", "In", "g"))]))
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == keys
    assert len({node[:2] for _, node in plan.bindings}) == 1, plan.bindings


def test_gang_members_with_preferred_anti_affinity_spread_over_nodes_when_binpacking() -> None:
    """Binpacking alone puts three small members on one node; a preferred hostname anti-affinity among them spreads
    them, one per node while nodes are left."""
    c = SchedulerState()
    _zones(c, 2)
    keys = _gang(c, "web", 3, _prefer(anti=[_weighted(10, HOST, _expr("app", "In", "web"))]))
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == keys
    assert len({node for _, node in plan.bindings}) == 3, plan.bindings


def test_a_preference_never_refuses_a_node() -> None:
    """A score, not a filter: with one node, whose domain holds the pods the term avoids, the pod still goes."""
    c = SchedulerState()
    c.upsert_node(node_from_api(node_obj("only", labels={"az": "az1"})))
    _add(c, "s1", S1, ours=False, node="only", phase="Running")
    key = _add(c, "p", S1, AWAY_S1_AZ)
    assert step(c, CFG, 0.0).bindings == [(key, "only")]


def test_preferred_terms_are_evaluated_not_reported() -> None:
    c = SchedulerState()
    c.upsert_node(node_from_api(node_obj("n0", labels={"region": "r"})))
    _add(c, "p", S1, STAY_S1_REGION)
    plan = step(c, CFG, 0.0)
    assert plan.bindings and not [e for e in plan.events if e.reason == "Unsupported"]


@pytest.mark.parametrize("weight", [0, 101, "5", None])
def test_a_weight_out_of_range_names_the_field(weight: object) -> None:
    spec = _prefer(anti=[{"weight": weight, "podAffinityTerm": {"topologyKey": "az"}}])
    with pytest.raises(InvalidField) as err:
        pod_record(_pod("p", {}, spec), gang=None, ours=True)
    assert err.value.field == (
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"
    )


def test_the_ranking_follows_pods_that_come_and_go_between_cycles() -> None:
    """The class index is kept across cycles: matching pods bound in a region later move the next pod of the same
    class to that region, to its node that holds none of them (re-ranked through the counts' change log,
    core/fit/pod_counts.py, not the node's own usage), and their deletion moves the ranking back."""
    c = SchedulerState()
    for node, labels in (("china", CHINA), ("india", INDIA), ("india-2", INDIA)):
        c.upsert_node(node_from_api(node_obj(node, labels=labels)))
    spread = SchedulerConfig(score_strategy="spread")
    _add(c, "s1-china", S1, ours=False, node="china", phase="Running")
    first = _add(c, "p0", {}, STAY_S1_REGION)
    assert step(c, spread, 0.0).bindings == [(first, "china")]
    for i in range(3):  # India now holds more S1 pods than China (the bound p0 has no S1 label)
        _add(c, f"s1-india-{i}", S1, ours=False, node="india", phase="Running")
    second = _add(c, "p1", {}, STAY_S1_REGION)
    assert step(c, spread, 1.0).bindings == [(second, "india-2")]  # the emptiest of the region
    for i in range(3):
        c.remove_pod(f"default/s1-india-{i}")
    third = _add(c, "p2", {}, STAY_S1_REGION)
    assert step(c, spread, 2.0).bindings == [(third, "china")]
