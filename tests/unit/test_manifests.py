"""manifests/: every YAML parses; RBAC is least privilege yet sufficient; the Deployment runs the CLI contract;
the topology example is well formed; the examples are consistent with the demo cluster and our parsers."""

from __future__ import annotations

import json
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.core.values.resources import canonical
from gangsched.models.gang import parse_pod_gang
from gangsched.models.podgroup import podgroup_spec_from_api

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
FILES = sorted(MANIFESTS.rglob("*.yaml"))
NODES, GPUS_PER_NODE = 8, 8  # the demo cluster: 8 nodes of cpu=32, memory=256Gi, nvidia.com/gpu=8
HANDRUN_NODES = 4  # the README's hand-run: `gangsched sim serve --nodes 4`, nodes as the demo's
FITTING = ("gang-fits.yaml", "koordinator-annotations.yaml", "gang-group.yaml", "topology-aware.yaml")


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def all_docs() -> list[dict[str, Any]]:
    return [d for path in FILES for d in docs(path)]


def test_expected_files_exist() -> None:
    names = {p.relative_to(MANIFESTS).as_posix() for p in FILES}
    assert {"namespace.yaml", "rbac.yaml", "deployment.yaml", "topology-configmap.yaml"} <= names
    assert {f"examples/{n}" for n in (*FITTING, "gang-too-big.yaml")} <= names


@pytest.mark.parametrize("path", [pytest.param(p, id=p.relative_to(MANIFESTS).as_posix()) for p in FILES])
def test_every_yaml_parses_into_named_objects(path: Path) -> None:
    objects = docs(path)
    assert objects
    for obj in objects:
        assert obj.get("apiVersion") and obj.get("kind"), obj
        assert obj["metadata"].get("name"), obj


def _rules(kind: str) -> list[dict[str, Any]]:
    (role,) = [d for d in docs(MANIFESTS / "rbac.yaml") if d["kind"] == kind]
    return list(role["rules"])


def _grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out[(group, resource)].update(rule["verbs"])
    return out


# what the operator uses (tests/integration/test_rbac_grants.py checks use against grant with RBAC enforced)
NEEDED_CLUSTER_WIDE = {
    ("", "pods"): {"get", "list", "watch", "delete"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},
    ("", "pods/eviction"): {"create"},
    ("", "nodes"): {"list", "watch"},
    ("", "namespaces"): {"list", "watch"},
    ("", "events"): {"create", "patch"},
    ("scheduling.x-k8s.io", "podgroups"): {"list", "watch", "create", "patch"},
    ("scheduling.x-k8s.io", "podgroups/status"): {"patch"},
    ("policy", "poddisruptionbudgets"): {"list", "watch"},
}
NEEDED_IN_OWN_NAMESPACE = {
    ("", "configmaps"): {"get", "list", "watch", "create", "patch"},
    ("coordination.k8s.io", "leases"): {"get", "create", "update"},
}


@pytest.mark.parametrize(
    ("kind", "needed"),
    [
        pytest.param("ClusterRole", NEEDED_CLUSTER_WIDE, id="cluster"),
        pytest.param("Role", NEEDED_IN_OWN_NAMESPACE, id="namespace"),
    ],
)
def test_rbac_grants_what_the_operator_needs(kind: str, needed: dict[tuple[str, str], set[str]]) -> None:
    grants = _grants(_rules(kind))
    for target, verbs in needed.items():
        assert verbs <= grants.get(target, set()), (target, verbs - grants.get(target, set()))


@pytest.mark.parametrize("kind", ["ClusterRole", "Role"])
def test_rbac_grants_no_wildcards_and_no_secrets(kind: str) -> None:
    for rule in _rules(kind):
        for key in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[key], rule
    grants = _grants(_rules(kind))
    assert not any(resource in ("secrets", "serviceaccounts/token", "pods/exec") for _, resource in grants)
    assert not any(verbs & {"escalate", "bind", "impersonate", "deletecollection"} for verbs in grants.values())


def test_cluster_role_writes_to_pods_are_only_what_scheduling_needs() -> None:
    grants = _grants(_rules("ClusterRole"))
    # never create, update or patch pods (the timeout annotation goes through pods/status, whose strategy keeps
    # the spec: a leaked token cannot change a pod's image); delete only for preemption.pdb: prefer (a PDB-protected
    # victim, as kube-scheduler's own system:kube-scheduler role may: pkg/scheduler/framework/preemption/preemption.go)
    assert grants[("", "pods")] == {"get", "list", "watch", "delete"}
    assert ("coordination.k8s.io", "leases") not in grants  # leases only in the operator's namespace
    assert ("", "configmaps") not in grants  # the topology ConfigMap is watched by name, in the operator's namespace


