"""Gang trees read from the API (issue 25 item 3): CompositePodGroups with the native PodGroups naming them, and Grove
PodGangs, built into one GangTree per gang; invalid hierarchies reported.

Oracles:
- kube-scheduler 1.37 pkg/scheduler/backend/queue/workload_forest.go (at 4e67a753) validateHierarchy and
  test/integration/scheduler/podgroup/hierarchy_validation_test.go (at d6947b57) TestHierarchyValidation: a cycle
  ("cycle detected in hierarchy"), a missing parent ("cpg-root not found"), a PodGroup at level 5 ("hierarchy depth 5
  exceeds maximum allowed depth 4", WorkloadMaxTreeDepth = 4 in staging/src/k8s.io/api/scheduling/v1alpha3/types.go).
- The objects as the Kubernetes docs build them (kubernetes.io/docs/concepts/workloads/compositepodgroup-api/: a root
  CompositePodGroup with gang.minGroupCount, children naming it in parentCompositePodGroupName, each with workloadRef).
- Grove's PodGang (ai-dynamo/grove scheduler/api/core/v1alpha1/podgang.go at fcc3b3bb) as KAI reads it
  (NVIDIA/KAI-Scheduler pkg/podgrouper/podgrouper/plugins/grove/grove_grouper.go): pod groups with podReferences
  and minReplicas, topologyConstraintGroupConfigs as parents.
"""

from __future__ import annotations

from typing import Any

from gangsched.core import DomainKey, GangTree
from gangsched.models.grove import parse_podgang
from gangsched.state.cache import ClusterCache
from tests.builders import node_obj, pod_obj


def cpg(name: str, minimum: int, parent: str | None = None, workload: str = "job", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workloadRef": {"workloadName": workload, "templateName": name},
        "schedulingPolicy": {"gang": {"minGroupCount": minimum}},
        **spec,
    }
    if parent:
        body["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}"},
        "spec": body,
    }


def pg(name: str, count: int, parent: str | None, workload: str = "job", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workloadRef": {"workloadName": workload, "templateName": name},
        "schedulingPolicy": {"gang": {"minCount": count}},
        **spec,
    }
    if parent:
        body["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "generation": 1},
        "spec": body,
    }


def member(name: str, group: str) -> dict[str, Any]:
    obj = pod_obj(name, namespace="ns")
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def _cache() -> ClusterCache:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0"))
    return cache


def test_three_level_tree_is_one_gang_tree() -> None:
    cache = _cache()
    cache.on_composite_podgroup("ADDED", cpg("root", 2))
    cache.on_composite_podgroup("ADDED", cpg("mid", 2, "root", schedulingConstraints={"topology": [{"key": "rack"}]}))
    for name, parent in (("a", "mid"), ("b", "mid"), ("c", "root")):
        cache.on_native_podgroup("ADDED", pg(name, 2, parent))
        cache.on_pod_event("ADDED", member(f"{name}-0", name))
    spec = cache.cluster.gangs["ns/a"].spec
    assert spec is not None and isinstance(spec.tree, GangTree)
    tree = spec.tree
    assert tree.root == "ns/root" and tree.depth() == 3
    assert [n.key for n in tree.ancestors("ns/a")] == ["ns/mid", "ns/root"]
    mid = tree.node("ns/mid")
    assert mid is not None and mid.minimum == 2 and mid.domain == DomainKey(label="rack")
    assert mid.children == ("ns/a", "ns/b")
    assert cache.cluster.gangs["ns/c"].spec is not None and cache.cluster.gangs["ns/c"].spec.tree == tree


def _problems(cache: ClusterCache, reason: str) -> list[str]:
    return [p.message for p in cache.problems if p.reason == reason]


def test_a_cycle_is_reported_and_the_gang_is_not_scheduled() -> None:
    cache = _cache()
    cache.on_composite_podgroup("ADDED", cpg("cpg1", 1, "cpg2"))
    cache.on_composite_podgroup("ADDED", cpg("cpg2", 1, "cpg1"))
    cache.on_native_podgroup("ADDED", pg("pg1", 1, "cpg1"))
    cache.on_pod_event("ADDED", member("p", "pg1"))
    assert cache.cluster.gangs["ns/pg1"].spec is None
    message = cache.invalid_message("ns/pg1")
    assert message is not None and "cycle detected in hierarchy" in message
    assert any("cycle detected" in m for m in _problems(cache, "InvalidGangTree"))


def test_a_missing_parent_holds_the_gang_until_it_is_created() -> None:
    cache = _cache()
    cache.on_composite_podgroup("ADDED", cpg("cpg1", 1, "cpg-root"))
    cache.on_native_podgroup("ADDED", pg("pg1", 1, "cpg1"))
    cache.on_pod_event("ADDED", member("p", "pg1"))
    message = cache.invalid_message("ns/pg1")
    assert message is not None and "ns/cpg-root" in message and "not found" in message
    cache.on_composite_podgroup("ADDED", cpg("cpg-root", 1))
    assert cache.invalid_message("ns/pg1") is None
    spec = cache.cluster.gangs["ns/pg1"].spec
    assert spec is not None and spec.tree is not None and spec.tree.root == "ns/cpg-root"


def test_a_pod_group_at_level_five_is_too_deep() -> None:
    cache = _cache()
    cache.on_composite_podgroup("ADDED", cpg("cpg-root", 1))
    for name, parent in (("cpg1", "cpg-root"), ("cpg2", "cpg1"), ("cpg3", "cpg2")):
        cache.on_composite_podgroup("ADDED", cpg(name, 1, parent))
    cache.on_native_podgroup("ADDED", pg("pg1", 1, "cpg3"))
    cache.on_pod_event("ADDED", member("p", "pg1"))
    message = cache.invalid_message("ns/pg1")
    assert message is not None and "hierarchy depth 5 exceeds maximum allowed depth 4" in message


