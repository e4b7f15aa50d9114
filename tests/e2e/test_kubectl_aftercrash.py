"""A gang found partly bound after a crash, end to end with the real kubectl (issue 13's "after a crash" bullet): a
Strict gang of 4 of which a leader that died mid-burst bound 2 (`kubectl create --raw .../pods/<name>/binding`, the very
request a scheduler sends; the kubelet is still pulling images, so they stay Pending), then the operator starts. With
room for the rest the gang is completed and its PodGroup says Scheduled; without, the 2 are evicted after the waiting
time, a Warning names them, and nothing of the gang holds a node. Oracles: cited in
tests/integration/test_operator_partial_gangs.py (scheduler-plugins coscheduling PostFilter/Permit and PodGroup
controller; Koordinator gang once-satisfied; the apiserver's BindingREST and eviction's canIgnorePDB for Pending pods).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.integration.harness import eventually, pod, podgroup, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS
KOORD = "gang.scheduling.koordinator.sh/"


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=NODE, kubelet_start_delay=3600) as cluster:
        yield cluster


@pytest.fixture
async def two() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE, kubelet_start_delay=3600) as cluster:
        yield cluster


async def bind_by_hand(cluster: Cluster, name: str, node: str) -> None:
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": node}}
    path = f"/api/v1/namespaces/default/pods/{name}/binding"
    await kubectl(cluster, "create", "--raw", path, "-f", "-", input=json.dumps(binding))


async def placements(cluster: Cluster) -> dict[str, str]:
    out = await kubectl(
        cluster, "get", "pods", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}\n{end}"
    )
    got = dict(line.split("=", 1) for line in out.splitlines() if line)
    return {n: v for n, v in got.items() if v}


async def events(cluster: Cluster, reason: str) -> str:
    return await kubectl(
        cluster, "get", "events", "--field-selector", f"reason={reason}", "-o", "custom-columns=T:.type,M:.message"
    )


async def test_a_partial_bind_burst_is_completed_when_the_rest_fits(four: Cluster) -> None:
    """Its PodGroup says Scheduling since long ago: the waiting time counts from the restart (it used to time out at
    once and for good, the 2 bound members holding their GPUs)."""
    await kubectl_apply(four, podgroup("g", min_member=4, scheduleTimeoutSeconds=5))
    await kubectl_apply(four, *(pod(f"g-{i}", group="g", gpu=8) for i in range(4)))
    for i in range(2):
        await bind_by_hand(four, f"g-{i}", four.node_names[i])
    status = {"status": {"phase": "Scheduling", "scheduleStartTime": "2024-01-01T00:00:00Z"}}  # the dead leader's
    await kubectl(
        four,
        "patch",
        "podgroups.scheduling.x-k8s.io",
        "g",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    async with replica(four.kubeconfig):

        async def whole() -> dict[str, str] | None:
            got = await placements(four)
            return got if len(got) == 4 else None

        got = await eventually(whole, what="the gang completed")
        assert (got["g-0"], got["g-1"]) == (four.node_names[0], four.node_names[1])

        async def scheduled() -> bool:
            out = await kubectl(
                four, "get", "podgroups.scheduling.x-k8s.io", "g", "-o", "jsonpath={.status.phase} {.status.scheduled}"
            )
            return out == "Scheduled 4"

        await eventually(scheduled, what="PodGroup g Scheduled with 4 bound")

        async def scheduled_event() -> bool:
            return "Normal" in await events(four, "Scheduled")

        await eventually(scheduled_event, what="the Scheduled event")
        assert "g-" not in await events(four, "PartialGangEvicted")


async def test_a_partial_bind_burst_without_room_is_evicted_after_the_waiting_time(two: Cluster) -> None:
    """Koordinator annotations (an annotation-only gang: the operator creates its PodGroup)."""
    gang = {KOORD + "name": "g", KOORD + "min-available": "4", KOORD + "waiting-time": "2s"}
    await kubectl_apply(two, *(pod(f"g-{i}", gpu=8, annotations=gang) for i in range(4)))
    for i in range(2):
        await bind_by_hand(two, f"g-{i}", two.node_names[i])
    async with replica(two.kubeconfig):

        async def warned() -> str | None:
            out = await events(two, "PartialGangEvicted")
            return out if "g-0" in out else None

        out = await eventually(warned, timeout=30, what="the PartialGangEvicted event")
        assert "Warning" in out and "g-1" in out and "starts again whole" in out

        async def released() -> bool:  # evicted (bare pods: deleted; a Job would create them again)
            names = await kubectl(two, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}")
            return set(names.split()) == {"g-2", "g-3"}

        await eventually(released, what="g-0 and g-1 gone")
        assert await placements(two) == {}
        phase = await kubectl(two, "get", "podgroups.scheduling.x-k8s.io", "g", "-o", "jsonpath={.status.phase}")
        assert phase not in ("Scheduled", "Running")


async def test_messages_of_an_invalid_podgroup_describe_the_present(two: Cluster) -> None:
    """Was: "PodGroup default/bad does not exist yet" on its pods, and "2 of 1 members present" on the PodGroup.
    (scheduleTimeoutSeconds above int32: accepted by the CRD schema, refused by the operator: docs/annotations.md.)"""
    await kubectl_apply(two, podgroup("bad", min_member=2, scheduleTimeoutSeconds=9999999999))
    await kubectl_apply(two, *(pod(f"bad-{i}", group="bad", gpu=8) for i in range(2)))
    async with replica(two.kubeconfig):

        async def told() -> str | None:
            out = await kubectl(
                two, "get", "pod", "bad-0", "-o", "jsonpath={.status.conditions[?(@.type=='PodScheduled')].message}"
            )
            return out if "scheduleTimeoutSeconds" in out else None

        message = await eventually(told, what="bad-0's PodScheduled condition names the invalid field")
        assert "is invalid" in message and "does not exist" not in message

        async def status() -> str | None:
            out = await kubectl(two, "get", "podgroups.scheduling.x-k8s.io", "bad", "-o", "jsonpath={.status.message}")
            return out or None

        assert "spec.scheduleTimeoutSeconds" in await eventually(status, what="the PodGroup's message")
        conditions = await kubectl(
            two, "get", "podgroups.scheduling.x-k8s.io", "bad", "-o", "jsonpath={.status.conditions[*].message}"
        )
        assert "2 of 1" not in conditions and "members present" not in conditions
        assert await placements(two) == {}
