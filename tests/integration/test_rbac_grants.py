"""What the operator uses of the API, per feature profile, against what manifests/rbac.yaml grants it.

The emulator enforces RBAC as plugin/pkg/auth/authorizer/rbac/rbac.go does and records, per user, every
(verb, group, resource, subresource) it authorized (request attributes as
staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go derives them). The operator runs as the
ServiceAccount of manifests/rbac.yaml (harness.replica), through profiles that together exercise every
feature: plain gangs (PodGroups, annotation-only gangs, a NonStrict timeout), group preemption (evictions,
nominations, a PodDisruptionBudget, a protected victim deleted under `preemption.pdb: prefer`), topology from
node labels (the topology ConfigMap written), leader election (the Lease), Koordinator's scheduling.sigs.k8s.io
PodGroups (crds/compat/: watched, their status written), Volcano's PodGroups (read only, when installed) and DRA
(ResourceClaims of a gang allocated and reserved before its bindings).
A grant nobody used fails the test (least privilege), and so does a use that was not granted (the operator would
have got 403 and the scenario would not have completed). Rules limited by resourceNames are checked to name exactly
the Lease and the topology ConfigMap the operator uses.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, koordinator_annotations, priority_class
from tests.integration.harness import (
    OPERATOR_NAMESPACE,
    SERVICE_ACCOUNT,
    bound,
    create,
    eventually,
    get_podgroup,
    pod,
    podgroup,
    pods,
    replica,
)
from tests.integration.volcano import install_volcano_crd, lws_volcano_podgroup

ROOT = Path(__file__).resolve().parents[2]
USER = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{SERVICE_ACCOUNT}"
NODE = NODE_8_GPUS
TIERS = ["topology.gangsched.io/tier-1", "topology.gangsched.io/tier-2"]
TREE: list[dict[str, Any]] = [
    {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["n0", "n1"]},
    {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["n2", "n3"]},
]
Use = tuple[str, str, str, str]  # (verb, API group, resource, subresource)
# Grants only an error path uses, which no profile provokes; each names the code that needs it.
ERROR_PATHS: dict[Use, str] = {
    ("get", "", "pods", ""): "k8s/binder.py _reconcile_conflict: after a 409 on binding, reads who bound the pod",
    (
        "patch",
        "",
        "events",
        "",
    ): "k8s/coalescing.py EventRecorder: the count of an event repeated with the same message",
}


def granted() -> tuple[set[Use], dict[tuple[str, str], set[str]]]:
    """Every (verb, group, resource, subresource) manifests/rbac.yaml grants the ServiceAccount, and the
    resourceNames of the rules limited to names, per (group, resource)."""
    grants: set[Use] = set()
    names: dict[tuple[str, str], set[str]] = {}
    for doc in yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text()):
        if not isinstance(doc, dict) or doc.get("kind") not in ("Role", "ClusterRole"):
            continue
        for rule in doc.get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    res, _, sub = resource.partition("/")
                    for verb in rule.get("verbs") or []:
                        grants.add((verb, group, res, sub))
                    if rule.get("resourceNames"):
                        names.setdefault((group, resource), set()).update(rule["resourceNames"])
    return grants, names


def used(cluster: Cluster) -> set[Use]:
    return set(cluster.server.authorizer.usage.get(USER, set()))


async def _all_bound(k: Any, names: list[str]) -> bool:
    placed = bound(await pods(k))
    return all(n in placed for n in names)


async def _phase_is(k: Any, name: str, phase: str) -> bool:
    return bool(((await get_podgroup(k, name)) or {}).get("status", {}).get("phase") == phase)


async def plain_gangs(cluster: Cluster) -> None:
    k = cluster.client
    async with replica(cluster.kubeconfig):
        await create(
            k,
            podgroup("slow", min_member=6, mode="NonStrict", scheduleTimeoutSeconds=1),
            *(pod(f"slow-{i}", group="slow", gpu=8) for i in range(6)),
        )

        async def annotated() -> bool:
            ps = await pods(k)
            return all(
                ps[f"slow-{i}"]["metadata"].get("annotations", {}).get("gang.scheduling.koordinator.sh/timeout")
                == "true"
                for i in range(6)
            )

        await eventually(annotated, what="timeout annotation on every member of the NonStrict gang")
        await create(k, podgroup("train", min_member=2), *(pod(f"train-{i}", group="train", gpu=8) for i in range(2)))
        await eventually(lambda: _all_bound(k, ["train-0", "train-1"]), what="train bound")
        await eventually(lambda: _phase_is(k, "train", "Running"), what="train Running")
        koord = koordinator_annotations("koord", 2)
        await create(k, pod("koord-0", annotations=koord))
        await eventually(lambda: get_podgroup(k, "koord"), what="PodGroup created for the annotation-only gang")
        await create(k, pod("koord-1", annotations=koord))

        async def owned_by_both() -> bool:
            pg = await get_podgroup(k, "koord")
            return len((pg or {}).get("metadata", {}).get("ownerReferences", [])) == 2

        await eventually(owned_by_both, what="both members own the PodGroup")


async def preemption(cluster: Cluster) -> None:
    k = cluster.client
    await create(
        k,
        priority_class("low", 0),
        priority_class("high", 1000),
    )

    def gang(name: str, n: int, pc: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
        return [
            podgroup(name, min_member=n),
            *(pod(f"{name}-{i}", group=name, gpu=8, priority_class=pc, labels=labels) for i in range(n)),
        ]

    async with replica(cluster.kubeconfig, preemption={"pdb": "prefer"}) as op:
        await create(k, *gang("a", 2, "low", {"app": "a"}), *gang("b", 2, "low"))
        await eventually(lambda: _all_bound(k, ["a-0", "a-1", "b-0", "b-1"]), what="a and b bound")
        await create(
            k,
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "a", "namespace": "default"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "a"}}},
            },
        )
        for i in range(2):  # b's pods stay terminating, so the preemptor's members are nominated while they wait
            await k.patch(
                f"/api/v1/namespaces/default/pods/b-{i}", {"metadata": {"finalizers": ["test.gangsched.io/hold"]}}
            )
        await create(k, *gang("high", 2, "high"))

        async def nominated() -> bool:
            ps = await pods(k)
            return all(ps[f"high-{i}"].get("status", {}).get("nominatedNodeName") for i in range(2))

        await eventually(nominated, what="the preemptor's members nominated")
        for i in range(2):
            await k.patch(f"/api/v1/namespaces/default/pods/b-{i}", {"metadata": {"finalizers": None}})
        await eventually(lambda: _all_bound(k, ["high-0", "high-1"]), what="the preemptor bound")
        assert op.preemptions.evicted == 2
        # pdb: prefer: a gang needing all four nodes takes a's protected pods too, deleting them (pods delete)
        await create(
            k,
            priority_class("top", 2000),
        )
        await create(k, *gang("top", 4, "top"))
        await eventually(lambda: _all_bound(k, [f"top-{i}" for i in range(4)]), timeout=30, what="top bound")
        assert op.preemptions.deleted == 2


async def topology_from_node_labels(cluster: Cluster) -> None:
    k = cluster.client
    cm = f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/configmaps/gangsched-topology"
    async with replica(cluster.kubeconfig, topology={"nodeLabelTiers": TIERS}):

        async def written() -> bool:
            try:
                return "n3" in (await k.get(cm))["data"]["topology.json"]
            except Exception:
                return False

        await eventually(written, what="topology ConfigMap written from node labels")
        from gangsched.sim.cluster import create_nodes

        await create_nodes(k, ["n4"], NODE, labels_for_name=lambda _: {TIERS[0]: "unit1", TIERS[1]: "leaf0"})

        async def has_n4() -> bool:
            return "n4" in json.dumps((await k.get(cm))["data"])

        await eventually(has_n4, what="the ConfigMap follows a joining node")


async def leader_election(cluster: Cluster) -> None:
    k = cluster.client
    async with replica(cluster.kubeconfig, identity="one", leader_election=True) as one:
        await eventually(lambda: _leads(one), what="a leader")
        await create(k, podgroup("g", min_member=2), *(pod(f"g-{i}", group="g", gpu=8) for i in range(2)))
        await eventually(lambda: _all_bound(k, ["g-0", "g-1"]), what="gang bound by the leader")


async def koordinator_podgroups(cluster: Cluster) -> None:
    """Koordinator's manual: a scheduling.sigs.k8s.io PodGroup and pods labelled pod-group.scheduling.sigs.k8s.io."""
    k = cluster.client
    sigs = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups"
    async with replica(cluster.kubeconfig):
        body = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "kpg"}}
        await k.create(sigs, {**body, "spec": {"minMember": 2}})
        labels = {"pod-group.scheduling.sigs.k8s.io": "kpg"}
        await create(k, *(pod(f"kpg-{i}", labels=labels, gpu=8) for i in range(2)))

        async def running() -> bool:
            return bool((await k.get(f"{sigs}/kpg")).get("status", {}).get("phase") == "Running")

        await eventually(running, what="the scheduling.sigs.k8s.io PodGroup's status written")


