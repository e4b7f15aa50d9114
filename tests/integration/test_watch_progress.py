"""The pod watch keeps up while the API cuts it, and /readyz says when it cannot (issue 22, items 11 and 12).

Oracles: client-go's reflector (k8s.io/client-go/tools/cache/reflector.go: `wait.NewExponentialBackoffManager(800ms,
30s, 2min, 2.0, 1.0)`: its backoff goes back to the start after 2 minutes without one) for the retry rule
(k8s/reflector.py: a watch that delivered events resets it); kube-apiserver's own probes for the split
(staging/src/k8s.io/apiserver/pkg/server/healthz: /livez holds only checks a restart can fix, /readyz also the
ones that say whether to send traffic, e.g. etcd reachability).
The emulator's watch faults (sim/faults.py): `watch-cut` ends a watch abruptly after N events, as a proxy or an
apiserver restart does; http500 answers a watch request with an internal error. Rules are installed before the
replica starts, so they meet its watches (the simulated kubelet's watch is already open and is not cut).
"""

from __future__ import annotations

import asyncio
import functools
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from gangsched.handlers.probes import serve_probes
from gangsched.k8s.client import KubeClient
from gangsched.runtime.operator import Operator
from gangsched.sim.faults import parse_rule_spec
from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, create, eventually, on_replica, pod, pods, replica

NODE = "cpu=64,memory=256Gi,pods=110"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE) as c:
        yield c


async def test_a_watch_cut_after_every_few_events_still_sees_new_pods_at_once(cluster: Cluster) -> None:
    """Every pod watch of the replica is cut after 3 events (about one pod's worth). Before the fix each cut
    doubled the backoff (it reset only when a watch ended normally): by the tenth pod new pods waited 10 s to be
    seen. Now each cut watch delivered events, so it is resumed after the initial 0.05 s."""
    k = cluster.client
    cluster.server.faults.add([parse_rule_spec("kind=watch-cut,verb=watch,resource=pods,events=3")])
    async with replica(cluster.kubeconfig) as op:
        latencies = []
        for i in range(25):
            created = time.monotonic()
            await create(k, pod(f"p-{i}"))
            await eventually(functools.partial(_bound, k, f"p-{i}"), timeout=30, what=f"p-{i} bound")
            latencies.append(time.monotonic() - created)
        cuts = cluster.server.faults.injected["watch-cut"]
        assert cuts >= 10, cuts  # the watch was cut again and again...
        assert max(latencies) < 2.0, [round(x, 2) for x in latencies]  # ...and every pod was seen at once
        assert on_replica(op, lambda: op.pod_reflector.backoff.failures) <= 1


async def test_readyz_reports_a_stale_pod_cache_and_livez_stays_up(cluster: Cluster) -> None:
    """The replica's first pod watch is cut after its first event; every later one is answered 500. /readyz goes
    503 naming the stale cache once no watch has been open for staleCacheSeconds (1 s here), the metric says the
    same, /livez stays 200 (a restart does not cure the API); once the watch works again, ready again."""
    k = cluster.client
    cluster.server.faults.add(
        [
            parse_rule_spec("kind=watch-cut,verb=watch,resource=pods,events=1,next=1"),
            parse_rule_spec("kind=http500,verb=watch,resource=pods,skip=1"),
        ]
    )
    async with replica(cluster.kubeconfig, readiness={"staleCacheSeconds": 1}) as op:
        assert on_replica(op, op.readiness)["ready"]
        await create(k, pod("cut"))  # its event is the first one: the watch is cut after it

        async def stale() -> dict[str, object] | None:
            body = on_replica(op, op.readiness)
            return body if not body["ready"] else None

        body = await eventually(stale, what="/readyz says not ready")
        assert str(body["problem"]).startswith("the pod cache is stale"), body
        port = free_port()  # the probes over HTTP, as the kubelet asks them
        on_replica(op, lambda: asyncio.ensure_future(serve_probes(op, port, "127.0.0.1")))
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
            answers = await eventually(lambda: _probes(http), what="the probes served")
        assert answers["/readyz"][0] == 503 and answers["/readyz"][1]["cacheStaleSeconds"] >= 1, answers
        assert answers["/readyz/synced"] == (200, {"ok": True})  # the startup probe: caches listed
        assert answers["/livez"] == (200, {"ok": True, "problems": []})  # a restart does not cure the API
        text = op.metrics.render().decode()
        assert "gangsched_ready 0.0" in text and "gangsched_cache_stale_seconds 0.0" not in text

        cluster.server.faults.clear()
        await eventually(lambda: _ready(op), timeout=30, what="ready once the watch is back")
        await create(k, pod("after"))
        await eventually(lambda: _bound(k, "after"), what="a pod created after the outage bound")


async def _probes(http: aiohttp.ClientSession) -> dict[str, tuple[int, Any]] | None:
    answers = {}
    for path in ("/readyz", "/readyz/synced", "/livez"):
        try:
            async with http.get(path) as resp:
                answers[path] = (resp.status, await resp.json())
        except aiohttp.ClientError:
            return None
    return answers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _ready(op: Operator) -> bool:
    return bool(on_replica(op, op.readiness)["ready"])


async def _bound(k: KubeClient, name: str) -> bool:
    return name in bound(await pods(k))
