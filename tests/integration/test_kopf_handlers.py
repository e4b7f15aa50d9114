"""Kopf's handlers hand their objects to the operator on the operator's own event loop, never from a thread.

Kopf runs sync handlers in executor threads; the cache, the Cluster and the loop's timers are not thread-safe.
Found by the soak test: a sync PodGroup handler raced the scheduling cycle and failed with "no running event
loop" when a status update had to wake the loop.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from gangsched.runtime.operator import Operator
from gangsched.sim.cluster import create_nodes
from gangsched.sim.serve import running_cluster
from tests.integration.harness import create, eventually, on_replica, podgroup, replica

NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
TREE = [{"layer": 1, "name": "unit0", "children": ["node-0", "node-1"]}]


def _record(op: Operator, calls: dict[str, set[int]]) -> None:
    """Wrap the operator's feeders so each call records the thread it ran on (runs on the replica's loop)."""

    def wrap(owner: Any, attr: str) -> None:
        inner: Callable[..., Any] = getattr(owner, attr)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            calls.setdefault(attr, set()).add(threading.get_ident())
            return inner(*args, **kwargs)

        setattr(owner, attr, recorded)

    for attr in ("on_podgroup", "on_node"):
        wrap(op.cache, attr)
    wrap(op.topology, "on_configmap")


async def test_podgroup_node_and_topology_events_reach_the_cache_on_the_operators_loop() -> None:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        k = cluster.client
        async with replica(cluster.kubeconfig) as op:
            calls: dict[str, set[int]] = {}
            loop_thread = on_replica(op, threading.get_ident)
            on_replica(op, lambda: _record(op, calls))
            await create(
                k,
                podgroup("g", min_member=2),
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
                    "data": {"topology.json": json.dumps(TREE)},
                },
            )
            await create_nodes(k, ["node-2"], NODE)

            async def all_seen() -> bool:
                return set(calls) == {"on_podgroup", "on_node", "on_configmap"}

            await eventually(all_seen, what="every kind of object handed to the operator")
            assert calls == {attr: {loop_thread} for attr in calls}
            assert threading.get_ident() != loop_thread  # the replica has a loop (and thread) of its own
