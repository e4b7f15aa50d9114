"""The operator end to end against the emulator: each gang rule observed through the API, as a user sees it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.cluster import create_nodes
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, koordinator_annotations
from tests.integration.harness import (
    bindings_counted,
    bound,
    create,
    events_for,
    eventually,
    get_podgroup,
    phase_of,
    pod,
    podgroup,
    pods,
    replica,
    stop_replica,
)

NODE = NODE_8_GPUS


@pytest.fixture
async def cluster4() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


async def test_gang_that_fits_is_bound_whole_and_status_tells(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig) as op:
        await create(k, podgroup("train", min_member=4), *(pod(f"train-{i}", group="train", gpu=8) for i in range(4)))
        assert await eventually(lambda: phase_of(k, "train"), what="train phase") in {
            "Scheduling",
            "Scheduled",
            "Running",
        }
        await eventually(lambda: _phase_is(k, "train", "Running"), what="train Running")
        placed = bound(await pods(k))
        assert sorted(placed) == [f"train-{i}" for i in range(4)]
        assert len(set(placed.values())) == 4  # 8 GPUs each: one per node
        train = await get_podgroup(k, "train")
        assert train is not None
        status = train["status"]
        assert (status["scheduled"], status["running"], status["observedGeneration"]) == (4, 4, 1)
        assert status["scheduleStartTime"]
        scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
        assert scheduled["status"] == "True"

        async def scheduled_event() -> bool:  # recorded once the binds succeeded, sent after the status
            return "Scheduled" in {e["reason"] for e in await events_for(k, "train")}

        await eventually(scheduled_event, what="the PodGroup's Scheduled event")
        metrics = op.metrics.render().decode()
        assert "gangsched_bound_pods_total 4.0" in metrics
        assert "gangsched_gang_wait_seconds_count 1.0" in metrics
        assert op.health()["ready"] and op.health()["leader"]


async def test_strict_gang_that_does_not_fit_binds_nothing_then_binds_when_a_node_joins(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig):
        await create(k, podgroup("big", min_member=5), *(pod(f"big-{i}", group="big", gpu=8) for i in range(5)))

        async def explained() -> Any:
            pg = await get_podgroup(k, "big")
            msg = (pg or {}).get("status", {}).get("message", "")
            return msg if "needs 5 pods x" in msg else None

        message = await eventually(explained, what="a reason naming the missing resource")
        assert "nvidia.com/gpu: 8" in message and "4 nodes fit" in message
        everything = await pods(k)
        assert bound(everything) == {}
        conditions = [c for c in everything["big-0"]["status"].get("conditions", []) if c["type"] == "PodScheduled"]
        assert conditions and conditions[0]["status"] == "False"
        # a fifth node makes room: the whole gang is bound, not a part of it
        await create_nodes(k, ["node-4"], NODE)
        await eventually(lambda: _all_bound(k, [f"big-{i}" for i in range(5)]), what="all five bound")
        assert len(set(bound(await pods(k)).values())) == 5


async def test_nonstrict_gang_times_out_releases_and_marks_its_pods(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig):
        await create(
            k,
            podgroup("slow", min_member=6, mode="NonStrict", scheduleTimeoutSeconds=1),
            *(pod(f"slow-{i}", group="slow", gpu=8) for i in range(6)),
        )
        await eventually(lambda: _phase_is(k, "slow", "Timeout"), what="Timeout phase")

        async def annotated() -> bool:
            ps = await pods(k)
            return all(
                p["metadata"].get("annotations", {}).get("gang.scheduling.koordinator.sh/timeout") == "true"
                for p in ps.values()
            )

        await eventually(annotated, what="timeout annotation on every member")
        assert bound(await pods(k)) == {}
        assert "GangTimeout" in {e["reason"] for e in await events_for(k, "slow")}
        # the released capacity is free again: a gang that fits now binds
        await create(k, podgroup("after", min_member=4), *(pod(f"after-{i}", group="after", gpu=8) for i in range(4)))
        await eventually(lambda: _all_bound(k, [f"after-{i}" for i in range(4)]), what="the next gang bound")


async def test_gang_group_binds_only_when_every_gang_is_satisfied(cluster4: Cluster) -> None:
    k = cluster4.client
    await create(k, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}})
    async with replica(cluster4.kubeconfig) as op:
        await create(
            k,
            podgroup("a", min_member=2, gangGroup=["default/a", "team-b/b"]),
            podgroup("b", namespace="team-b", min_member=2, gangGroup=["default/a", "team-b/b"]),
            pod("a-0", group="a"),
            pod("a-1", group="a"),
            pod("b-0", namespace="team-b", group="b"),
        )
        # (issue 13 item 6: a holds nothing until b has its pods, tests/integration/test_operator_gang_incarnations.py)
        await eventually(lambda: _status_says(k, "a", "waiting for gang group: team-b/b has 1"), what="a waits for b")
        assert bound(await pods(k, "default")) == {}
        assert bound(await pods(k, "team-b")) == {}
        await create(k, pod("b-1", namespace="team-b", group="b"))
        await eventually(lambda: _all_bound(k, ["a-0", "a-1"]), what="gang a bound")
        await eventually(lambda: _all_bound(k, ["b-0", "b-1"], namespace="team-b"), what="gang b bound")
        await bindings_counted(op, 4)


async def test_annotation_only_gang_gets_a_podgroup_deleted_with_its_pods(cluster4: Cluster) -> None:
    k = cluster4.client
    koord = koordinator_annotations("koord", 2)
    async with replica(cluster4.kubeconfig):
        await create(k, pod("koord-0", annotations=koord))
        pg = await eventually(lambda: get_podgroup(k, "koord"), what="PodGroup created for the gang")
        assert pg["spec"]["minMember"] == 2
        assert pg["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gangsched"
        await create(k, pod("koord-1", annotations=koord))  # a member joining later becomes an owner too
        await eventually(lambda: _all_bound(k, ["koord-0", "koord-1"]), what="annotation gang bound")

        async def owned_by_both() -> bool:
            pg = await get_podgroup(k, "koord")
            return {o["name"] for o in (pg or {}).get("metadata", {}).get("ownerReferences", [])} == {
                "koord-0",
                "koord-1",
            }

        await eventually(owned_by_both, what="both members own the PodGroup")
        await eventually(lambda: _phase_is(k, "koord", "Running"), what="its status written")
        for name in ("koord-0", "koord-1"):
            await k.delete(f"/api/v1/namespaces/default/pods/{name}")

        async def gone() -> bool:
            return await get_podgroup(k, "koord") is None

        await eventually(gone, what="PodGroup garbage-collected with its last pod")


async def test_bad_gang_annotation_gets_an_event_and_the_loop_goes_on(cluster4: Cluster) -> None:
    k = cluster4.client
    bad = koordinator_annotations("bad", "abc")
    async with replica(cluster4.kubeconfig):
        await create(k, pod("bad-0", annotations=bad))

        async def warned() -> Any:
            events = [e for e in await events_for(k, "bad-0") if e["type"] == "Warning"]
            return events[0] if events else None

        event = await eventually(warned, what="a Warning event on the bad pod")
        assert "gang.scheduling.koordinator.sh/min-available" in event["message"]
        assert '"abc"' in event["message"]
        await create(k, podgroup("good", min_member=2), pod("good-0", group="good"), pod("good-1", group="good"))
        await eventually(lambda: _all_bound(k, ["good-0", "good-1"]), what="a good gang still scheduled")
        assert "bad-0" not in bound(await pods(k))


async def test_restart_keeps_a_satisfied_gang_satisfied_and_double_binds_nothing(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig, identity="first") as first:
        await create(k, podgroup("job", min_member=3), *(pod(f"job-{i}", group="job", gpu=4) for i in range(3)))
        await eventually(lambda: _phase_is(k, "job", "Running"), what="job running")
        await bindings_counted(first, 3)
        # mid-gang: a second gang with 2 of its 3 members, waiting without reservations
        await create(k, podgroup("half", min_member=3), pod("half-0", group="half"), pod("half-1", group="half"))
        await eventually(lambda: _phase_in(k, "half", {"Pending"}), what="half waiting")
    placed_before = bound(await pods(k))
    async with replica(cluster4.kubeconfig, identity="second") as second:
        # a replacement member of the satisfied gang schedules alone (its 3 bound members hold the quorum)
        await create(k, pod("job-3", group="job", gpu=4))
        await eventually(lambda: _all_bound(k, ["job-3"]), what="replacement bound")
        await create(k, pod("half-2", group="half"))
        await eventually(lambda: _all_bound(k, ["half-0", "half-1", "half-2"]), what="half bound after restart")
        await bindings_counted(second, 4)
        after = bound(await pods(k))
        assert {n: after[n] for n in placed_before} == placed_before  # nothing re-bound
        assert not [
            e for e in (await k.get("/api/v1/namespaces/default/events"))["items"] if e["reason"] == "FailedBinding"
        ]


async def test_two_replicas_never_both_bind(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig, identity="one", leader_election=True) as one:
        async with replica(cluster4.kubeconfig, identity="two", leader_election=True) as two:
            await eventually(lambda: _a_leader(one, two), what="a leader elected")
            await create(k, podgroup("g", min_member=4), *(pod(f"g-{i}", group="g", gpu=2) for i in range(4)))
            await eventually(lambda: _all_bound(k, [f"g-{i}" for i in range(4)]), what="gang bound")

            async def counted() -> bool:  # the binder counts after the API's answer, which the test may see first
                return one.bound + two.bound == 4

            await eventually(counted, what="the bindings counted")
            assert sorted([one.bound, two.bound]) == [0, 4]
            assert [op.is_leader for op in (one, two)].count(True) == 1


async def test_follower_takes_over_when_the_leader_stops(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig, identity="one", leader_election=True) as one:
        await eventually(lambda: _a_leader(one), what="one leads")
        async with replica(cluster4.kubeconfig, identity="two", leader_election=True) as two:
            assert not two.is_leader
            await create(k, podgroup("x", min_member=2), pod("x-0", group="x"), pod("x-1", group="x"))
            await eventually(lambda: _all_bound(k, ["x-0", "x-1"]), what="x bound by one")
            await bindings_counted(one, 2)
            assert two.bound == 0
            await stop_replica(one)  # gives the lease up
            await eventually(lambda: _a_leader(two), what="two takes over")
            await create(k, podgroup("y", min_member=2), pod("y-0", group="y"), pod("y-1", group="y"))
            await eventually(lambda: _all_bound(k, ["y-0", "y-1"]), what="y bound by two")
            await bindings_counted(two, 2)


# ------------------------------------------------------------------ probes
async def _phase_is(k: KubeClient, name: str, phase: str, namespace: str = "default") -> bool:
    return await phase_of(k, name, namespace) == phase


async def _phase_in(k: KubeClient, name: str, phases: set[str], namespace: str = "default") -> bool:
    return await phase_of(k, name, namespace) in phases


async def _status_says(k: KubeClient, name: str, text: str) -> bool:
    pg = await get_podgroup(k, name)
    return text in str((pg or {}).get("status", {}).get("message", ""))


async def _all_bound(k: KubeClient, names: list[str], namespace: str = "default") -> bool:
    placed = bound(await pods(k, namespace))
    return all(n in placed for n in names)


async def _a_leader(*ops: Any) -> bool:
    return any(op.is_leader for op in ops)
