"""`gangsched sim serve` starts a cluster that looks like one with gangsched installed (issue 10, item 7): the CRDs,
manifests/namespace.yaml and manifests/rbac.yaml applied, and with --topology the topology ConfigMap
gangsched-system/gangsched-topology (key topology.json) holding the file; authentication and RBAC on."""

from __future__ import annotations

import json
from pathlib import Path

from gangsched.sim.serve import running_cluster

TREE = [
    {"layer": 1, "name": "unit0", "children": ["a", "b"]},
]


async def test_the_cluster_starts_with_gangsched_installed_and_the_topology_configmap(tmp_path: Path) -> None:
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(TREE))
    async with running_cluster(
        nodes=0, node_resources="cpu=8", topology=str(topology), topology_configmap_from=topology
    ) as cluster:
        k = cluster.client
        assert cluster.url.startswith("https://") and cluster.server.auth
        await k.get("/api/v1/namespaces/gangsched-system")
        await k.get("/api/v1/namespaces/gangsched-system/serviceaccounts/gangsched")
        for kind in ("clusterroles", "clusterrolebindings"):
            await k.get(f"/apis/rbac.authorization.k8s.io/v1/{kind}/gangsched")
        for kind in ("roles", "rolebindings"):
            await k.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/gangsched-system/{kind}/gangsched")
        await k.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.x-k8s.io")
        cm = await k.get("/api/v1/namespaces/gangsched-system/configmaps/gangsched-topology")
        assert json.loads(cm["data"]["topology.json"]) == TREE
        assert sorted(cluster.node_names) == ["a", "b"]
