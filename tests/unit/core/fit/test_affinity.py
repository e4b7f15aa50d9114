"""InterPodAffinity for our pods (core/fit/affinity.py over core/fit/pod_counts.py, through the scheduler).

Oracles:
- kube-scheduler pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go
  `TestRequiredAffinitySingleNode` (the table keeps its case names: one node machine1 {region: r1, zone: z11},
  the existing pods on it) and `TestRequiredAffinityMultipleNodes` (the first pod of a self-affine group,
  nodes without the topology key); filtering.go satisfyPodAffinity / satisfyPodAntiAffinity /
  satisfyExistingPodsAntiAffinity.
- pkg/registry/core/pod/strategy.go applyMatchLabelKeysAndMismatchLabelKeys (KEP-3633): matchLabelKeys merged
  into the selector as `key In (value)` from the pod's own labels, mismatchLabelKeys as `NotIn`.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.errors import InvalidField
from gangsched.models.node import node_from_api
from tests.builders import add_gang, add_nodes, node_obj, pod_obj, pod_record

CFG = SchedulerConfig()
SCAN = {"service": "securityscan"}  # podLabel
S1 = {"security": "S1"}  # podLabel2
HOST = "kubernetes.io/hostname"


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def _term(key: str, *exprs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": key, **extra}


def _affinity(aff: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if aff:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": aff}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return {"affinity": out} if out else {}


def _obj(name: str, labels: dict[str, str], spec: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    obj = pod_obj(name, spec_extra=spec, **kw)
    obj["metadata"]["labels"] = labels
    return obj


def _add(c: SchedulerState, name: str, labels: dict[str, str], spec: dict[str, Any] | None = None, **kw: Any) -> str:
    ours, gang, rank = kw.pop("ours", True), kw.pop("gang", None), kw.pop("rank", None)
    pod = pod_record(_obj(name, labels, spec, **kw), c, gang=gang, ours=ours, rank=rank)
    c.upsert_pod(pod)
    return pod.key


IN_SCAN = _expr("service", "In", "securityscan", "value2")
IN_ANTIVIRUS = _expr("service", "In", "antivirusscan", "value2")
# (TestRequiredAffinitySingleNode name, incoming labels, incoming spec, existing pods on machine1 [(labels, spec)],
#  the reason it is refused or None)
SINGLE_NODE: list[tuple[str, dict[str, str], dict[str, Any], list[tuple[dict[str, str], dict[str, Any]]], str | None]]
SINGLE_NODE = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        {},
        {},
        [],
        None,
    ),
    (
        (
            "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
            "matches the existing pod"
        ),
        S1,
        _affinity([_term("region", IN_SCAN)]),
        [(SCAN, {})],
        None,
    ),
    (
        (
            "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
            "operator in labelSelector that matches the existing pod"
        ),
        S1,
        _affinity([_term("region", _expr("service", "NotIn", "securityscan3", "value3"))]),
        [(SCAN, {})],
        None,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        S1,
        _affinity([_term("region", IN_SCAN, namespaces=["DiffNameSpace"])]),
        [(SCAN, {})],
        "pod affinity",
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        SCAN,
        _affinity([_term("region", IN_ANTIVIRUS)]),
        [(SCAN, {})],
        "pod affinity",
    ),
    (
        (
            "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuring"
            "Execution"
        ),
        S1,
        _affinity(
            [
                _term("region", _expr("service", "Exists"), _expr("wrongkey", "DoesNotExist")),
                _term("region", _expr("service", "In", "securityscan"), _expr("service", "NotIn", "WrongValue")),
            ]
        ),
        [(SCAN, {})],
        None,
    ),
    (
        (
            "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule "
            "onto the node because one of the matchExpression item don't match."
        ),
        S1,
        _affinity(
            [
                _term("region", _expr("service", "Exists"), _expr("wrongkey", "DoesNotExist")),
                _term("region", _expr("service", "In", "securityscan2"), _expr("service", "NotIn", "WrongValue")),
            ]
        ),
        [(SCAN, {})],
        "pod affinity",
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        S1,
        _affinity([_term("region", IN_SCAN)], [_term("node", IN_ANTIVIRUS)]),
        [(SCAN, {})],
        None,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        S1,
        _affinity([_term("region", IN_SCAN)], [_term("node", IN_ANTIVIRUS)]),
        [(SCAN, _affinity(anti=[_term("node", IN_ANTIVIRUS)]))],
        None,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        S1,
        _affinity([_term("region", IN_SCAN)], [_term("zone", IN_SCAN)]),
        [(SCAN, {})],
        "pod anti-affinity",
    ),
    (
        (
            "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with "
            "the existing pod"
        ),
        SCAN,
        _affinity([_term("region", IN_SCAN)], [_term("node", IN_ANTIVIRUS)]),
        [(SCAN, _affinity(anti=[_term("zone", IN_SCAN)]))],
        "existing pods' anti-affinity",
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        SCAN,
        _affinity([_term("region", _expr("service", "NotIn", "securityscan", "value2"))]),
        [],  # upstream's pod sits on machine2, which is not a node of the snapshot: it counts nowhere
        "pod affinity",
    ),
    (
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
            "doesn't satisfy PodAntiAffinity symmetry with the existing pod"
        ),
        SCAN,
        {},
        [(SCAN, _affinity(anti=[_term("zone", IN_SCAN)]))],
        "existing pods' anti-affinity",
    ),
    (
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
            "satisfy PodAntiAffinity symmetry with the existing pod"
        ),
        SCAN,
        {},
        [(SCAN, _affinity(anti=[_term("zone", _expr("service", "NotIn", "securityscan", "value2"))]))],
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "labels", "spec", "existing", "refused"), SINGLE_NODE, ids=[c[0] for c in SINGLE_NODE]
)
def test_required_affinity_single_node(
    name: str,
    labels: dict[str, str],
    spec: dict[str, Any],
    existing: list[tuple[dict[str, str], dict[str, Any]]],
    refused: str | None,
) -> None:
    c = SchedulerState()
    c.upsert_node(node_from_api(node_obj("machine1", labels={"region": "r1", "zone": "z11"})))
    for i, (pod_labels, pod_spec) in enumerate(existing):
        _add(c, f"existing-{i}", pod_labels, pod_spec, ours=False, node="machine1", phase="Running")
    key = _add(c, "p", labels, spec)
    plan = step(c, CFG, 0.0)
    if refused is None:
        assert plan.bindings == [(key, "machine1")], name
    else:
        assert not plan.bindings, name
        (condition,) = plan.conditions
        assert f"InterPodAffinity: {refused}" in condition.message, condition.message


def _zones(c: SchedulerState, per_zone: int, zones: int = 2, **kw: Any) -> list[str]:
    names = []
    for z in range(zones):
        for i in range(per_zone):
            name = f"z{z}-n{i}"
            c.upsert_node(node_from_api(node_obj(name, labels={"zone": f"z{z}", HOST: name}, **kw)))
            names.append(name)
    return names


def test_first_pod_of_a_self_affine_group_goes_anywhere_then_the_rest_follow() -> None:
    """TestRequiredAffinityMultipleNodes "The first pod of the collection can only be scheduled on nodes labelled
    with the requested topology keys" and the self-affinity rule: the next pods go to its zone."""
    c = SchedulerState()
    _zones(c, 2)
    c.upsert_node(node_from_api(node_obj("bare", labels={})))  # no zone label: never for affinity
    spec = _affinity([_term("zone", _expr("app", "In", "db"))])
    first = _add(c, "db-0", {"app": "db"}, spec)
    (binding,) = step(c, CFG, 0.0).bindings
    assert binding[0] == first and binding[1].startswith("z")
    zone = binding[1][:2]
    _add(c, "db-1", {"app": "db"}, spec)
    _add(c, "db-2", {"app": "db"}, spec)
    bindings = step(c, CFG, 1.0).bindings + step(c, CFG, 2.0).bindings  # pods alone: a unit each
    assert len(bindings) == 2 and all(node.startswith(zone) for _, node in bindings)