async def volcano_podgroups(cluster: Cluster) -> None:
    """Volcano installed: its PodGroups are watched read only (an LWS group's count, tests/integration/volcano.py)."""
    k = cluster.client
    await install_volcano_crd(k)
    await k.create("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", lws_volcano_podgroup("lws", 2))
    async with replica(cluster.kubeconfig):
        annotations = {"scheduling.k8s.io/group-name": "lws", "leaderworkerset.sigs.k8s.io/size": "3"}
        await create(k, *(pod(f"lws-{i}", annotations=annotations, gpu=8) for i in range(2)))
        await eventually(lambda: _all_bound(k, ["lws-0", "lws-1"]), what="the Volcano PodGroup's count (2 of size 3)")

        async def watching() -> bool:  # (the binds can come from the initial lists, before Kopf's watches start)
            return ("watch", "scheduling.volcano.sh", "podgroups", "") in used(cluster)

        await eventually(watching, what="the Volcano PodGroups watched")


async def native_podgroups(cluster: Cluster) -> None:
    """Kubernetes 1.37's own gang API: a scheduling.k8s.io/v1beta1 PodGroup (gang minCount 2) and pods naming it in
    spec.schedulingGroup, under a CompositePodGroup (v1alpha3, minGroupCount 1); the operator writes their
    PodGroupInitiallyScheduled and CompositePodGroupInitiallyScheduled conditions through podgroups/status and
    compositepodgroups/status (kubernetes pkg/scheduler/schedule_one_podgroup.go updatePodGroupCondition,
    updateCompositePodGroupCondition)."""
    k = cluster.client
    native = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
    composite = "/apis/scheduling.k8s.io/v1alpha3/namespaces/default/compositepodgroups"
    async with replica(cluster.kubeconfig):
        root = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": {"name": "root"}}
        ref = {"workloadName": "job", "templateName": "root"}
        root_spec = {"schedulingPolicy": {"gang": {"minGroupCount": 1}}, "workloadRef": ref}
        await k.create(composite, {**root, "spec": root_spec})
        body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "npg"}}
        spec = {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "parentCompositePodGroupName": "root",
            "workloadRef": {"workloadName": "job", "templateName": "npg"},
        }
        await k.create(native, {**body, "spec": spec})
        members = [pod(f"npg-{i}", gpu=8) for i in range(2)]
        for member in members:
            member["spec"]["schedulingGroup"] = {"podGroupName": "npg"}
        await create(k, *members)

        async def scheduled() -> bool:
            conditions = (await k.get(f"{native}/npg")).get("status", {}).get("conditions", [])
            return any(c.get("type") == "PodGroupInitiallyScheduled" and c.get("status") == "True" for c in conditions)

        await eventually(scheduled, what="the native PodGroup's PodGroupInitiallyScheduled condition written")

        async def composite_scheduled() -> bool:
            conditions = (await k.get(f"{composite}/root")).get("status", {}).get("conditions", [])
            return any(c.get("type") == "CompositePodGroupInitiallyScheduled" for c in conditions)

        await eventually(composite_scheduled, what="the CompositePodGroup's condition written")


