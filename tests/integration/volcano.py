"""Volcano's PodGroup CRD and objects as Volcano and LeaderWorkerSet build them, for tests of the read-only watch.

- The CRD: volcano-sh/volcano config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml (group
  scheduling.volcano.sh, version v1beta1, plural podgroups, short names pg and podgroup-v1beta1, status subresource),
  its spec trimmed to the fields the tests use with their types (minMember int32, minTaskMember a map of int32,
  minResources quantities, queue, priorityClassName, networkTopology {mode hard|soft default hard,
  highestTierAllowed >= 0, highestTierName} as volcano-sh/apis scheduling/v1beta1 types.go NetworkTopologySpec);
  the status is kept as written.
- The PodGroup LeaderWorkerSet's Volcano provider creates per group (kubernetes-sigs/lws
  pkg/schedulerprovider/volcano_provider.go CreatePodGroupIfNotExists): named after the pods'
  `scheduling.k8s.io/group-name`, minMember = size, or 1 under the LeaderReady startup policy, owned by the leader.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.serve import apply_crds

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.volcano.sh"},
    "spec": {
        "group": "scheduling.volcano.sh",
        "names": {
            "kind": "PodGroup",
            "listKind": "PodGroupList",
            "plural": "podgroups",
            "singular": "podgroup",
            "shortNames": ["pg", "podgroup-v1beta1"],
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object"},
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "minMember": {"type": "integer", "format": "int32"},
                                    "minTaskMember": {
                                        "type": "object",
                                        "additionalProperties": {"type": "integer", "format": "int32"},
                                    },
                                    "minResources": {
                                        "type": "object",
                                        "additionalProperties": {
                                            "anyOf": [{"type": "integer"}, {"type": "string"}],
                                            "x-kubernetes-int-or-string": True,
                                        },
                                    },
                                    "priorityClassName": {"type": "string"},
                                    "queue": {"type": "string"},
                                    "networkTopology": {
                                        "type": "object",
                                        "properties": {
                                            "mode": {"type": "string", "enum": ["hard", "soft"], "default": "hard"},
                                            "highestTierAllowed": {"type": "integer", "minimum": 0},
                                            "highestTierName": {"type": "string", "maxLength": 253},
                                        },
                                    },
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


async def install_volcano_crd(client: Any) -> None:
    await apply_crds(client, [CRD])


def lws_volcano_podgroup(name: str, min_member: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member, "minResources": {"cpu": "4"}},
    }