def test_a_tree_spanning_two_workloads_is_invalid() -> None:
    cache = _cache()
    cache.on_composite_podgroup("ADDED", cpg("root", 1, workload="w1"))
    cache.on_native_podgroup("ADDED", pg("pg1", 1, "root", workload="w2"))
    cache.on_pod_event("ADDED", member("p", "pg1"))
    message = cache.invalid_message("ns/pg1")
    assert message is not None and "spec.workloadRef.workloadName" in message and "'w2'" in message


def test_parent_is_no_longer_reported_unsupported() -> None:
    cache = _cache()
    cache.on_composite_podgroup("ADDED", cpg("root", 1))
    cache.on_native_podgroup("ADDED", pg("pg1", 1, "root"))
    assert not _problems(cache, "UnsupportedField")
    cache.on_composite_podgroup("MODIFIED", cpg("root", 1, priority=10))
    assert any(m.startswith("spec.priority:") for m in _problems(cache, "UnsupportedField"))


def podgang(**extra: Any) -> dict[str, Any]:
    refs = [{"namespace": "ns", "name": f"decode-{i}"} for i in range(4)]
    router = {"namespace": "ns", "name": "router-0"}
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "serve-0", "namespace": "ns", "uid": "u-pg"},
        "spec": {
            "podgroups": [
                {"name": "serve-0-router", "podReferences": [router], "minReplicas": 1},
                {"name": "serve-0-decode", "podReferences": refs, "minReplicas": 4},
            ],
            **extra,
        },
    }


def test_podgang_is_a_tree_whose_root_needs_every_pod_group() -> None:
    gang = parse_podgang(podgang(topologyConstraint={"packConstraint": {"required": "rack", "preferred": "host"}}))
    root = gang.tree.node("ns/serve-0")
    assert root is not None and root.minimum == 2 and root.domain == DomainKey(label="rack")
    assert gang.members["ns/decode-3"] == "ns/serve-0-decode"
    assert gang.specs["ns/serve-0-decode"].min_member == 4
    assert gang.unsupported == ("spec.topologyConstraint.packConstraint.preferred",)


def test_podgang_group_configs_are_composite_nodes() -> None:
    configs = [{"name": "prefill", "podGroupNames": ["serve-0-decode"], "topologyConstraint": {}}]
    gang = parse_podgang(podgang(topologyConstraintGroupConfigs=configs))
    node = gang.tree.node("ns/serve-0/prefill")
    assert node is not None and node.children == ("ns/serve-0-decode",) and node.minimum == 1
    assert [n.key for n in gang.tree.ancestors("ns/serve-0-decode")] == ["ns/serve-0/prefill", "ns/serve-0"]


def test_referenced_pods_join_their_grove_gang_and_native_ones_stay_native() -> None:
    cache = _cache()
    for i in range(4):
        cache.on_pod_event("ADDED", pod_obj(f"decode-{i}", namespace="ns"))
    cache.on_pod_event("ADDED", member("router-0", "router-native"))  # also declared natively: that one wins
    cache.on_podgang("ADDED", podgang())
    assert cache.cluster.pods["ns/decode-0"].gang == "ns/serve-0-decode"
    assert cache.cluster.pods["ns/router-0"].gang == "ns/router-native"
    spec = cache.cluster.gangs["ns/serve-0-decode"].spec
    assert spec is not None and spec.min_member == 4 and spec.tree is not None and spec.tree.kind == "PodGang"
    assert "ns/serve-0-decode" not in cache.podgroups_to_create
    cache.on_podgang("DELETED", podgang())
    assert cache.cluster.pods["ns/decode-0"].gang is None


def test_a_basic_pod_group_is_no_child_of_the_tree() -> None:
    """A `basic` PodGroup's pods are no gang (scheduled one by one): it is left out of its parent's children, so a
    root counting its children counts the gangs only."""
    cache = _cache()
    cache.on_composite_podgroup("ADDED", cpg("root", 1))
    cache.on_native_podgroup("ADDED", pg("gang", 1, "root"))
    web = pg("web", 1, "root")
    web["spec"]["schedulingPolicy"] = {"basic": {}}
    cache.on_native_podgroup("ADDED", web)
    cache.on_pod_event("ADDED", member("g-0", "gang"))
    spec = cache.cluster.gangs["ns/gang"].spec
    assert spec is not None and spec.tree is not None
    root = spec.tree.node("ns/root")
    assert root is not None and root.children == ("ns/gang",)


def test_an_event_rebuilds_only_the_trees_it_touches() -> None:
    """Two trees in one namespace: a PodGroup joining one builds that tree again (its gangs see the new child), not
    the other (the cost of an event stays with its tree)."""
    cache = _cache()
    for name in ("r1", "r2"):
        cache.on_composite_podgroup("ADDED", cpg(name, 1))
        cache.on_native_podgroup("ADDED", pg(f"{name}-a", 1, name))
        cache.on_pod_event("ADDED", member(f"{name}-a-0", f"{name}-a"))
    built: list[str] = []
    tree_for = cache.composites.tree_for

    def counting(leaf: str, *args: Any) -> Any:
        built.append(leaf)
        return tree_for(leaf, *args)

    setattr(cache.composites, "tree_for", counting)  # noqa: B010 (a spy on the instance)
    cache.on_native_podgroup("ADDED", pg("r1-b", 1, "r1"))
    assert "ns/r1-a" in built and "ns/r2-a" not in built
    spec = cache.cluster.gangs["ns/r1-a"].spec
    assert spec is not None and spec.tree is not None
    root = spec.tree.node("ns/r1")
    assert root is not None and root.children == ("ns/r1-a", "ns/r1-b")