async def dra_gang(cluster: Cluster) -> None:
    """DRA (`sim serve --dra`): a gang of two pods each claiming 8 GPUs from a ResourceClaimTemplate; the operator
    reads the claims again and writes status.allocation and reservedFor through resourceclaims/status before the
    bindings (kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go PreBind)."""
    k = cluster.client
    exactly = {"deviceClassName": "gpu.nvidia.com", "count": 8}
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "eight"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}},
    }
    await k.create("/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", template)
    async with replica(cluster.kubeconfig):
        members = [pod(f"dra-{i}", group="dra") for i in range(2)]
        for member in members:
            member["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "eight"}]
        await create(k, podgroup("dra", min_member=2), *members)
        await eventually(lambda: _all_bound(k, ["dra-0", "dra-1"]), what="the DRA gang bound")


async def _leads(op: Any) -> bool:
    return bool(op.health()["leader"])


PROFILES: dict[str, tuple[Callable[[Cluster], Awaitable[None]], dict[str, Any]]] = {
    "plain": (plain_gangs, {"nodes": 4}),
    "preemption": (preemption, {"nodes": 4}),
    "topology": (topology_from_node_labels, {"nodes": 0, "topology": TREE}),
    "leader-election": (leader_election, {"nodes": 2}),
    "koordinator-podgroups": (koordinator_podgroups, {"nodes": 2}),
    "volcano-podgroups": (volcano_podgroups, {"nodes": 2}),
    "native-podgroups": (native_podgroups, {"nodes": 2}),
    "dra": (dra_gang, {"nodes": 2, "dra": True}),
}


async def run_profile(name: str) -> set[Use]:
    scenario, kwargs = PROFILES[name]
    async with running_cluster(node_resources=NODE, **kwargs) as cluster:
        assert cluster.server.auth, "the operator's tests must run with RBAC enforced"
        await scenario(cluster)
        return used(cluster)


async def test_the_operator_uses_exactly_what_rbac_yaml_grants() -> None:
    """Per profile the operator's uses are recorded; the union must equal the grants (no 403 was possible, no
    grant is unused). The grant must not be wider in scope either: resourceNames pin the Lease and ConfigMap."""
    grants, names = granted()
    usage: dict[str, set[Use]] = {}
    for profile in PROFILES:
        usage[profile] = await run_profile(profile)
    everything = set().union(*usage.values())
    ungranted = everything - grants
    assert not ungranted, f"used but not granted (the emulator would have answered 403): {sorted(ungranted)}"
    unused = grants - everything - set(ERROR_PATHS)
    report = "\n".join(f"  {p}: {sorted(u)}" for p, u in usage.items())
    assert not unused, (
        f"granted by manifests/rbac.yaml but used by no profile: {sorted(unused)}\nuse per profile:\n{report}"
    )
    assert set(ERROR_PATHS) <= grants, "an error path's grant is missing"
    assert names.get(("coordination.k8s.io", "leases")) == {"gangsched"}
    assert names.get(("", "configmaps")) == {"gangsched-topology"}
    # leader election and topology are features of their own: their grants are used only by their profiles
    assert not {u for u in usage["plain"] if u[2] == "leases"}
    assert any(u[2] == "leases" for u in usage["leader-election"])
    assert ("create", "", "configmaps", "") in usage["topology"]


@pytest.mark.parametrize("profile", ["plain"])
async def test_a_missing_permission_fails_the_operator_visibly(profile: str) -> None:
    """Removing the ClusterRoleBinding leaves the ServiceAccount with nothing: the operator's requests get the
    real 403 (responsewriters.Forbidden's message) and nothing is bound."""
    async with running_cluster(nodes=1, node_resources=NODE) as cluster:
        k = cluster.client
        await k.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/gangsched")
        from gangsched.k8s.client import ApiError, KubeClient
        from tests.integration.harness import service_account_kubeconfig

        sa = await service_account_kubeconfig(cluster.kubeconfig)
        async with await KubeClient.connect(sa) as client:
            with pytest.raises(ApiError) as err:
                await client.get("/api/v1/pods")
        assert err.value.status == 403
        assert err.value.message == (
            f'pods is forbidden: User "{USER}" cannot list resource "pods" in API group "" at the cluster scope'
        )


async def test_the_operators_token_cannot_change_a_pod_spec() -> None:
    """A leaked operator token must not be able to replace the image of any pod (kube-scheduler's ClusterRole,
    plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go "system:kube-scheduler", grants pods/status
    patch/update and pods/binding create, but no pods patch or update). With manifests/rbac.yaml's ServiceAccount
    token: a patch or update of a kube-system pod is 403 (rbac.go's RBACAuthorizer); a patch of pods/status that
    carries a new image and an annotation is accepted, but pkg/registry/core/pod/strategy.go's
    podStatusStrategy.PrepareForUpdate keeps the old spec and ownerReferences, while the annotation (metadata)
    lands: the timeout annotation's way in."""
    async with running_cluster(nodes=1, node_resources=NODE) as cluster:
        from gangsched.k8s.client import MERGE_PATCH, STRATEGIC_MERGE_PATCH, ApiError, KubeClient
        from tests.integration.harness import service_account_kubeconfig

        victim = pod("coredns", namespace="kube-system", scheduler="default-scheduler")
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns", "namespace": "kube-system"}}
        owner = await cluster.client.create("/api/v1/namespaces/kube-system/configmaps", cm)
        uid = owner["metadata"]["uid"]
        victim["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "coredns", "uid": uid}
        ]
        await create(cluster.client, victim)
        path = "/api/v1/namespaces/kube-system/pods/coredns"
        evil = {"spec": {"containers": [{"name": "main", "image": "evil.example/miner:1"}]}}
        sa = await service_account_kubeconfig(cluster.kubeconfig)
        async with await KubeClient.connect(sa) as client:
            for body, content_type in (
                (evil, STRATEGIC_MERGE_PATCH),
                ({"metadata": {"labels": {"x": "y"}}}, MERGE_PATCH),
            ):
                with pytest.raises(ApiError) as err:
                    await client.patch(path, body, content_type=content_type)
                assert err.value.status == 403, err.value.message
            current = await client.get(path)
            with pytest.raises(ApiError) as err:
                await client.replace(path, {**current, **evil})
            assert err.value.status == 403
            meta: dict[str, Any] = {"annotations": {"gang.scheduling.koordinator.sh/timeout": "true"}}
            meta["ownerReferences"] = None  # not allowed through pods/status: kept
            through_status = {**evil, "metadata": meta}
            answer = await client.patch(f"{path}/status", through_status, content_type=STRATEGIC_MERGE_PATCH)
        stored = await cluster.client.get(path)
        assert answer["spec"] == stored["spec"]
        assert [c["image"] for c in stored["spec"]["containers"]] == ["registry.k8s.io/pause:3.9"]
        assert stored["metadata"]["annotations"]["gang.scheduling.koordinator.sh/timeout"] == "true"
        assert [o["uid"] for o in stored["metadata"]["ownerReferences"]] == [uid]