def test_a_gang_of_self_affine_members_lands_in_one_zone() -> None:
    c = SchedulerState()
    _zones(c, 3, cpu="1")  # one pod per node
    keys = add_gang_with(c, "g", 3, {"app": "g"}, _affinity([_term("zone", _expr("app", "In", "g"))]))
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == keys
    assert len({node[:2] for _, node in plan.bindings}) == 1


def add_gang_with(c: SchedulerState, name: str, n: int, labels: dict[str, str], spec: dict[str, Any]) -> list[str]:
    add_gang(c, name, 0, min_member=n)  # the PodGroup; the members come with their labels
    return [_add(c, f"{name}-{i}", labels, spec, gang=f"default/{name}", rank=i) for i in range(n)]


ANTI_HOST = _affinity(anti=[_term(HOST, _expr("app", "In", "web"))])


def test_three_anti_affine_members_of_one_gang_land_on_three_nodes() -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 3, gpu=8)
    keys = add_gang_with(c, "web", 3, {"app": "web"}, ANTI_HOST)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == keys
    assert sorted(n for _, n in plan.bindings) == nodes


def test_anti_affine_gang_larger_than_the_nodes_waits_naming_inter_pod_affinity() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    add_gang_with(c, "web", 3, {"app": "web"}, ANTI_HOST)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    message = plan.gang_status["default/web"].message
    assert "InterPodAffinity" in message, message


