"""Gang incarnations and gang groups end to end (issue 13 items 5 and 6): the operator against the emulator.

- A gang group whose partner's pods arrive later (after the waiting time) schedules whole: nothing is reserved
  and no waiting time runs until every gang of the group has its pods (Koordinator's coscheduling,
  pkg/scheduler/plugins/coscheduling/core/core.go `basicGangRequirementsCheck`).
- A satisfied gang whose pods are all deleted and re-created under the same names (a JobSet/TrainJob restart)
  is gang-scheduled again: with room for 3 of its 4 pods none binds; it binds whole once room appears
  (Koordinator core/gang.go `isGangValidForPermit`, GangMatchPolicyWaitingAndRunning: bound + waiting >= min).
- After an operator restart a PodGroup whose status.phase says Running proves nothing: its new, unbound pods
  are gang-scheduled.

Deletion: the tests delete with gracePeriodSeconds=0 (`kubectl delete --grace-period=0 --force`), which the
apiserver honours at once (kubernetes pkg/registry/core/pod/strategy.go `CheckGracefulDelete`: the user's
value wins; an unscheduled or finished pod is deleted immediately).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.integration.harness import bound, create, eventually, get_podgroup, phase_of, pod, podgroup, pods, replica

NODE = NODE_8_GPUS


@pytest.fixture
async def cluster4() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


def _blocker(name: str, node: str) -> dict[str, Any]:
    """A pod another scheduler bound: it takes a whole node's GPUs."""
    obj = pod(name, gpu=8, scheduler="default-scheduler")
    obj["spec"]["nodeName"] = node
    return obj


async def _message(k: KubeClient, name: str, namespace: str = "default") -> str:
    pg = await get_podgroup(k, name, namespace)
    return str((pg or {}).get("status", {}).get("message", ""))


async def _says(k: KubeClient, name: str, text: str, namespace: str = "default") -> str | None:
    message = await _message(k, name, namespace)
    return message if text in message else None


async def _bound(k: KubeClient, names: list[str], namespace: str = "default") -> bool:
    placed = bound(await pods(k, namespace))
    return all(n in placed for n in names)


async def _delete_pods(k: KubeClient, names: list[str]) -> None:
    for name in names:
        await k.delete(f"/api/v1/namespaces/default/pods/{name}", params={"gracePeriodSeconds": "0"})

    async def gone() -> bool:
        return not set(names) & set(await pods(k, "default"))

    await eventually(gone, what="the pods deleted")


async def test_group_whose_partner_pods_arrive_later_schedules_whole(cluster4: Cluster) -> None:
    k = cluster4.client
    group = ["default/a", "team-b/b"]
    await create(k, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}})
    async with replica(cluster4.kubeconfig):
        await create(
            k,
            podgroup("a", min_member=2, gangGroup=group, scheduleTimeoutSeconds=1),
            podgroup("b", namespace="team-b", min_member=2, gangGroup=group, scheduleTimeoutSeconds=1),
            pod("a-0", group="a", gpu=8),
            pod("a-1", group="a", gpu=8),
            pod("b-0", namespace="team-b", group="b", gpu=8),
        )
        message = await eventually(lambda: _says(k, "a", "waiting for gang group"), what="a waits for b's pods")
        assert message == "waiting for gang group: team-b/b has 1 of minMember 2 pods"
        pg = await get_podgroup(k, "a")
        assert pg is not None and pg["status"].get("phase") == "Pending" and not pg["status"].get("scheduleStartTime")
        await asyncio.sleep(2.0)  # the scenario: the partner's pods come 2 s later, past the 1 s waiting time
        assert bound(await pods(k)) == {}
        await create(k, pod("b-1", namespace="team-b", group="b", gpu=8))
        await eventually(lambda: _bound(k, ["a-0", "a-1"]), what="gang a bound")
        await eventually(lambda: _bound(k, ["b-0", "b-1"], "team-b"), what="gang b bound")
        for name, ns in (("a", "default"), ("b", "team-b")):
            pg = await get_podgroup(k, name, ns)
            assert pg is not None and pg["status"].get("phase") != "Timeout"


async def test_restarted_gang_stays_unbound_until_it_fits_whole(cluster4: Cluster) -> None:
    k = cluster4.client
    names = [f"train-{i}" for i in range(4)]
    async with replica(cluster4.kubeconfig):
        await create(k, podgroup("train", min_member=4), *(pod(n, group="train", gpu=8) for n in names))
        await eventually(lambda: _bound(k, names), what="train bound whole")
        # a JobSet restart: every pod deleted and re-created under the same name, while only 3 fit
        await _delete_pods(k, names)
        await create(k, _blocker("blocker", "node-0"))
        await create(k, *(pod(n, group="train", gpu=8) for n in names))
        await eventually(lambda: _says(k, "train", "cannot reach its quorum"), what="the new incarnation waits")
        assert bound(await pods(k)) == {"blocker": "node-0"}  # none bound: not a partial job
        await _delete_pods(k, ["blocker"])
        await eventually(lambda: _bound(k, names), what="train bound whole again")
        assert len(set(bound(await pods(k)).values())) == 4


async def test_after_a_restart_a_running_status_without_bound_members_is_not_trusted(cluster4: Cluster) -> None:
    k = cluster4.client
    names = [f"job-{i}" for i in range(3)]
    async with replica(cluster4.kubeconfig, identity="first"):
        await create(k, podgroup("job", min_member=3), *(pod(n, group="job", gpu=8) for n in names))

        async def running() -> bool:
            return await phase_of(k, "job") == "Running"

        await eventually(running, what="job Running")
    # while no operator runs, the job restarts and two nodes are taken: room for 2 of its 3 pods
    await _delete_pods(k, names)
    await create(k, _blocker("blocker-0", "node-0"), _blocker("blocker-1", "node-1"))
    await create(k, *(pod(n, group="job", gpu=8) for n in names))
    pg = await get_podgroup(k, "job")
    assert pg is not None and pg["status"]["phase"] == "Running"  # the stale status the new leader finds
    async with replica(cluster4.kubeconfig, identity="second"):
        await eventually(lambda: _says(k, "job", "cannot reach its quorum"), what="job gang-scheduled again")
        assert set(bound(await pods(k))) == {"blocker-0", "blocker-1"}
        await _delete_pods(k, ["blocker-0"])
        await eventually(lambda: _bound(k, names), what="job bound whole")
