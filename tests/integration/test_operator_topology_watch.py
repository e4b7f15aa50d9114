"""The operator watches the topology ConfigMap by name, never every ConfigMap of the cluster.

Kopf cannot narrow a watch to one object, so the operator runs its own list+watch with
`fieldSelector=metadata.name=<name>` in its own namespace: the API server then streams that one object only
(kube-apiserver: `metadata.name` is a field every kind supports, staging/src/k8s.io/apiserver/pkg/registry/generic/
matcher.go ObjectMetaFieldsSet), and the RBAC role can name it (`resourceNames`, which authorize list/watch only
with such a field selector).
"""

from __future__ import annotations

import json
from typing import Any

from gangsched.sim.serve import running_cluster
from tests.integration.harness import OPERATOR_NAMESPACE, create, eventually, on_replica, replica

NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
TREE = [{"layer": 1, "name": "unit0", "children": ["node-0", "node-1"]}]
CMS = f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/configmaps"


def _configmap(name: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
        "data": {"topology.json": text},
    }


async def test_topology_configmap_is_watched_by_name_and_followed_through_delete_and_recreate() -> None:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        k = cluster.client
        async with replica(cluster.kubeconfig) as op:

            async def watching() -> set[Any]:  # the emulator's own controllers' taps are internal, not watches
                return {w for w in cluster.server.store._watchers.get(("", "configmaps"), set()) if not w.internal}

            watchers = await eventually(watching, what="a watch of the topology ConfigMap")
            assert all(w.namespace == OPERATOR_NAMESPACE and w.matches is not None for w in watchers), (
                "every ConfigMap watch is narrowed to the operator's namespace and the ConfigMap's name"
            )

            await create(k, _configmap("gangsched-topology", json.dumps(TREE)))

            async def has_tree() -> bool:
                return bool(on_replica(op, lambda: op.cluster.topology is not None))

            await eventually(has_tree, what="topology from the ConfigMap")

            await k.delete(f"{CMS}/gangsched-topology")

            async def no_tree() -> bool:
                return bool(on_replica(op, lambda: op.cluster.topology is None))

            await eventually(no_tree, what="topology removed with its ConfigMap")

            await create(k, _configmap("gangsched-topology", json.dumps(TREE)))
            await eventually(has_tree, what="topology back with a re-created ConfigMap")
