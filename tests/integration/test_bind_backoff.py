"""A binding that keeps failing backs its gang off, and the probes and metrics say so (issue 22, items 10 and 12).

Oracle: kube-scheduler. A pod whose binding failed goes through `handleSchedulingFailure` to the backoffQ
(pkg/scheduler/schedule_one.go `handleBindingCycleError`), where it waits `calculateBackoffDuration`
(pkg/scheduler/backend/queue/scheduling_queue.go: podInitialBackoffSeconds 1 doubling per attempt up to
podMaxBackoffSeconds 10); its DefaultBinder POSTs each binding once (pkg/scheduler/framework/plugins/defaultbinder).
Before the fix a failed bind was requeued at once: 22 attempts/s for a 2-pod gang answered 500, about 1,000
forbidden POSTs/s with the ClusterRoleBinding deleted, while /readyz stayed 200.

Durations are scaled down: the backoff 0.1 s doubling to 0.5 s (so at most 2 POSTs per pod per second once at
the cap, as 6 a minute at kube-scheduler's 10 s), readiness bounds of 1 s. The emulator counts the POSTs
(its request log) and answers them (fault injection: http500 on pods/binding; RBAC for the 403s).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.faults import parse_rule_spec
from gangsched.sim.requestlog import LoggedRequest
from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, create, events_for, eventually, on_replica, pod, podgroup, pods, replica

MAX_BACKOFF = 0.5
SCALED: dict[str, Any] = {
    "bindBackoff": {"initialSeconds": 0.1, "maxSeconds": MAX_BACKOFF},
    "readiness": {"staleCacheSeconds": 1, "bindsFailingSeconds": 1},
}
CRB = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"


class BindingPosts:
    """The binding POSTs the emulator received, by pod name, with their arrival times (monotonic)."""

    def __init__(self, cluster: Cluster) -> None:
        self.times: dict[str, list[float]] = {}
        cluster.server.requests.enabled = True
        cluster.server.requests.listeners.append(self._seen)

    def _seen(self, entry: LoggedRequest) -> None:
        if entry.method == "POST" and entry.path.endswith("/binding"):
            self.times.setdefault(entry.path.split("/")[-2], []).append(entry.monotonic)

    def first(self) -> float | None:
        return min((t[0] for t in self.times.values()), default=None)

    def between(self, name: str, start: float, end: float) -> int:
        return sum(1 for t in self.times.get(name, []) if start <= t < end)


async def until(moment: float) -> None:
    """The measuring window: wait until the monotonic clock reaches `moment` (not a race being papered over)."""
    await asyncio.sleep(max(0.0, moment - time.monotonic()))


@pytest.fixture
async def failing() -> AsyncIterator[Cluster]:
    rule = parse_rule_spec("kind=http500,verb=create,resource=pods/binding")
    async with running_cluster(nodes=2, node_resources="cpu=8,memory=32Gi,pods=110", faults=[rule]) as cluster:
        yield cluster


async def test_a_gang_whose_bindings_answer_500_backs_off_and_binds_once_they_work(failing: Cluster) -> None:
    k = failing.client
    posts = BindingPosts(failing)
    async with replica(failing.kubeconfig, **SCALED) as op:
        await create(k, podgroup("g", min_member=2), pod("g-0", group="g"), pod("g-1", group="g"))
        start = await eventually(lambda: _value(posts.first()), what="the first binding POST")
        await until(start + 4.0)
        window = (start + 1.0, start + 4.0)  # past the first attempt's retries and the doubling: at the cap
        counts = [posts.between(name, *window) for name in ("g-0", "g-1")]
        most = (window[1] - window[0]) / MAX_BACKOFF + 1
        assert all(2 <= n <= most for n in counts), (counts, most)  # bounded, and still trying
        body = on_replica(op, op.readiness)
        assert not body["ready"] and "bindings have been failing" in body["problem"], body
        assert on_replica(op, op.liveness_problems) == []  # an API-side problem: a restart would not cure it
        assert "gangsched_binds_failing_seconds 0.0" not in op.metrics.render().decode()
        for name in ("g-0", "g-1"):  # aggregated: one event per pod, its count raised
            failed = [e for e in await events_for(k, name) if e["reason"] == "FailedBinding"]
            assert len(failed) == 1 and failed[0]["count"] >= 2, failed

        failing.server.faults.clear()
        await eventually(lambda: _bound(k, "g-0", "g-1"), timeout=10, what="bound once bindings work")
        await eventually(lambda: _value(on_replica(op, op.readiness)["ready"]), what="ready again")


async def test_forbidden_bindings_are_logged_once_reported_and_rate_bounded(
    failing: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The ClusterRoleBinding deleted (kube-apiserver answers 403 through RBAC's authorizer,
    plugin/pkg/auth/authorizer/rbac): logged once, /readyz names the cause, /livez stays 200."""
    failing.server.faults.clear()
    k = failing.client
    posts = BindingPosts(failing)
    caplog.set_level(logging.INFO)
    async with replica(failing.kubeconfig, **SCALED) as op:
        binding = await k.get(f"{CRB}/gangsched")
        await k.delete(f"{CRB}/gangsched")
        await create(k, pod("f-0"), pod("f-1"))  # (no PodGroup: Kopf's watches of them relist, forbidden too)
        start = await eventually(lambda: _value(posts.first()), what="the first binding POST")
        await until(start + 3.0)
        counts = [posts.between(name, start, start + 3.0) for name in ("f-0", "f-1")]
        assert all(3 <= n <= 3.0 / MAX_BACKOFF + 3 for n in counts), counts
        logged = [r for r in caplog.records if "pods/binding is forbidden" in r.getMessage()]
        assert len(logged) == 1, [r.getMessage() for r in logged]
        body = on_replica(op, op.readiness)
        ours = [  # every 403 the operator's own writers met (bindings, events, pod conditions): once per cause
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("gangsched") and r.levelno >= logging.WARNING and "forbidden" in r.getMessage()
        ]
        assert len(ours) <= len(body["forbidden"]), (ours, body["forbidden"])
        assert not body["ready"] and body["problem"].startswith("forbidden: create pods/binding"), body
        assert 'cannot create resource "pods/binding"' in body["forbidden"][0]
        assert on_replica(op, op.liveness_problems) == []
        text = op.metrics.render().decode()
        assert _series(text, "gangsched_forbidden_causes") >= 1 and _series(text, "gangsched_ready") == 0.0

        await k.create(CRB, _recreated(binding))
        await eventually(lambda: _bound(k, "f-0", "f-1"), timeout=10, what="bound once the binding is back")
        await eventually(lambda: _value(on_replica(op, op.readiness)["ready"]), what="ready again")
        assert on_replica(op, op.readiness)["forbidden"] == []


def _series(text: str, name: str) -> float:
    (line,) = [x for x in text.splitlines() if x.startswith(name + " ")]
    return float(line.split()[1])


def _recreated(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "labels", "annotations")}
    return {**obj, "metadata": meta}


def _value(x: Any) -> Any:
    async def probe() -> Any:
        return x

    return probe()


async def _bound(k: Any, *names: str) -> bool:
    placed = bound(await pods(k))
    return all(n in placed for n in names)
