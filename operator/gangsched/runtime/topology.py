"""Where the scheduler's topology tree comes from: the topology ConfigMap, or node labels written to it.

Contract:
- `on_list` / `on_configmap(kind, obj)` (fed by a reflector of exactly that ConfigMap): its `topology.json` parsed
  into the cache's tree. Bad input keeps the last good tree and becomes a Warning `InvalidTopology` on the ConfigMap;
  unknown nodes a Warning `UnknownTopologyNodes`; deleting it (or a list without it) removes the tree, unless
  derived from labels.
- With `topology.nodeLabelTiers`, `await refresh_from_labels()` re-derives the tree when nodes join, leave or change
  labels, puts it in the cache and writes it to the ConfigMap, so users see what the scheduler uses.
More: docs/modules.md#runtimetopologypy.
"""

from __future__ import annotations

import logging
from typing import Any

from gangsched.core import InvalidField, TopologyTree
from gangsched.k8s.api import KubeApi
from gangsched.k8s.coalescing import EventRecorder, ObjectRef
from gangsched.k8s.errors import ApiError
from gangsched.models.config import TopologyConfig
from gangsched.models.topology import (
    parse_topology,
    render_topology,
    tree_from_node_labels,
    unknown_nodes,
    unknown_nodes_message,
)
from gangsched.state.cache import ClusterCache

log = logging.getLogger(__name__)


class TopologySource:
    def __init__(
        self, *, api: KubeApi, cache: ClusterCache, events: EventRecorder, namespace: str, config: TopologyConfig
    ) -> None:
        self.api = api
        self.cache = cache
        self.events = events
        self.namespace = namespace
        self.config = config
        self._rendered_text: str | None = None
        self._rendered_version = -1
        self._warned_unknown: str | None = None

    def is_configmap(self, *, namespace: str | None, name: str | None) -> bool:
        return namespace == self.namespace and name == self.config.config_map_name

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
            self.on_configmap(None, await self.api.get_configmap(self.namespace, self.config.config_map_name))
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
        self._warn_unknown_nodes(meta, tree)

    def _warn_unknown_nodes(self, meta: dict[str, Any], tree: TopologyTree) -> None:
        """A Warning `UnknownTopologyNodes` on the ConfigMap when it names nodes the cluster does not have (nodes are
        listed before the ConfigMap is read; once per distinct message)."""
        nodes = self.cache.cluster.nodes
        unknown = unknown_nodes(tree, nodes) if nodes else []
        message = unknown_nodes_message(unknown, field=self.config.key) if unknown else None
        if message is None or message == self._warned_unknown:
            self._warned_unknown = message
            return
        self._warned_unknown = message
        ref = ObjectRef("ConfigMap", "v1", meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))
        self.events.record(ref, "Warning", "UnknownTopologyNodes", message)

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
        data = {self.config.key: text}
        try:
            await self.api.create_configmap(self.namespace, self.config.config_map_name, data)
        except ApiError as exc:
            if exc.status != 409:
                log.warning("writing the topology ConfigMap: %s", exc)
                return
            await self.api.patch_configmap_data(self.namespace, self.config.config_map_name, data)