def test_bindings_tie_roles_to_the_service_account() -> None:
    objects = {(d["kind"], d["metadata"]["name"]): d for d in docs(MANIFESTS / "rbac.yaml")}
    sa = objects[("ServiceAccount", "gangsched")]
    for binding_kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = objects[(binding_kind, "gangsched")]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": "gangsched"}
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "gangsched", "namespace": sa["metadata"]["namespace"]}
        ]
    assert objects[("Role", "gangsched")]["metadata"]["namespace"] == "gangsched-system"


def test_deployment_runs_the_cli_contract() -> None:
    (dep,) = [d for d in docs(MANIFESTS / "deployment.yaml") if d["kind"] == "Deployment"]
    assert (dep["kind"], dep["metadata"]["namespace"]) == ("Deployment", "gangsched-system")
    pod = dep["spec"]["template"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["serviceAccountName"] == "gangsched"
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "gangsched:0.1.0"  # built from the repository's Dockerfile
    assert container["args"] == ["run", "--namespace", "gangsched-system"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "probes": 8081}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] in ports
    # liveness sees a stalled loop, readiness synced caches (a follower too): two endpoints (handlers/probes.py)
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # startup: the caches alone (/readyz also fails for the API's problems, which a restart does not cure)
    assert container["startupProbe"]["httpGet"]["path"] == "/readyz/synced"
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_deployment_grace_period_covers_a_stop_during_an_api_stall() -> None:
    """The kubelet SIGKILLs a container terminationGracePeriodSeconds after SIGTERM (30 s when unset;
    pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer). The worst case of a stop (the comment in
    deployment.yaml): the bounded Lease release, Kopf's 5 s for tasks still running after its cleanup and its 1 s
    forced-cancel round (kopf/_core/reactor/running.py run_tasks), 2 s to close connections and exit."""
    from gangsched.models.config import LeaderElectionConfig

    (dep,) = [d for d in docs(MANIFESTS / "deployment.yaml") if d["kind"] == "Deployment"]
    grace = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    worst = LeaderElectionConfig.model_validate({}).release_timeout_seconds + 5 + 1 + 2
    assert worst <= grace < 30, (worst, grace)


