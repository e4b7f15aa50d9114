"""A gang in one NVLink clique across nodes, declared the upstream way, with the real kubectl (issue 26: "Topology may
use device attributes (a gang in one clique) as well as node labels").

The declaration: a 1.37 PodGroup's `resourceClaims` (KEP-5729, DRAWorkloadResourceClaims: one claim shared by the
group, every member naming it in its own `spec.resourceClaims`) from a template asking for one channel device of the
clique (NVIDIA's ComputeDomain channel class `compute-domain-default-channel.nvidia.com`), published by the driver
as one multi-node device per clique (a ResourceSlice with a `nodeSelector`: sim/dra/driver.py clique_slice). Oracle:
KEP-5732 (topology-aware workload scheduling) "DRA Constraint": all pods of a PodGroup bound to a single shared claim
fulfilled from one co-located resource, the placement's node selector being the allocation's; and the
DynamicResources plugin's Filter (an allocated claim admits only the nodes of its node selector). So the gang lands
in one clique or not at all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.dra.driver import CHANNEL_CLASS
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl_apply
from tests.e2e.test_kubectl_dra_gangs import NODE, claims, template
from tests.integration.harness import bound, eventually, pod, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NATIVE = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
CLIQUES = {"c0": ["n0", "n1"], "c1": ["n2", "n3"], "c2": ["n4", "n5"]}
TREE = [{"layer": 1, "name": name, "children": nodes} for name, nodes in CLIQUES.items()]
SHARED = [{"name": "clique", "resourceClaimTemplateName": "clique-channel"}]


@pytest.fixture
async def cliques() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE, dra=True) as cluster:
        yield cluster


def channel_template() -> dict[str, Any]:
    exactly = {"deviceClassName": CHANNEL_CLASS, "count": 1}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "clique-channel", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "channel", "exactly": exactly}]}}},
    }


def native_group(name: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": count}}, "resourceClaims": SHARED},
    }


def member(name: str, group: str) -> dict[str, Any]:
    obj = pod(name)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    obj["spec"]["resourceClaims"] = [*SHARED, {"name": "gpu", "resourceClaimTemplateName": "eight"}]
    obj["spec"]["containers"][0]["resources"]["claims"] = [{"name": "clique"}, {"name": "gpu"}]
    return obj


async def test_a_gang_sharing_a_clique_channel_lands_in_one_clique_or_not_at_all(cliques: Cluster) -> None:
    """n0 is full (a pod of 32 CPUs bound there): clique c0 has one node with room left, so a
    gang of 2 pods of 8 GPUs goes to c1 or c2, both pods in that clique; a gang of 3 fits no clique (2 nodes each)
    and binds nothing, its claims unallocated."""
    k = cliques.client
    async with replica(cliques.kubeconfig):
        await kubectl_apply(cliques, template("eight"), channel_template())
        blocker = pod("blocker", cpu="32")
        blocker["spec"]["nodeName"] = "n0"
        await kubectl_apply(cliques, blocker)
        await k.create(NATIVE, native_group("two", 2))
        await kubectl_apply(cliques, *(member(f"two-{i}", "two") for i in range(2)))

        async def placed() -> dict[str, str] | None:
            got = {n: node for n, node in bound(await pods(k)).items() if n.startswith("two-")}
            return got if len(got) == 2 else None

        nodes = await eventually(placed, what="the gang of 2 bound")
        clique = {c for c, members in CLIQUES.items() for n in nodes.values() if n in members}
        assert len(clique) == 1 and clique != {"c0"}, nodes
        (channel,) = [c for c in await claims(cliques) if c["metadata"]["ownerReferences"][0]["kind"] == "PodGroup"]
        (result,) = channel["status"]["allocation"]["devices"]["results"]
        assert result["pool"] == f"clique-{clique.pop()}" and result["device"] == "channel-0"

        await k.create(NATIVE, native_group("three", 3))
        await kubectl_apply(cliques, *(member(f"three-{i}", "three") for i in range(3)))

        async def told() -> bool:
            return all(
                any(
                    c.get("type") == "PodScheduled" and c.get("status") == "False"
                    for c in p["status"].get("conditions") or []
                )
                for p in (await k.get("/api/v1/namespaces/default/pods"))["items"]
                if p["metadata"]["name"].startswith("three-")
            )

        await eventually(told, what="the gang of 3 told it does not fit")
        assert not [n for n in bound(await pods(k)) if n.startswith("three-")]
        mine = [c for c in await claims(cliques) if "three" in c["metadata"]["name"]]
        assert mine and not [c for c in mine if (c.get("status") or {}).get("allocation")]
