"""Typed calls for what the operator's runtime asks of the API server directly: the runtime names objects and says
what it wants; the paths and bodies are built here (coalesced writes: k8s/writes.py; bindings: k8s/binder.py).

Contract:
- `KubeApi(client)`: over the replica's FencedClient every write is fenced; every call raises ApiError and runs
  under the client's retry policy unless it passes `retry=`.
- Lists: `list_nodes`, `list_podgroups(api_version=...)`, `list_priority_classes`, `list_namespaces`, `list_pdbs`.
- Reflectors (not started): `pod_reflector(...)`, `configmap_reflector(namespace, name, ...)` (one ConfigMap only),
  `namespace_reflector(label, ...)`; `get_object(path)`, `list_labelled_namespaces(label)`.
- `evict(namespace, name)` (PDBs apply); `delete_pod(namespace, name, uid=...)` (that incarnation, no PDB);
  `create_podgroup(spec, owners, workload=None)` (labelled managed-by gangsched, owned by its pods or workload);
  ConfigMaps: `get_configmap`, `create_configmap`, `patch_configmap_data`. More: docs/modules.md#k8sapipy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from gangsched.core import GangSpec
from gangsched.k8s.client import KubeClient, resource_path
from gangsched.k8s.reflector import OnEvent, OnList, Reflector
from gangsched.k8s.retry import RetryPolicy
from gangsched.models.podgroup import API_VERSION as PODGROUP_API_VERSION
from gangsched.models.podgroup import PLURAL as PODGROUP_PLURAL
from gangsched.models.podgroup import VERSION as PODGROUP_VERSION

MANAGED_BY = "app.kubernetes.io/managed-by"


class PodOwner(NamedTuple):
    """A pod as an owner of an object (its ownerReference)."""

    name: str
    uid: str


def pod_path(namespace: str, name: str, subresource: str | None = None) -> str:
    return resource_path(group="", version="v1", plural="pods", namespace=namespace, name=name, subresource=subresource)


def podgroup_path(
    namespace: str, name: str | None = None, subresource: str | None = None, *, api_version: str = PODGROUP_API_VERSION
) -> str:
    """The path of a PodGroup of any API group (scheduling.x-k8s.io by default, scheduling.sigs.k8s.io, or Kubernetes'
    own scheduling.k8s.io/v1beta1), at the version its apiVersion names."""
    return resource_path(
        group=api_version.partition("/")[0],
        version=api_version.partition("/")[2] or PODGROUP_VERSION,
        plural=PODGROUP_PLURAL,
        namespace=namespace,
        name=name,
        subresource=subresource,
    )


def configmap_path(namespace: str, name: str | None = None) -> str:
    return resource_path(group="", version="v1", plural="configmaps", namespace=namespace, name=name)


def owner_references(owners: Sequence[PodOwner]) -> list[dict[str, str]]:
    return [{"apiVersion": "v1", "kind": "Pod", "name": owner.name, "uid": owner.uid} for owner in owners]


def podgroup_manifest(
    spec: GangSpec, owners: Sequence[PodOwner], workload: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The PodGroup object of an annotation-only gang (or of a gang inferred from `workload`, its owner)."""
    body: dict[str, Any] = {"minMember": spec.min_member}
    if spec.total_member is not None:
        body["totalMember"] = spec.total_member
    body["mode"] = str(spec.mode)
    if spec.wait_seconds:
        body["scheduleTimeoutSeconds"] = int(spec.wait_seconds)
    if spec.group:
        body["gangGroup"] = list(spec.group)
    if spec.roles:  # (an inferred gang: a role per replica type)
        body["roles"] = [{"name": role, "minMember": count} for role, count in spec.roles]
    if spec.network_topology is not None:
        nt = spec.network_topology
        body["networkTopology"] = {"mode": str(nt.mode), "groupSize": nt.group_size}
        if nt.highest_tier_allowed is not None:
            body["networkTopology"]["highestTierAllowed"] = nt.highest_tier_allowed
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": {MANAGED_BY: "gangsched"},
            "annotations": {
                "gangsched.io/created-for": "annotation-only gang" if workload is None else "inferred gang"
            },
            "ownerReferences": owner_references(owners) if workload is None else [dict(workload)],
        },
        "spec": body,
    }