def test_network_policy_admits_only_the_scraper_to_the_metrics_port() -> None:
    """Ingress only (egress stays open: the API server's address is the cluster's); it selects the Deployment's
    pods, admits one peer (a namespace AND pod selector, in one entry) on the container port named `metrics`, and
    opens nothing else: kubelet probes come from the pod's node, which NetworkPolicy always admits
    (kubernetes.io/docs/concepts/services-networking/network-policies/)."""
    (policy,) = docs(MANIFESTS / "networkpolicy.yaml")
    (dep,) = [d for d in docs(MANIFESTS / "deployment.yaml") if d["kind"] == "Deployment"]
    assert (policy["kind"], policy["metadata"]["namespace"]) == ("NetworkPolicy", dep["metadata"]["namespace"])
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress"] and "egress" not in spec
    assert spec["podSelector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    (rule,) = spec["ingress"]
    (peer,) = rule["from"]
    assert peer.keys() == {"namespaceSelector", "podSelector"} and all(peer[k]["matchLabels"] for k in peer)
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert rule["ports"] == [{"port": "metrics", "protocol": "TCP"}] and "metrics" in named
    # the probes port is not opened to the cluster; the Deployment keeps listening on every interface (the kubelet
    # probes the pod's IP): no bind-address option in its args
    assert not any(a.startswith(("--metrics-bind-address", "--probes-bind-address")) for a in container["args"])


def test_namespace_manifest() -> None:
    (ns,) = docs(MANIFESTS / "namespace.yaml")
    assert (ns["kind"], ns["metadata"]["name"]) == ("Namespace", "gangsched-system")


def test_topology_configmap_is_a_consistent_tree() -> None:
    (cm,) = docs(MANIFESTS / "topology-configmap.yaml")
    assert (cm["metadata"]["name"], cm["metadata"]["namespace"]) == ("gangsched-topology", "gangsched-system")
    entries = json.loads(cm["data"]["topology.json"])
    by_name = {e["name"]: e for e in entries}
    nodes = [child for e in entries if e["layer"] == 1 for child in e["children"]]
    assert sorted(nodes) == [f"node-{i}" for i in range(NODES)]
    for entry in entries:
        for parent in entry.get("parents", []):
            assert by_name[parent]["layer"] == entry["layer"] + 1
            assert entry["name"] in by_name[parent]["children"]
        if entry["layer"] > 1:
            assert all(by_name[c]["layer"] == entry["layer"] - 1 for c in entry["children"])


def example(name: str) -> list[dict[str, Any]]:
    return docs(MANIFESTS / "examples" / name)


def pods_of(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Pod"]


def gpus(pod: dict[str, Any]) -> int:
    total = 0
    for c in pod["spec"]["containers"]:
        total += canonical("nvidia.com/gpu", c["resources"]["requests"].get("nvidia.com/gpu", 0), field="gpu")
    return total


@pytest.mark.parametrize("name", [*FITTING, "gang-too-big.yaml"])
def test_example_pods_use_gangsched_and_a_small_container(name: str) -> None:
    pods = pods_of(example(name))
    assert pods
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "gangsched"
        assert [c["image"] for c in pod["spec"]["containers"]] == ["registry.k8s.io/pause:3.9"]
        limits = pod["spec"]["containers"][0]["resources"].get("limits", {})
        assert limits.get("nvidia.com/gpu", 0) == pod["spec"]["containers"][0]["resources"]["requests"].get(
            "nvidia.com/gpu", 0
        )


@pytest.mark.parametrize("name", [*FITTING, "gang-too-big.yaml"])
def test_example_gangs_parse_and_every_pod_reaches_a_quorum(name: str) -> None:
    objects = example(name)
    podgroups = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": podgroup_spec_from_api(o)
        for o in objects
        if o["kind"] == "PodGroup"
    }
    members: dict[str, int] = defaultdict(int)
    specs = {}
    for pod in pods_of(objects):
        gang = parse_pod_gang(pod)
        assert gang is not None, pod["metadata"]["name"]
        spec = gang.resolve(podgroups.get(gang.key))
        assert spec is not None, f"{gang.key}: no PodGroup and no min-available"
        members[gang.key] += 1
        specs[gang.key] = spec
    for key, count in members.items():
        assert count >= specs[key].min_member, key
        for other in specs[key].group:
            assert other in members, f"{key} is grouped with {other}, which has no pods in {name}"


@pytest.mark.parametrize("nodes", [HANDRUN_NODES, NODES], ids=["hand-run", "demo"])
def test_fitting_examples_fit_the_readmes_clusters_together_in_any_order(nodes: int) -> None:
    pods = [p for n in FITTING for p in pods_of(example(n))]
    total = sum(gpus(p) for p in pods)
    largest = max(gpus(p) for p in pods)
    # while a pod waits, fewer than `total` GPUs are in use; a node with `largest` free GPUs must then exist
    assert total <= nodes * (GPUS_PER_NODE - largest + 1)
    assert (
        sum(
            Fraction(canonical("cpu", p["spec"]["containers"][0]["resources"]["requests"]["cpu"], field="cpu"), 1000)
            for p in pods
        )
        <= nodes * 32 // 2
    )


def test_binpacked_fitting_examples_leave_train_huge_an_empty_node_on_the_hand_run() -> None:
    """train-huge's NonStrict waiting time starts at its first reservation: on the README's 4 nodes, with the other
    examples packed (pod sizes dividing a node's GPUs), one node must stay empty for one of its 8-GPU pods."""
    pods = [p for n in FITTING for p in pods_of(example(n))]
    assert all(GPUS_PER_NODE % gpus(p) == 0 for p in pods if gpus(p))
    assert sum(gpus(p) for p in pods) <= (HANDRUN_NODES - 1) * GPUS_PER_NODE


def test_too_big_example_never_fits_yet_each_pod_does() -> None:
    objects = example("gang-too-big.yaml")
    (pg,) = [o for o in objects if o["kind"] == "PodGroup"]
    spec = podgroup_spec_from_api(pg)
    pods = pods_of(objects)
    assert len(pods) >= spec.min_member and spec.wait_seconds == 20.0
    assert all(gpus(p) <= GPUS_PER_NODE for p in pods)
    quorum_gpus = sorted(gpus(p) for p in pods)[: spec.min_member]
    assert sum(quorum_gpus) > NODES * GPUS_PER_NODE


def test_annotation_example_declares_no_podgroup_and_group_example_spans_two_namespaces() -> None:
    assert not [o for o in example("koordinator-annotations.yaml") if o["kind"] == "PodGroup"]
    objects = example("gang-group.yaml")
    created = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    used = {o["metadata"]["namespace"] for o in objects if o["kind"] in ("Pod", "PodGroup")}
    assert len(used) == 2 and used <= created


def test_topology_example_asks_for_dp_groups() -> None:
    (pg,) = [o for o in example("topology-aware.yaml") if o["kind"] == "PodGroup"]
    spec = podgroup_spec_from_api(pg)
    assert spec.network_topology is not None and spec.network_topology.group_size == 2
    assert spec.min_member == len(pods_of(example("topology-aware.yaml"))) == 4
