"""Group preemption end to end: the operator against the emulator, observed through the API as a user sees it."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, gang_manifests, priority_class
from tests.integration.harness import (
    create,
    events_for,
    eventually,
    get_podgroup,
    on_replica,
    phase_of,
    placed,
    pods,
    replica,
)

NODE = NODE_8_GPUS
STORY_TREE: list[dict[str, Any]] = [
    {"layer": 3, "name": "spine0", "children": ["leaf0", "leaf1"]},
    {"layer": 2, "name": "leaf0", "parents": ["spine0"], "children": ["unit0"]},
    {"layer": 2, "name": "leaf1", "parents": ["spine0"], "children": ["unit1", "unit2"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": [f"node{i}" for i in range(4)]},
    {"layer": 1, "name": "unit1", "parents": ["leaf1"], "children": [f"node{i}" for i in range(4, 8)]},
    {"layer": 1, "name": "unit2", "parents": ["leaf1"], "children": [f"node{i}" for i in range(8, 12)]},
]
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("guarantee", 1000),
    priority_class("guarantee-never", 1000, preemptionPolicy="Never"),
    priority_class("batch", 10),
]


@pytest.fixture
async def story() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=12, node_resources=NODE, topology=STORY_TREE) as cluster:
        await create(
            cluster.client,
            *PRIORITY_CLASSES,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
                "data": {"topology.json": json.dumps(STORY_TREE)},
            },
        )
        yield cluster


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


def gang(
    name: str,
    n: int,
    *,
    pc: str,
    min_member: int | None = None,
    group_size: int | None = None,
    labels: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {}
    if group_size is not None:
        spec["networkTopology"] = {"mode": "soft", "groupSize": group_size}
    return gang_manifests(name, n, pc=pc, min_member=min_member, labels=labels, **spec)


async def gone(k: KubeClient, prefix: str) -> bool:
    return not any(name.startswith(prefix + "-") for name in await pods(k))


async def test_user_story_3_gang3_evicts_exactly_gang2_and_lands_on_node4_to_11(story: Cluster) -> None:
    k = story.client
    async with replica(story.kubeconfig):
        await create(k, *gang("gang1", 4, pc="best-effort", group_size=2))
        assert set((await eventually(lambda: placed(k, "gang1", 4), what="gang1 bound")).values()) == {
            f"node{i}" for i in range(4)
        }
        await create(k, *gang("gang2", 4, pc="best-effort", group_size=2))
        assert set((await eventually(lambda: placed(k, "gang2", 4), what="gang2 bound")).values()) == {
            f"node{i}" for i in range(4, 8)
        }
        await create(k, *gang("gang3", 8, pc="guarantee", group_size=4))
        where = await eventually(lambda: placed(k, "gang3", 8), what="gang3 bound after preemption")
        assert set(where.values()) == {f"node{i}" for i in range(4, 12)}
        assert await gone(k, "gang2")
        assert set((await placed(k, "gang1", 4) or {}).values()) == {f"node{i}" for i in range(4)}
        # the story, as events tell it
        victim_msgs = {
            e["message"] for i in range(4) for e in await events_for(k, f"gang2-{i}") if e["reason"] == "Preempted"
        }
        assert victim_msgs == {"Preempted by gang default/gang3 for tier-2 placement"}
        preempting = [e["message"] for e in await events_for(k, "gang3") if e["reason"] == "Preempting"]
        assert preempting and "default/gang2" in preempting[0] and "default/gang1" not in preempting[0]
        assert any(e["reason"] == "Preempted" for e in await events_for(k, "gang2"))

        async def scheduled() -> bool:
            pg = await get_podgroup(k, "gang3")
            return (pg or {}).get("status", {}).get("phase") in ("Scheduled", "Running")

        await eventually(scheduled, what="gang3 Scheduled")

        async def gang2_condition() -> dict[str, Any] | None:
            pg = await get_podgroup(k, "gang2")
            conds = [c for c in (pg or {}).get("status", {}).get("conditions", []) if c["type"] == "Scheduled"]
            return conds[0] if conds and conds[0]["reason"] == "Preempted" else None

        cond = await eventually(gang2_condition, what="gang2's Scheduled condition says Preempted")
        assert cond["status"] == "False" and "default/gang3" in cond["message"]


async def test_never_and_equal_priority_do_not_preempt(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, *gang("low", 4, pc="best-effort"))
        await eventually(lambda: placed(k, "low", 4), what="low bound")
        await create(k, *gang("same", 2, pc="best-effort"), *gang("never", 2, pc="guarantee-never"))

        async def both_unschedulable() -> bool:
            for name in ("same", "never"):
                pg = await get_podgroup(k, name)
                if "needs 2 pods x" not in (pg or {}).get("status", {}).get("message", ""):
                    return False
            return True

        await eventually(both_unschedulable, what="both gangs reported unschedulable")
        assert len(await placed(k, "low", 4) or {}) == 4
        assert op.preemptions.evicted == 0


async def test_pdb_protected_gang_is_skipped_and_held_nodes_wait_for_the_preemptor(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, *gang("a", 2, pc="best-effort", labels={"app": "a"}))
        await eventually(lambda: placed(k, "a", 2), what="a bound")
        await create(k, *gang("b", 2, pc="best-effort"))
        b_nodes = set((await eventually(lambda: placed(k, "b", 2), what="b bound")).values())
        await create(
            k,
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "a", "namespace": "default"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "a"}}},
            },
        )
        await eventually(lambda: _protected(op, ["default/a-0", "default/a-1"]), what="a's pods protected in the cache")
        # b's pods stay terminating (a finalizer) so the preemptor has to wait with its nodes held
        for i in range(2):
            await k.patch(
                f"/api/v1/namespaces/default/pods/b-{i}", {"metadata": {"finalizers": ["test.gangsched.io/hold"]}}
            )
        await create(k, *gang("high", 2, pc="guarantee"))

        async def nominated() -> dict[str, str] | None:
            ps = await pods(k)
            got = {n: p.get("status", {}).get("nominatedNodeName") for n, p in ps.items() if n.startswith("high-")}
            return got if len(got) == 2 and all(got.values()) else None

        noms = await eventually(nominated, what="high's members nominated")
        assert set(noms.values()) == b_nodes
        now = await pods(k)
        assert all(now[f"b-{i}"]["metadata"].get("deletionTimestamp") for i in range(2))
        # a lower-priority gang arriving meanwhile is not given the held nodes
        await create(k, *gang("late", 1, pc="best-effort"))
        for i in range(2):
            await k.patch(f"/api/v1/namespaces/default/pods/b-{i}", {"metadata": {"finalizers": None}})
        where = await eventually(lambda: placed(k, "high", 2), what="high bound")
        assert set(where.values()) == b_nodes
        assert await placed(k, "late", 1) is None
        assert len(await placed(k, "a", 2) or {}) == 2  # the PDB-protected gang was left alone
        assert op.preemptions.refused == 0

        async def nominations_cleared() -> bool:  # binding keeps nominatedNodeName (1.32); the operator clears it
            after = await pods(k)
            return all(
                not p.get("status", {}).get("nominatedNodeName") for n, p in after.items() if n.startswith("high-")
            )

        await eventually(nominations_cleared, what="high's nominations cleared once bound")


async def test_two_preemptors_take_distinct_victims_and_no_gang_runs_below_quorum(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, *gang("x", 2, pc="best-effort"), *gang("y", 2, pc="best-effort", min_member=1))
        await eventually(lambda: placed(k, "x", 2), what="x bound")
        await eventually(lambda: placed(k, "y", 2), what="y bound")
        await create(k, *gang("p1", 1, pc="guarantee"), *gang("p2", 1, pc="guarantee"))
        await eventually(lambda: placed(k, "p1", 1), what="p1 bound")
        await eventually(lambda: placed(k, "p2", 1), what="p2 bound")
        assert await gone(k, "y")  # one spare member, then the rest: y never ran below its quorum of 1
        assert len(await placed(k, "x", 2) or {}) == 2  # x (quorum 2, no spare) untouched
        preempted = {}

        async def both_recorded() -> bool:  # (events are written asynchronously, after the bindings)
            for i in range(2):
                if not [e for e in await events_for(k, f"y-{i}") if e["reason"] == "Preempted"]:
                    return False
            return True

        await eventually(both_recorded, what="a Preempted event on each victim")
        for i in range(2):
            msgs = [e for e in await events_for(k, f"y-{i}") if e["reason"] == "Preempted"]
            assert len(msgs) == 1 and msgs[0].get("count", 1) == 1, msgs  # each victim taken once
            preempted[f"y-{i}"] = msgs[0]["message"]
        assert sorted(preempted.values()) == [
            "Preempted by gang default/p1 for gang placement",
            "Preempted by gang default/p2 for gang placement",
        ]
        assert op.preemptions.evicted == 2


async def test_gang_that_gives_up_clears_its_nominations(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig):
        low = gang("low", 4, pc="best-effort")
        for m in low[1:]:  # the waiting time is suspended for the victims' grace period: keep it short
            m["spec"]["terminationGracePeriodSeconds"] = 3
        await create(k, *low)
        await eventually(lambda: placed(k, "low", 4), what="low bound")
        for i in range(4):  # the victims never finish terminating
            await k.patch(
                f"/api/v1/namespaces/default/pods/low-{i}", {"metadata": {"finalizers": ["test.gangsched.io/hold"]}}
            )
        urgent = gang("urgent", 2, pc="guarantee")
        urgent[0]["spec"]["scheduleTimeoutSeconds"] = 2
        await create(k, *urgent)

        async def nominations() -> dict[str, str | None]:
            ps = await pods(k)
            return {n: p.get("status", {}).get("nominatedNodeName") for n, p in ps.items() if n.startswith("urgent-")}

        async def nominated() -> bool:
            return all((await nominations()).values())

        async def cleared() -> bool:
            return not any((await nominations()).values())

        await eventually(nominated, what="urgent's members nominated")
        await eventually(cleared, timeout=15, what="nominations cleared after the waiting time ended")
        # the PodGroup's status is written apart from the pods' (its own path, coalesced: k8s/coalescing.py min_gap)
        await eventually(_phase_is(k, "urgent", "Timeout"), timeout=5, what="urgent's PodGroup phase Timeout")
        for i in range(4):
            await k.patch(f"/api/v1/namespaces/default/pods/low-{i}", {"metadata": {"finalizers": None}})


def _short_retries(op: Any) -> None:
    op.preemptions.retry_window, op.preemptions.initial_backoff, op.preemptions.attempts = 1.0, 0.1, 3


def _phase_is(k: Any, name: str, phase: str) -> Any:
    async def probe() -> bool:
        return await phase_of(k, name) == phase

    return probe


async def _protected(op: Any, keys: list[str]) -> bool:
    return on_replica(op, lambda: all(key in op.cluster.protected for key in keys))


async def test_refused_eviction_makes_the_operator_choose_again(four: Cluster) -> None:
    """The Eviction API has the last word: a PDB the cache has not caught up with yet refuses (429), and the
    core chooses other victims; the protected gang stays whole."""
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, *gang("x", 2, pc="best-effort"), *gang("y", 2, pc="batch"))
        await eventually(lambda: placed(k, "x", 2), what="x bound")
        await eventually(lambda: placed(k, "y", 2), what="y bound")
        await create(
            k,
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "x", "namespace": "default"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"scheduling.x-k8s.io/pod-group": "x"}}},
            },
        )
        keys = ["default/x-0", "default/x-1"]
        await eventually(lambda: _protected(op, keys), what="x protected")
        for key in keys:  # the cache lags behind the PDB: x (the lowest priority) looks like the best victim
            on_replica(op, functools.partial(op.cluster.set_protected, key, False))
        # 429s are retried while the preemptor waits, within a window (30 s by default; short here)
        on_replica(op, lambda: _short_retries(op))
        await create(k, *gang("high", 2, pc="guarantee"))
        await eventually(lambda: placed(k, "high", 2), what="high bound")
        assert await gone(k, "y")
        assert len(await placed(k, "x", 2) or {}) == 2
        assert op.preemptions.refused == 2
        assert "EvictionRefused" in {e["reason"] for e in await events_for(k, "x-0")}