def test_zone_anti_affinity_places_one_member_per_zone_even_when_binpacking() -> None:
    """A domain larger than a node: the pickers check each node again after every placement."""
    c = SchedulerState()
    _zones(c, 3, zones=3)
    keys = add_gang_with(c, "web", 3, {"app": "web"}, _affinity(anti=[_term("zone", _expr("app", "In", "web"))]))
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == keys
    assert sorted(node[:2] for _, node in plan.bindings) == ["z0", "z1", "z2"]


def test_existing_pods_anti_affinity_blocks_a_pod_without_any_term() -> None:
    """satisfyExistingPodsAntiAffinity: another scheduler's pod refuses `app: web` in its zone."""
    c = SchedulerState()
    _zones(c, 1)
    _add(c, "guard", {}, _affinity(anti=[_term("zone", _expr("app", "In", "web"))]), ours=False, node="z0-n0")
    key = _add(c, "web", {"app": "web"})
    assert step(c, CFG, 0.0).bindings == [(key, "z1-n0")]


def test_pods_of_the_store_count_as_they_come_and_go() -> None:
    """Incremental: a bound pod deleted frees its domain at the next cycle; a new one blocks it."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1)
    blocker = _add(c, "db", {"app": "db"}, ours=False, node=node, phase="Running")
    key = _add(c, "p", {}, _affinity(anti=[_term(HOST, _expr("app", "In", "db"))]))
    assert not step(c, CFG, 0.0).bindings
    c.remove_pod(blocker)
    assert step(c, CFG, 100.0).bindings == [(key, node)]


def test_match_label_keys_are_merged_from_the_pods_own_labels() -> None:
    """KEP-3633: matchLabelKeys [rev] makes the term select only pods of the same rev."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1)
    _add(c, "old", {"app": "web", "rev": "1"}, ours=False, node=node, phase="Running")
    term = _term(HOST, _expr("app", "In", "web"), matchLabelKeys=["rev"])
    key = _add(c, "new", {"app": "web", "rev": "2"}, _affinity(anti=[term]))
    assert step(c, CFG, 0.0).bindings == [(key, node)]
    mismatch = _term(HOST, _expr("app", "In", "web"), mismatchLabelKeys=["rev"])
    other = _add(c, "other", {"app": "x", "rev": "2"}, _affinity(aff=[mismatch]))
    assert step(c, CFG, 1.0).bindings == [(other, node)]  # the rev-1 pod is "app web, rev not 2"


def test_empty_namespace_selector_means_every_namespace() -> None:
    everywhere = pod_record(
        _obj("p", {}, _affinity(anti=[_term(HOST, IN_SCAN, namespaceSelector={})])), gang=None, ours=True
    )
    (term,) = everywhere.sclass.anti_affinity
    assert term.selector.namespaces is None and not everywhere.unready


def test_namespace_selector_reads_the_namespaces_labels() -> None:
    """TestRequiredAffinitySingleNode's namespaceSelector cases: a term selects pods of the namespaces whose labels
    match (and of `namespaces`); none of the pod's own namespace by default once a selector is given."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1)
    c.set_namespace("team-a", {"team": "a"})
    c.set_namespace("team-b", {"team": "b"})
    _add(c, "scan", SCAN, ours=False, node=node, phase="Running", namespace="team-b")
    labelled = _term(HOST, IN_SCAN, namespaceSelector={"matchLabels": {"team": "a"}})
    key = _add(c, "p", {}, _affinity(anti=[labelled]))
    assert step(c, CFG, 0.0).bindings == [(key, node)]  # team-b's pod is not selected
    c.set_namespace("team-b", {"team": "a"})  # relabelled: now it is
    other = _add(c, "q", {}, _affinity(anti=[labelled]))
    plan = step(c, CFG, 1.0)
    assert not plan.bindings and any("InterPodAffinity: pod anti-affinity" in x.message for x in plan.conditions)
    del other


def test_missing_topology_key_names_the_field() -> None:
    with pytest.raises(InvalidField) as caught:
        pod_record(_obj("p", {}, _affinity(anti=[{"labelSelector": {}}])), gang=None, ours=True)
    assert caught.value.field.endswith("requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey")


def test_an_anti_affine_gang_never_evicts_in_vain() -> None:
    """The victim search frees resources, not topology domains: with `app: web` held by a higher-priority pod on
    the only node, evicting the lower-priority pod that holds the CPU would not make room. Nobody is evicted."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1, cpu="2")
    _add(c, "keeper", {"app": "web"}, ours=False, node=node, phase="Running", priority=1000)
    _add(c, "low", {}, ours=False, node=node, phase="Running", priority=-10)
    add_gang(c, "web", 0, min_member=1)
    _add(c, "web-0", {"app": "web"}, ANTI_HOST, gang="default/web", rank=0, priority=100)
    for now in (0.0, 1.0, 10.0):
        plan = step(c, CFG, now)
        assert not plan.evictions and not plan.bindings


