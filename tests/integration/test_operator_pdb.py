"""Preemption against PodDisruptionBudget-protected victims, end to end through the real emulator (issue 11 item 7).

The emulator decides evictions as kube-apiserver does (pkg/registry/core/pod/storage/eviction.go) from the
status its disruption controller computes (pkg/controller/disruption/disruption.go): pods without a scale-able
controller under maxUnavailable get disruptionsAllowed 0, a PDB whose status lags its spec answers 429 with
Retry-After 10. The operator must read protection from its cache (no pod LIST per PDB event), retry a 429 with
backoff while the preemptor waits, and never storm the Eviction API. Requests are counted by the emulator.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, gang_manifests, priority_class
from tests.integration.harness import create, eventually, on_replica, placed, pod, pods, replica

NODE = NODE_8_GPUS
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("batch", 10),
    priority_class("guarantee", 1000),
]
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
EVICTIONS = ("POST", "pods/eviction")


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


def gang(name: str, n: int, *, pc: str, owner: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    objs = gang_manifests(name, n, pc=pc, labels={"app": name})
    if owner is not None:
        for m in objs[1:]:
            m["metadata"]["ownerReferences"] = [owner]
    return objs


def lone(name: str, n: int, *, pc: str) -> list[dict[str, Any]]:
    """Pods without a gang (a protected one stays a victim of last resort under `pdb: respect`, where a victim gang
    with a protected member is never chosen: issue 22 item 2)."""
    return [pod(f"{name}-{i}", gpu=8, priority_class=pc, labels={"app": name}) for i in range(n)]


async def replica_set(k: KubeClient, name: str, replicas: int) -> dict[str, Any]:
    """A ReplicaSet as the owner of a victim gang's pods (a Deployment-like workload; nothing runs it here)."""
    rs = await k.create(
        "/apis/apps/v1/namespaces/default/replicasets",
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}},
            },
        },
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": name,
        "uid": rs["metadata"]["uid"],
        "controller": True,
    }


def budget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
    }


async def gone(k: KubeClient, prefix: str) -> bool:
    return not any(name.startswith(prefix + "-") for name in await pods(k))


async def pdb_status(k: KubeClient, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (await k.get(f"{PDBS}/{name}"))["status"]
    return status


def protected(op: Any, keys: list[str], flag: bool = True) -> bool:
    return on_replica(op, lambda: all((key in op.cluster.protected) == flag for key in keys))


async def test_pdb_events_cost_no_pod_list(four: Cluster) -> None:
    """Every PDB event used to LIST the namespace's pods; protection now comes from the cache."""
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, *gang("a", 2, pc="best-effort"))
        await eventually(lambda: placed(k, "a", 2), what="a bound")
        keys = ["default/a-0", "default/a-1"]
        lists_before = four.server.request_counts[("GET", "pods")]
        await create(k, budget("a", minAvailable=2))
        await eventually(lambda: _async(protected(op, keys)), what="a protected")
        for n in (0, 2, 1, 0):  # (1: a budget of 1 cannot take the whole gang of 2: still protected)
            await k.patch(f"{PDBS}/a", {"spec": {"minAvailable": n}})
            want = n >= 1
            await eventually(functools.partial(_protected_async, op, keys, want), what=f"a protected={want}")
        await k.delete(f"{PDBS}/a")
        await eventually(lambda: _async(protected(op, keys, False)), what="a unprotected")
        assert four.server.request_counts[("GET", "pods")] == lists_before


async def _async(value: bool) -> bool:
    return value


async def _protected_async(op: Any, keys: list[str], flag: bool) -> bool:
    return protected(op, keys, flag)


async def test_victims_under_an_exhausted_budget_are_avoided_and_never_asked(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, *gang("a", 2, pc="best-effort"), *gang("b", 2, pc="batch"))
        await eventually(lambda: placed(k, "a", 2), what="a bound")
        await eventually(lambda: placed(k, "b", 2), what="b bound")
        await create(k, budget("a", minAvailable=2))
        await eventually(lambda: _async(protected(op, ["default/a-0", "default/a-1"])), what="a protected")
        assert (await pdb_status(k, "a"))["disruptionsAllowed"] == 0
        await create(k, *gang("high", 2, pc="guarantee"))
        await eventually(lambda: placed(k, "high", 2), what="high bound")
        assert await gone(k, "b")
        assert len(await placed(k, "a", 2) or {}) == 2
        assert four.server.request_counts[EVICTIONS] == 2  # b's two pods, nothing asked of a
        assert op.preemptions.refused == 0 and op.preemptions.throttled == 0