class KubeApi:
    """The runtime's direct API calls (see the module docstring)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    # ------------------------------------------------------------------ lists
    async def list_nodes(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all("/api/v1/nodes")
        return items

    async def list_podgroups(self, api_version: str = PODGROUP_API_VERSION) -> list[dict[str, Any]]:
        """Every PodGroup of that API group, each with its apiVersion and kind (list items carry neither)."""
        items, _ = await self.client.list_all(f"/apis/{api_version}/{PODGROUP_PLURAL}")
        return [{**item, "apiVersion": api_version, "kind": "PodGroup"} for item in items]

    async def list_kind(self, api_version: str, plural: str, kind: str) -> list[dict[str, Any]]:
        """Every object of that kind (CompositePodGroups, Grove's PodGangs, DRA objects), each with its apiVersion and
        kind."""
        items, _ = await self.client.list_all(f"/apis/{api_version}/{plural}")
        return [{**item, "apiVersion": api_version, "kind": kind} for item in items]

    async def list_priority_classes(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all("/apis/scheduling.k8s.io/v1/priorityclasses")
        return items

    async def list_namespaces(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all("/api/v1/namespaces")
        return items

    async def list_pdbs(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all("/apis/policy/v1/poddisruptionbudgets")
        return items

    async def list_pvcs(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all("/api/v1/persistentvolumeclaims")
        return items

    async def list_pvs(self) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all("/api/v1/persistentvolumes")
        return items

    # ------------------------------------------------------------- reflectors
    def pod_reflector(self, *, on_list: OnList, on_event: OnEvent) -> Reflector:
        return Reflector(self.client, "/api/v1/pods", on_list=on_list, on_event=on_event)

    def configmap_reflector(self, namespace: str, name: str, *, on_list: OnList, on_event: OnEvent) -> Reflector:
        return Reflector(
            self.client,
            configmap_path(namespace),
            params={"fieldSelector": f"metadata.name={name}"},
            on_list=on_list,
            on_event=on_event,
        )

    # ------------------------------------------------------------------ pods
    async def evict(self, namespace: str, name: str, *, retry: RetryPolicy | None = None) -> None:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        await self.client.create(pod_path(namespace, name, "eviction"), body, retry=retry)

    async def delete_pod(self, namespace: str, name: str, *, uid: str, retry: RetryPolicy | None = None) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        await self.client.delete(pod_path(namespace, name), body=body, retry=retry)

    # ------------------------------------------------------------- PodGroups
    async def create_podgroup(
        self, spec: GangSpec, owners: Sequence[PodOwner], workload: Mapping[str, Any] | None = None
    ) -> None:
        await self.client.create(podgroup_path(spec.namespace), podgroup_manifest(spec, owners, workload))

    # ------------------------------------------------------ inferred gangs
    async def get_object(self, path: str) -> dict[str, Any]:
        return await self.client.get(path)

    async def list_labelled_namespaces(self, label: str) -> list[dict[str, Any]]:
        items, _ = await self.client.list_all("/api/v1/namespaces", params={"labelSelector": f"{label}=true"})
        return items

    def namespace_reflector(self, label: str, *, on_list: OnList, on_event: OnEvent) -> Reflector:
        params = {"labelSelector": f"{label}=true"}
        return Reflector(self.client, "/api/v1/namespaces", params=params, on_list=on_list, on_event=on_event)

    # ------------------------------------------------------------ ConfigMaps
    async def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        return await self.client.get(configmap_path(namespace, name))

    async def create_configmap(self, namespace: str, name: str, data: Mapping[str, str]) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {MANAGED_BY: "gangsched"}},
            "data": dict(data),
        }
        await self.client.create(configmap_path(namespace), body)

    async def patch_configmap_data(self, namespace: str, name: str, data: Mapping[str, str]) -> None:
        await self.client.patch(configmap_path(namespace, name), {"data": dict(data)})
