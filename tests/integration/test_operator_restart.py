"""Restart safety end to end (issue 4 item 6, issue 6 item 3): what one leader held in memory only (nominations,
their victims, a gang's waiting-time start) survives its replacement by a new replica or a follower taking over.
Observed through the API against the emulator, as a user sees it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.models.timestamps import parse_time
from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import (
    bindings_counted,
    create,
    events_for,
    eventually,
    get_podgroup,
    on_replica,
    placed,
    pod,
    podgroup,
    pods,
    replica,
    stop_replica,
)
from tests.integration.test_operator_preemption import NODE, PRIORITY_CLASSES, gang

HOLD = "test.gangsched.io/hold"


@pytest.fixture
async def two() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


async def _nominations(k: KubeClient, prefix: str) -> dict[str, str | None]:
    return {
        n: p.get("status", {}).get("nominatedNodeName")
        for n, p in (await pods(k)).items()
        if n.startswith(prefix + "-")
    }


async def _all_nominated(k: KubeClient, prefix: str, n: int) -> dict[str, str | None] | None:
    got = await _nominations(k, prefix)
    return got if len(got) == n and all(got.values()) else None


async def _terminating(k: KubeClient, names: list[str]) -> bool:
    ps = await pods(k)
    return all(ps.get(n, {}).get("metadata", {}).get("deletionTimestamp") for n in names)


async def _status_message(k: KubeClient, name: str) -> str:
    pg = await get_podgroup(k, name)
    return str((pg or {}).get("status", {}).get("message", ""))


@pytest.mark.parametrize(
    "handover",
    [
        pytest.param("restart", id="leader-restarts"),
        pytest.param("takeover", id="follower-takes-over"),
        pytest.param("stall", id="leader-loses-its-lease-and-leads-again"),
    ],
)
async def test_new_leader_finishes_a_preemption_in_progress(two: Cluster, handover: str) -> None:
    """Victims held Terminating by a finalizer; the leader goes; the new one keeps the nominations, evicts
    nobody else, gives the held nodes to no lower-priority gang, and binds the preemptor there.
    "stall": an API stall longer than the lease (the emulator holds every request for 5 s) ends the leader's
    leadership; it drops its in-memory state, rebuilds as a follower, and when it leads again it restores like a
    new leader (issue 11 items 2 and 6)."""
    k = two.client
    election = handover in ("takeover", "stall")
    async with contextlib.AsyncExitStack() as stack:
        old = await stack.enter_async_context(replica(two.kubeconfig, identity="old", leader_election=election))
        await eventually(lambda: _is_leader(old), what="old leads")
        follower = None
        if handover == "takeover":  # (when stalled, the old leader is alone: it must lead again itself)
            follower = await stack.enter_async_context(replica(two.kubeconfig, identity="new", leader_election=True))
        await create(k, *gang("low", 2, pc="best-effort"))
        await eventually(lambda: placed(k, "low", 2), what="low bound")
        for i in range(2):  # the victims will stay Terminating until the test lets them go
            await k.patch(f"/api/v1/namespaces/default/pods/low-{i}", {"metadata": {"finalizers": [HOLD]}})
        await create(k, *gang("high", 2, pc="guarantee"))
        nominated = await eventually(lambda: _all_nominated(k, "high", 2), what="high's members nominated")
        await eventually(lambda: _terminating(k, ["low-0", "low-1"]), what="low evicted (Terminating)")
        await eventually(lambda: _evicted(old, 2), what="the old leader's two evictions answered")
        bound_before = old.bound
        if handover == "stall":
            assert old.elector is not None
            term, cache = old.elector.term, old.cache
            two.server.requests.hold(5.0)
            await eventually(lambda: _not_leader(old), timeout=5, what="the stalled leader stops leading")
            new = old
            await eventually(lambda: _leads_again(old, term), timeout=30, what="it leads again, in a new term")
            assert old.cache is not cache and old.rebuilds >= 1  # rebuilt from the API, not kept in memory
        else:
            await stop_replica(old)
            new = (
                follower
                if follower is not None
                else await stack.enter_async_context(replica(two.kubeconfig, identity="new"))
            )
        await eventually(lambda: _is_leader(new), what="the new replica leads")
        await create(k, *gang("late", 1, pc="best-effort"))  # lower priority, arriving while nodes are held
        await eventually(
            lambda: _mentions(k, "late", "needs 1 pod x"), what="the new leader reports late unschedulable"
        )
        assert await _nominations(k, "high") == nominated  # held, not cleared, not moved
        assert new.preemptions.evicted == 0  # no second set of victims

        for i in range(2):
            await k.patch(f"/api/v1/namespaces/default/pods/low-{i}", {"metadata": {"finalizers": None}})
        where = await eventually(lambda: placed(k, "high", 2), what="high bound after the victims went")
        assert where == nominated
        assert await placed(k, "late", 1) is None

        async def counted() -> bool:  # the binder counts after the API's answer, which the test may see first
            return new.bound - (bound_before if new is old else 0) == 2

        await eventually(counted, what="the new leader's bindings counted")
        assert new.preemptions.evicted == 0
        for i in range(2):  # each victim was evicted once
            preempted = [e for e in await events_for(k, f"low-{i}") if e["reason"] == "Preempted"]
            assert len(preempted) == 1 and preempted[0].get("count", 1) == 1, preempted
        await eventually(lambda: _no_nominations(k, "high"), what="nominations cleared once bound")


async def test_stale_nominations_of_a_gang_whose_podgroup_went_are_cleared(two: Cluster) -> None:
    """The leader dies after the preemptor's PodGroup went away (the pods stay, their status still nominated):
    the new leader does not hold the nodes for them and clears the stale nominatedNodeName."""
    k = two.client
    async with replica(two.kubeconfig, identity="old") as old:
        await create(k, *gang("low", 2, pc="best-effort"))
        await eventually(lambda: placed(k, "low", 2), what="low bound")
        for i in range(2):
            await k.patch(f"/api/v1/namespaces/default/pods/low-{i}", {"metadata": {"finalizers": [HOLD]}})
        await create(k, *gang("high", 2, pc="guarantee"))
        await eventually(lambda: _all_nominated(k, "high", 2), what="high's members nominated")
        await stop_replica(old)
    await k.delete("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/high")
    for i in range(2):
        await k.patch(f"/api/v1/namespaces/default/pods/low-{i}", {"metadata": {"finalizers": None}})
    async with replica(two.kubeconfig, identity="new") as new:
        await eventually(lambda: _no_nominations(k, "high"), what="stale nominations cleared")
        await create(k, *gang("late", 2, pc="best-effort"))
        await eventually(lambda: placed(k, "late", 2), what="the freed nodes go to the next gang")
        assert new.preemptions.evicted == 0


async def test_nonstrict_waiting_time_is_not_extended_by_a_restart(two: Cluster) -> None:
    """A NonStrict gang (3 of 3, 2 fit) holds reservations, so its PodGroup shows scheduleStartTime S. The
    operator is down for a while; the new one re-places the gang and times it out at S + wait, not later."""
    k = two.client
    wait = 6
    async with replica(two.kubeconfig, identity="old"):
        await create(
            k,
            podgroup("slow", min_member=3, mode="NonStrict", scheduleTimeoutSeconds=wait),
            *(pod(f"slow-{i}", group="slow", gpu=8) for i in range(3)),
        )
        start_iso = await eventually(lambda: _start_while(k, "slow", "Scheduling"), what="slow Scheduling")
    start = parse_time(start_iso, field="scheduleStartTime")
    # the downtime: a wall-clock condition of the scenario (no race depends on it)
    await eventually(lambda: _after(start + wait - 2), timeout=wait, what="downtime over")
    async with replica(two.kubeconfig, identity="new"):
        pg = await eventually(lambda: _podgroup_in(k, "slow", "Timeout"), timeout=3 * wait, what="slow timed out")
        assert pg["status"]["scheduleStartTime"] == start_iso  # not rewritten by the new leader
        (cond,) = [c for c in pg["status"]["conditions"] if c["type"] == "Timeout"]
        timed_out = parse_time(cond["lastTransitionTime"], field="lastTransitionTime")
        # restarting the clock would end it at (restart + wait) >= start + 2 * wait - 2
        assert timed_out - start <= wait + 2.5, (start_iso, cond["lastTransitionTime"])


# ------------------------------------------------------------------ probes
async def _not_leader(op: Any) -> bool:
    return not op.is_leader


async def _leads_again(op: Any, term: int) -> bool:
    return bool(op.elector.term > term and op.is_leader and op.synced)


async def _is_leader(op: Any) -> bool:
    return bool(op.is_leader)


async def _evicted(op: Any, n: int) -> bool:
    return bool(on_replica(op, lambda: op.preemptions.evicted == n))


async def _mentions(k: KubeClient, name: str, text: str) -> bool:
    return text in await _status_message(k, name)


async def _no_nominations(k: KubeClient, prefix: str) -> bool:
    got = await _nominations(k, prefix)
    return bool(got) and not any(got.values())


async def _start_while(k: KubeClient, name: str, phase: str) -> str | None:
    status = ((await get_podgroup(k, name)) or {}).get("status", {})
    return status.get("scheduleStartTime") if status.get("phase") == phase else None


async def _podgroup_in(k: KubeClient, name: str, phase: str) -> dict[str, Any] | None:
    pg = await get_podgroup(k, name)
    return pg if (pg or {}).get("status", {}).get("phase") == phase else None


async def _after(t: float) -> bool:
    return time.time() >= t


async def test_stale_watch_events_after_our_binding_do_not_unbind_a_pod(two: Cluster) -> None:
    """The watch lags behind the binder: lag-0's events written before its binding (the PodScheduled=False
    condition) reach the cache only after the binder's answer, and its bound event only after a scheduling round
    has run on that stale view. The pod stays bound in the cache and is not bound a second time."""
    k = two.client
    async with replica(two.kubeconfig) as op:
        state: dict[str, Any] = {"held": [], "flushed_at": None, "release": False}
        key = "default/lag-0"

        def install() -> None:
            original = op.pod_reflector._on_event

            def lagging(kind: str, obj: dict[str, Any]) -> None:
                mine = obj["metadata"]["name"] == "lag-0"
                if state["flushed_at"] is None and key in op.cluster.assumed:
                    state["flushed_at"] = op.cycles  # the stale events land after the binder's answer
                    stale = [h for h in state["held"] if not h[1]["spec"].get("nodeName")]
                    state["stale"] = len(stale)
                    for held in stale:
                        original(*held)
                    state["held"] = [h for h in state["held"] if h[1]["spec"].get("nodeName")]
                if mine and kind == "MODIFIED" and not state["release"]:
                    state["held"].append((kind, obj))  # before the binding: stale; after: held until released
                    return
                if state["release"] and state["held"]:
                    for held in state["held"]:
                        original(*held)
                    state["held"] = []
                original(kind, obj)

            op.pod_reflector._on_event = lagging

        on_replica(op, install)
        await create(k, podgroup("lag", min_member=2), pod("lag-0", group="lag", gpu=8))

        async def condition_written() -> bool:
            p = (await pods(k)).get("lag-0", {})
            return any(c.get("type") == "PodScheduled" for c in p.get("status", {}).get("conditions", []))

        await eventually(condition_written, what="lag-0's PodScheduled=False written (its event held)")
        await create(k, pod("lag-1", group="lag", gpu=8))
        where = await eventually(lambda: placed(k, "lag", 2), what="the gang bound")

        async def assumed() -> bool:
            return on_replica(op, lambda: key in op.cluster.assumed)

        await eventually(assumed, what="the binder's answer (lag-0 assumed bound)")
        await create(k, pod("tick-0", scheduler="someone-else"))  # the next event: the stale ones land first

        async def round_after_stale() -> bool:
            return on_replica(op, lambda: state["flushed_at"] is not None and op.cycles > state["flushed_at"])

        await eventually(round_after_stale, what="a scheduling round on the stale view")
        assert on_replica(op, lambda: state["stale"]) >= 1
        assert on_replica(op, lambda: op.cluster.pods[key].node_name) == where["lag-0"]
        on_replica(op, lambda: state.update(release=True))
        await create(k, pod("tick-1", scheduler="someone-else"))  # an event that lets the held ones through
        await eventually(lambda: _confirmed(op, key), what="the bound event confirms the assumption")
        await bindings_counted(op, 2)
        assert (await placed(k, "lag", 2)) == where
        events = (await k.get("/api/v1/namespaces/default/events"))["items"]
        assert not [
            e
            for e in events
            if e["reason"] in ("FailedBinding", "FailedScheduling") and e["involvedObject"]["name"] == "lag-0"
        ]


async def _confirmed(op: Any, key: str) -> bool:
    return on_replica(op, lambda: key not in op.cluster.assumed and op.cluster.pods[key].node_name is not None)


async def test_timed_out_gang_stays_timeout_across_a_restart(two: Cluster) -> None:
    """Issue 14: after a restart a timed-out gang showed `Pending` (the timeout lived in the old leader's memory).
    The new leader reads it back from the pods' `gang.scheduling.koordinator.sh/timeout: "true"` annotation, as
    Koordinator does (its gang-scheduling proposal, koordinator-sh/koordinator docs/proposals/scheduling: Un-reserve
    annotates every pod of a timed-out gang; PreFilter "check[s] whether the Gang has been timeout (check the pod's
    annotation)") and writes Timeout again (scheduler-plugins' apis/scheduling/v1alpha1 PodGroupTimeout: the
    scheduler did not permit minMember pods within the timeout)."""
    k = two.client
    async with replica(two.kubeconfig, identity="old"):
        await create(
            k,
            podgroup("late", min_member=3, mode="NonStrict", scheduleTimeoutSeconds=2),
            *(pod(f"late-{i}", group="late", gpu=8) for i in range(3)),
        )
        await eventually(lambda: _podgroup_in(k, "late", "Timeout"), timeout=20, what="late timed out")
    annotated = {n: p["metadata"].get("annotations", {}) for n, p in (await pods(k)).items() if n.startswith("late-")}
    assert annotated and all(a.get("gang.scheduling.koordinator.sh/timeout") == "true" for a in annotated.values())
    async with replica(two.kubeconfig, identity="new"):
        # the new leader's own status (its message names the restart) is written: still Timeout
        pg = await eventually(lambda: _restored(k, "late"), timeout=20, what="status written by the new leader")
        status = pg["status"]
        assert status["phase"] == "Timeout"
        conditions = {c["type"]: c for c in status["conditions"]}
        assert conditions["Timeout"]["status"] == "True"
        assert (conditions["Scheduled"]["status"], conditions["Scheduled"]["reason"]) == ("False", "GangTimeout")
        assert [
            p
            for p in (await pods(k)).values()
            if p["metadata"]["name"].startswith("late-") and p["spec"].get("nodeName")
        ] == []  # nothing bound after the restart (NonStrict: the released reservations were not taken again)


async def _restored(k: KubeClient, name: str) -> dict[str, Any] | None:
    pg = await get_podgroup(k, name)
    return pg if "before a restart" in str((pg or {}).get("status", {}).get("message")) else None