@pytest.mark.parametrize(
    ("owned", "max_unavailable", "victim"),
    [
        pytest.param(False, 1, "b", id="bare-pods-fail-safe-protects-a"),
        pytest.param(True, 2, "a", id="replicaset-owned-budget-of-2-lets-a-go"),
        pytest.param(True, 1, "b", id="budget-of-1-cannot-take-a-gang-of-2"),
    ],
)
async def test_max_unavailable_as_the_disruption_controller_computes_it(
    four: Cluster, owned: bool, max_unavailable: int, victim: str
) -> None:
    """maxUnavailable needs the pods' controller: bare pods get disruptionsAllowed 0 (the controller's
    fail-safe, so a is protected); pods of a ReplicaSet of 2 get maxUnavailable of them; a victim gang larger
    than the budget would be cut short part-way, so it is protected too."""
    k = four.client
    async with replica(four.kubeconfig) as op:
        owner = await replica_set(k, "a", 2) if owned else None
        await create(k, *gang("a", 2, pc="best-effort", owner=owner), *gang("b", 2, pc="batch"))
        await eventually(lambda: placed(k, "a", 2), what="a bound")
        await eventually(lambda: placed(k, "b", 2), what="b bound")
        await create(k, budget("a", maxUnavailable=max_unavailable))

        async def settled() -> bool:
            status = await pdb_status(k, "a")
            return status.get("observedGeneration") == 1 and status["currentHealthy"] == 2

        await eventually(settled, what="a's budget computed")
        status = await pdb_status(k, "a")
        assert status["disruptionsAllowed"] == (max_unavailable if owned else 0)
        assert status["expectedPods"] == (2 if owned else 0)
        await eventually(
            lambda: _async(protected(op, ["default/a-0", "default/a-1"], victim == "b")),
            what="a's protection from the budget",
        )
        await create(k, *gang("high", 2, pc="guarantee"))
        await eventually(lambda: placed(k, "high", 2), what="high bound")
        assert await gone(k, victim)
        other = "b" if victim == "a" else "a"
        assert len(await placed(k, other, 2) or {}) == 2
        assert op.preemptions.refused == 0 and op.preemptions.throttled == 0
        assert four.server.request_counts[EVICTIONS] == 2


async def test_only_protected_victims_are_retried_with_backoff_not_stormed(four: Cluster) -> None:
    """The only victims are protected (last resort): each refused eviction waits a growing backoff (a storm
    sent hundreds per pod and second), the preemptor keeps waiting, and once the budget allows it the retried
    evictions go through without a refusal ever being counted. Durations scaled down: backoff from 0.1 s, not 0.5 s.
    The victims are pods without a gang (see `lone`)."""
    k = four.client
    async with replica(four.kubeconfig) as op:
        on_replica(op, lambda: setattr(op.preemptions, "initial_backoff", 0.1))
        await create(k, *lone("a", 4, pc="best-effort"))
        await eventually(lambda: placed(k, "a", 4), what="a bound")
        await create(k, budget("a", minAvailable=4))
        await eventually(lambda: _async(protected(op, [f"default/a-{i}" for i in range(4)])), what="a protected")
        start = time.monotonic()
        await create(k, *gang("high", 4, pc="guarantee"))

        async def throttled() -> int:
            return on_replica(op, lambda: op.preemptions.throttled) >= 12

        await eventually(throttled, what="three refusals per victim")
        elapsed = time.monotonic() - start
        sent = four.server.request_counts[EVICTIONS]
        assert elapsed >= (0.1 + 0.2) * 0.8, f"{sent} eviction requests in {elapsed:.2f}s: no backoff"
        assert sent <= 4 * 4, sent  # at most the 4th attempt of each victim started meanwhile
        assert on_replica(op, lambda: op.preemptions.requests) == sent
        assert op.preemptions.refused == 0
        await k.patch(f"{PDBS}/a", {"spec": {"minAvailable": 0}})
        await eventually(lambda: placed(k, "high", 4), timeout=30, what="high bound after the budget was relaxed")
        await eventually(lambda: gone(k, "a"), timeout=30, what="every victim evicted")
        # (the operator reads the last answer a moment after the server removed the pod)
        await eventually(
            lambda: _async(on_replica(op, lambda: op.preemptions.evicted) == 4), what="4 evictions answered"
        )
        assert op.preemptions.refused == 0


async def test_a_budget_being_processed_is_retried_after_retry_after(four: Cluster) -> None:
    """A PDB whose status lags its spec answers 429 "is still being processed" with Retry-After (10 upstream:
    eviction.go createTooManyRequestsError, tests/conformance/test_disruption_eviction.py; 3 here); the
    disruption controller observes the new spec right after the first refusal, so the operator's retry is what
    waits: that long (not less), then the eviction goes through: one refusal per victim, one success.
    The victims are pods without a gang (see `lone`): a gang would not be chosen while the cache sees the lag."""
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, *lone("a", 2, pc="best-effort"), *gang("b", 2, pc="best-effort"))
        await eventually(lambda: placed(k, "a", 2), what="a bound")
        await eventually(lambda: placed(k, "b", 2), what="b bound")
        await create(k, budget("a", minAvailable=0), budget("b", minAvailable=2))
        await eventually(lambda: _async(protected(op, ["default/b-0", "default/b-1"])), what="b protected")
        await eventually(lambda: _async(protected(op, ["default/a-0", "default/a-1"], False)), what="a free")
        four.server.registry.pdb_retry_after = 3
        four.server.disruption.delay = 60.0  # the controller lags: a's new spec stays unobserved until told below
        await k.patch(
            f"{PDBS}/a",
            {
                "metadata": {"labels": {"touched": "yes"}},
                "spec": {"minAvailable": 0, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
            },
        )
        for key in ("default/a-0", "default/a-1"):  # the cache has not seen that PDB event yet
            on_replica(op, functools.partial(op.cluster.set_protected, key, False))
        start = time.monotonic()
        await create(k, *gang("high", 2, pc="guarantee"))
        await eventually(lambda: _async(op.preemptions.throttled >= 1), what="an eviction refused with 429")
        four.server.disruption.sync_all()  # observed now: only Retry-After delays the retry
        await eventually(lambda: placed(k, "high", 2), timeout=30, what="high bound")
        elapsed = time.monotonic() - start
        assert await gone(k, "a") and len(await placed(k, "b", 2) or {}) == 2
        assert op.preemptions.throttled >= 1 and op.preemptions.refused == 0
        assert elapsed >= 2.85, elapsed  # Retry-After: 3 was honoured
        assert four.server.request_counts[EVICTIONS] <= 4  # per victim: the 429, then the success
