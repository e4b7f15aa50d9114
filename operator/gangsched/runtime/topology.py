"""Where the scheduler's topology tree comes from: the topology ConfigMap, or node labels written to it.

Contract:
- `watch_target(namespace=, config=)` is what the operator's reflector lists and watches: exactly the topology
  ConfigMap (`fieldSelector=metadata.name=...` in the operator's namespace, so neither the operator nor its RBAC
  touches any other ConfigMap of the cluster); it feeds `on_list` / `on_configmap`; `on_configmap(kind, obj)` parses its `topology.json` (config.topology.key)
  and puts the tree in the cache. A list without the ConfigMap counts as its deletion.
  Bad input (missing key, not JSON, cycles, ...: see models/topology.py) leaves the last good tree in force and
  becomes a Warning event `InvalidTopology` on the ConfigMap naming the problem. Deleting the ConfigMap removes
  the tree (unless it is derived from labels).
- With `topology.nodeLabelTiers` configured, `await refresh_from_labels()` re-derives the tree whenever nodes
  joined, left or changed labels, puts it in the cache and writes it to the ConfigMap (created or patched), so
  users see what the scheduler uses.
"""

from __future__ import annotations

import logging
from typing import Any

from gangsched.core.errors import InvalidField
from gangsched.k8s.client import ApiError, KubeClient, resource_path
from gangsched.k8s.writer import EventRecorder, ObjectRef
from gangsched.models.config import TopologyConfig
from gangsched.models.topology import parse_topology, render_topology, tree_from_node_labels
from gangsched.state.cache import ClusterCache

log = logging.getLogger(__name__)

MANAGED_BY = "app.kubernetes.io/managed-by"


class TopologySource:
    def __init__(
        self, *, client: KubeClient, cache: ClusterCache, events: EventRecorder, namespace: str, config: TopologyConfig
    ) -> None:
        self.client = client
        self.cache = cache
        self.events = events
        self.namespace = namespace
        self.config = config
        self._rendered_text: str | None = None
        self._rendered_version = -1

    @property
    def path(self) -> str:
        return resource_path(
            group="", version="v1", plural="configmaps", namespace=self.namespace, name=self.config.config_map_name
        )

    def is_configmap(self, *, namespace: str | None, name: str | None) -> bool:
        return namespace == self.namespace and name == self.config.config_map_name

    @staticmethod
    def watch_target(*, namespace: str, config: TopologyConfig) -> tuple[str, dict[str, str]]:
        """(collection path, query) of a list+watch of the topology ConfigMap alone, narrowed by name on the server."""
        collection = resource_path(group="", version="v1", plural="configmaps", namespace=namespace)
        return collection, {"fieldSelector": f"metadata.name={config.config_map_name}"}

    def on_list(self, items: list[dict[str, Any]]) -> None:
        """A (re)list: the ConfigMap as it is now, or its absence (deleted while nobody watched)."""
        mine = [
            obj
            for obj in items
            if self.is_configmap(
                namespace=(obj.get("metadata") or {}).get("namespace"), name=(obj.get("metadata") or {}).get("name")
            )
        ]
        if mine:
            self.on_configmap(None, mine[0])
        else:
            self.on_configmap("DELETED", {})

    async def seed(self) -> None:
        try:
            self.on_configmap(None, await self.client.get(self.path))
        except ApiError as exc:
            if exc.status != 404:
                log.warning("reading the topology ConfigMap: %s", exc)

    def on_configmap(self, kind: str | None, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            if not self.config.node_label_tiers:
                self.cache.set_topology(None)
            return
        text = (obj.get("data") or {}).get(self.config.key)
        meta = obj.get("metadata") or {}
        if text is None:
            self._reject(meta, f"{self.config.key}: missing: the ConfigMap must hold the topology under this key")
            return
        try:
            tree = parse_topology(text, field=self.config.key)
        except InvalidField as exc:
            self._reject(meta, f"{exc}; the last good topology stays in force")
            return
        self.cache.set_topology(tree)

    def _reject(self, meta: dict[str, Any], message: str) -> None:
        log.warning("topology ConfigMap %s/%s rejected: %s", meta.get("namespace"), meta.get("name"), message)
        ref = ObjectRef("ConfigMap", "v1", meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))
        self.events.record(ref, "Warning", "InvalidTopology", message)

    async def refresh_from_labels(self) -> None:
        tiers = self.config.node_label_tiers
        if not tiers or self._rendered_version == self.cache.nodes_version:
            return
        self._rendered_version = self.cache.nodes_version
        try:
            tree = tree_from_node_labels(self.cache.node_labels(), tiers)
        except InvalidField as exc:
            log.warning("cannot derive the topology from node labels %s: %s", tiers, exc)
            return
        text = render_topology(tree)
        if text == self._rendered_text:
            return
        self._rendered_text = text
        self.cache.set_topology(tree)
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.config.config_map_name,
                "namespace": self.namespace,
                "labels": {MANAGED_BY: "gangsched"},
            },
            "data": {self.config.key: text},
        }
        try:
            await self.client.create(
                resource_path(group="", version="v1", plural="configmaps", namespace=self.namespace), body
            )
        except ApiError as exc:
            if exc.status != 409:
                log.warning("writing the topology ConfigMap: %s", exc)
                return
            await self.client.patch(self.path, {"data": body["data"]})