def test_a_class_first_seen_after_members_were_placed_sees_them_in_the_whole_domain() -> None:
    """A class whose counters are registered mid-cycle (its view made after the gang placed members) counts those
    members over their whole zone, not only on their nodes."""
    from gangsched.core.fit.capacity import Workspace

    c = SchedulerState()
    nodes = _zones(c, 2, zones=2)
    web = pod_record(_obj("w", {"app": "web"}, ANTI_HOST), c, gang=None, ours=True)  # registers the label key
    c.upsert_pod(web)
    web_cls = c.store.pods[web.key].sclass
    ws = Workspace(c.store, spread=False)
    ws.view(web_cls)
    ws.place("z0-n0", web_cls.requests, 1, cls=web_cls)
    late = pod_record(
        _obj("late", {}, _affinity(anti=[_term("zone", _expr("app", "In", "web", "db"))])), c, gang=None, ours=True
    )
    c.upsert_pod(late)  # its selector is new: a counter registered after the placement
    view = ws.view(c.store.pods[late.key].sclass)
    assert {n: view.count_of(n) > 0 for n in nodes} == {"z0-n0": False, "z0-n1": False, "z1-n0": True, "z1-n1": True}


@pytest.mark.parametrize(
    ("term", "field"),
    [
        ({"topologyKey": "zone", "matchLabelKeys": "rev"}, "[0].matchLabelKeys"),
        ({"topologyKey": "zone", "namespaces": [1]}, "[0].namespaces"),
        ({"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}, "operator"),
        ({"topologyKey": "zone", "namespaceSelector": "all"}, "[0].namespaceSelector"),
        ({"topologyKey": 7}, "[0].topologyKey"),
    ],
)
def test_bad_terms_name_the_field(term: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidField) as caught:
        pod_record(_obj("p", {}, _affinity(aff=[term])), gang=None, ours=True)
    assert caught.value.field.startswith("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    assert caught.value.field.endswith(field), caught.value.field


def test_topology_placement_never_breaks_zone_anti_affinity() -> None:
    """The topology path plans from per-node counts (1 per node here); two members in one zone would break the
    zone anti-affinity: the plan is refused and the gang waits naming InterPodAffinity, nothing is bound."""
    from gangsched.core.topology import Domain, TopologyTree
    from gangsched.core.values.gangspec import GangSpec, NetworkTopology, TopologyMode

    c = SchedulerState()
    _zones(c, 2, zones=1)  # z0-n0, z0-n1: one zone
    tree = TopologyTree.from_domains([Domain(1, "tor", parents=(), children=("z0-n0", "z0-n1"))])
    c.set_topology(tree)
    c.upsert_gang(GangSpec("default", "g", 2, network_topology=NetworkTopology(TopologyMode.HARD, 1)))
    spec = _affinity(anti=[_term("zone", _expr("app", "In", "g"))])
    for i in range(2):
        _add(c, f"g-{i}", {"app": "g"}, spec, gang="default/g", rank=i)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    assert "InterPodAffinity" in plan.gang_status["default/g"].message


def test_an_unchanged_pod_stays_equal_once_classes_carry_labels() -> None:
    """The store keeps our pods with projected classes; the same API object read again is not a change (a change
    forgets a victim's refused eviction: core/memory/victim_book.py victim_changed)."""
    c = SchedulerState()
    (node,) = add_nodes(c, 1)
    _add(c, "guard", {"app": "x"}, ANTI_HOST, ours=False, node=node, phase="Running")  # registers label keys
    obj = _obj("v", {"app": "web"}, None, node=node, phase="Running")
    c.upsert_pod(pod_record(obj, c, gang=None, ours=True))
    c.victims.add_victim("default/v", "default/preemptor")
    c.victims.refuse("default/v", 0)
    c.upsert_pod(pod_record(obj, c, gang=None, ours=True))
    assert c.victims.is_refused("default/v")
