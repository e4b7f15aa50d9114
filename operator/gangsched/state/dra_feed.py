"""Feeding DRA events into the cluster cache (state/cache.py calls these; no I/O).

Contract:
- `on_dra(cache, which, kind, obj) -> Report | None`: a ResourceSlice / DeviceClass / ResourceClaim event into
  `cache.dra` (state/dra.py), never raising; what to report on an object that cannot be read or has fields
  gangsched does not evaluate is returned (the cache makes it a Problem); the pods using a claim are re-derived.
- `flush_devices(cache)`: before a scheduling cycle, the nodes' free device counts brought up to date (a node's
  allocatable carries them as resources, core/devices/index.py) and the SchedulerState's DeviceState set;
  nothing is done when nothing moved.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Protocol

from gangsched.core import InvalidField, NodeRecord, SchedulerState
from gangsched.core.devices import Shapes
from gangsched.state.dra import DraBook


class ClusterCache(Protocol):
    """What these functions use of state/cache.py's ClusterCache (which imports this module)."""

    dra: DraBook
    cluster: SchedulerState
    dirty_gangs: set[str]
    devices_dirty: bool
    on_change: Callable[[], None]


Report = tuple[
    str, str, str, str, str, str, str
]  # a Problem's fields: kind, apiVersion, ns, name, uid, reason, message

log = logging.getLogger(__name__)
DRA_API_VERSION = "resource.k8s.io/v1"


def on_dra(cache: ClusterCache, which: str, kind: str | None, obj: dict[str, Any]) -> Report | None:
    meta = obj.get("metadata") or {}
    ns, name, uid = meta.get("namespace") or "", meta.get("name", ""), meta.get("uid", "")
    pods: set[str] = set()
    problem: str | None = None
    try:
        if which == "ResourceSlice":
            problem = cache.dra.on_slice(kind, obj)
        elif which == "DeviceClass":
            problem = cache.dra.on_class(kind, obj)
        else:
            pods, problem = cache.dra.on_claim(kind, obj)
        reason = "UnsupportedField"
    except InvalidField as exc:
        problem, reason = str(exc), "Invalid" + which
    except Exception:
        log.exception("%s event could not be handled", which)
        return None
    refresh_pods(cache, pods)
    cache.devices_dirty = True
    cache.on_change()
    return None if problem is None else (which, DRA_API_VERSION, ns, name, uid, reason, problem)


def refresh_pods(cache: ClusterCache, keys: set[str]) -> None:
    moved = False
    for key in sorted(keys):
        record = cache.cluster.pods.get(key)
        if record is None or record.terminal:
            continue
        new = cache.dra.refresh(key)
        if new is not None and new != record:
            cache.cluster.upsert_pod(new)
            if new.gang is not None:
                cache.dirty_gangs.add(new.gang)
            moved = True
    if moved:
        cache.cluster.store.bump_freed()


def with_devices(cache: ClusterCache, node: NodeRecord) -> NodeRecord:
    """The node's record with its free device counts as resources (and none it no longer has)."""
    extra = cache.dra.node_extra(node.name)
    if not extra and not any(Shapes.is_resource(r) for r in node.allocatable):
        return node
    alloc = {r: q for r, q in node.allocatable.items() if not Shapes.is_resource(r)}
    alloc.update(extra)
    return dataclasses.replace(node, allocatable=alloc)


def flush_devices(cache: ClusterCache) -> None:
    if not cache.devices_dirty:
        return
    cache.devices_dirty = False
    if not cache.dra.slices and not cache.dra.pods and not cache.dra.claims:
        cache.cluster.set_devices(None)
        return
    try:
        nodes = cache.cluster.nodes
        for name in cache.dra.flush(nodes):
            node = nodes.get(name)
            if node is not None:
                cache.cluster.upsert_node(with_devices(cache, node))
        if cache.dra.errors_moved:
            moved, cache.dra.errors_moved = cache.dra.errors_moved, set()
            refresh_pods(cache, moved)
        cache.cluster.set_devices(cache.dra.state())
    except Exception:
        log.exception("DRA state could not be brought up to date")
