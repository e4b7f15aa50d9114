"""An API stall (every request held for longer than the lease, then answered) never stops scheduling; the probes
and the leader metric tell the truth throughout.

The stall is the emulator's hold switch (sim/requestlog.py): every request arriving during the hold waits until
it is over, then is served. Before the fix the loop, seeing itself no longer leader while the renewal was held,
waited for a leadership *change*; the delayed renewal then succeeded, nothing changed, and the loop waited
forever (issue 11). Leadership now ends when the renewal misses renewDeadline (client-go's `renew`,
`tools/leaderelection/leaderelection.go`), the replica rebuilds as a follower, and leads again once it renews.
Durations scaled down: lease 3 s, renewDeadline 2 s, the hold 5 s (the issue's 10-30 s).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from gangsched.handlers.probes import serve_probes
from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, create, eventually, on_replica, pod, podgroup, pods, replica


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources="cpu=8,memory=32Gi,pods=110") as c:
        yield c


def _leader_series(text: str) -> float:
    line = next(x for x in text.splitlines() if x.startswith("gangsched_leader "))
    return float(line.split()[1])


async def test_scheduling_resumes_after_an_api_stall(cluster: Cluster) -> None:
    k = cluster.client
    async with replica(cluster.kubeconfig, identity="solo", leader_election=True) as op:
        await eventually(lambda: _true(op.holds_lease()), what="solo leads")
        await create(
            k, podgroup("before", min_member=2), pod("before-0", group="before"), pod("before-1", group="before")
        )
        await eventually(lambda: _bound(k, "before-0", "before-1"), what="first gang bound")
        # a gang that never fits: not a liveness failure, however long it waits
        await create(k, podgroup("huge", min_member=1), pod("huge-0", group="huge", cpu="64"))
        await eventually(lambda: _true(on_replica(op, lambda: "default/huge" in op.cluster.gangs)), what="huge seen")
        # once the loop has caught up, no amount of waiting for that gang fails /livez
        await eventually(
            lambda: _true(on_replica(op, lambda: op.liveness_problems(now=time.monotonic() + 10_000)) == []),
            what="an idle loop is alive however long the gang waits",
        )

        term = op.elector.term if op.elector else 0
        cluster.server.requests.hold(5.0)  # longer than the lease: the renewal misses its deadline
        await eventually(lambda: _true(not op.holds_lease()), timeout=5, what="leadership ends within renewDeadline")
        assert on_replica(op, lambda: op.readiness()["leader"]) is False
        assert _leader_series(op.metrics.render().decode()) == 0.0  # the metric agrees with /readyz
        # created during the stall (this request is held too, then answered)
        await create(k, podgroup("after", min_member=2), pod("after-0", group="after"), pod("after-1", group="after"))
        await eventually(
            lambda: _bound(k, "after-0", "after-1"), timeout=20, what="a gang created during the stall bound"
        )
        assert op.elector is not None and op.elector.term > term and op.rebuilds >= 1
        body = on_replica(op, op.readiness)
        assert body["ready"] and body["leader"] and body["holder"] == "solo"
        assert _leader_series(op.metrics.render().decode()) == 1.0
        assert on_replica(op, op.liveness_problems) == []
        text = op.metrics.render().decode()
        for series in (
            "gangsched_seconds_since_last_cycle",
            "gangsched_watch_restarts_total",
            "gangsched_relists_total",
            "gangsched_dropped_events_total",
            "gangsched_cache_errors_total",
            "process_resident_memory_bytes",
            "gangsched_rebuilds_total 1.0",
        ):
            assert series in text, series


async def test_probe_endpoints_of_a_leader_and_a_follower(cluster: Cluster) -> None:
    """/readyz: 200 for a synced follower too, leadership in the body; /livez: 500 once the leader owes a round
    for longer than progressDeadlineSeconds."""
    async with (
        replica(cluster.kubeconfig, identity="p", leader_election=True) as p,
        replica(cluster.kubeconfig, identity="q", leader_election=True) as q,
    ):
        await eventually(lambda: _true(p.holds_lease() or q.holds_lease()), what="a leader")
        op, follower = (p, q) if p.holds_lease() else (q, p)
        urls = []
        for replica_op in (op, follower):
            port = free_port()
            on_replica(replica_op, lambda o=replica_op, p=port: asyncio.ensure_future(serve_probes(o, p, "127.0.0.1")))  # type: ignore[misc]
            urls.append(f"http://127.0.0.1:{port}")
        async with aiohttp.ClientSession() as http:

            async def get(url: str) -> tuple[int, dict[str, Any]] | None:
                try:
                    async with http.get(url) as resp:
                        return resp.status, await resp.json()
                except aiohttp.ClientError:
                    return None

            answer = await eventually(lambda: get(urls[0] + "/readyz"), what="leader's /readyz")
            assert answer is not None
            status, body = answer
            assert (
                status == 200 and body["ready"] is True and body["leader"] is True and body["identity"] == op.identity
            )

            async def follower_saw_holder() -> tuple[int, dict[str, Any]] | None:
                answer = await get(urls[1] + "/readyz")  # a follower learns the holder at its next Lease read
                return answer if answer is not None and answer[1].get("holder") else None

            answer = await eventually(follower_saw_holder, what="follower's /readyz naming the holder")
            assert answer is not None
            status, body = answer
            assert status == 200 and body["ready"] is True and body["leader"] is False and body["holder"] == op.identity
            for url in urls:
                assert await get(url + "/livez") == (200, {"ok": True, "problems": []})

            async def stalled_livez() -> tuple[int, dict[str, Any]] | None:
                # the loop owes a round for 10,000 s; a round starting at that very moment (a wake already queued,
                # e.g. a Lease renewal under load) pays the debt, so the stall is staged again until it is seen
                on_replica(op, lambda: setattr(op, "_work_since", time.monotonic() - 10_000))
                answer = await get(urls[0] + "/livez")
                return answer if answer is not None and answer[0] == 500 else None

            result = await eventually(stalled_livez, what="leader's /livez reporting the stalled loop")
            assert result is not None and "no scheduling round completed" in result[1]["problems"][0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _true(value: bool) -> bool:
    return value


async def _bound(k: Any, *names: str) -> bool:
    placed = bound(await pods(k))
    return all(n in placed for n in names)
