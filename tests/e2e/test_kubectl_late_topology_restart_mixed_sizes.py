"""Late members keep a hard topology, topology asked for when none is known, a Running status is no proof after a
restart, gangs of mixed sizes preempt: end to end with the real kubectl (the documented rules of docs/concepts.md and
docs/annotations.md): objects applied with `kubectl apply`, outcomes read with `kubectl get`, the operator in-process
against the emulator.

- Topology, late members: "a replacement of a hard tier-1 gang landed in another unit". The replacement of a
  satisfied gang now waits for room in the gang's unit although another unit has room. Oracle: the
  network-topology-aware PodGroup design (seed 004: `hard` mode never places a member above highestTierAllowed);
  Volcano's network-topology-aware scheduling keeps a job's later pods in the HyperNode its first pods were
  bound to (volcano pkg/scheduler/actions/allocate/allocate.go, `allocateForJob` with the job's
  `AllocatedHyperNode`, hard mode).
- Topology when none is known: "a gang asking for topology when none is known is placed without a word". `soft`
  is placed with a Warning `TopologyUnknown`; `hard` waits with a message and a Warning and is placed at tier 1
  once the topology ConfigMap is applied.
- Gang incarnations: "after a restart `status.phase` is trusted as proof of satisfaction even when no member is
  bound". A PodGroup whose status says Running (written with `kubectl patch --subresource=status`) while none of
  its pods is bound is gang-scheduled by an operator that starts then. Oracle: Koordinator's coscheduling derives
  satisfaction from its pods (pkg/scheduler/plugins/coscheduling/core/gang.go `isGangValidForPermit`:
  bound + waiting >= min), never from a stored phase.
- Preemption (d): "gangs with members of different sizes never preempt, with no message". A gang of a 6-GPU and
  two 1-GPU members preempts one 8-GPU pod of lower priority and says so. Oracle: kube-scheduler's
  DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go) preempts for any
  pod whatever its size; the Preempted event on the victim is kube-scheduler's
  (pkg/scheduler/framework/preemption/preemption.go `prepareCandidate`: "Preempted by pod ... on node ...").
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, priority_class
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS
OPERATOR_NS = "gangsched-system"
UNITS = [
    {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["n0", "n1"]},
    {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["n2", "n3", "n4"]},
]
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("guarantee", 1000),
]


async def apply(cluster: Cluster, *objs: dict[str, Any]) -> None:
    await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(objs))


async def delete_pod(cluster: Cluster, name: str) -> None:
    await kubectl(cluster, "delete", "pod", name, "--grace-period=0", "--force", "--wait=true")


def topology(tree: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gangsched-topology", "namespace": OPERATOR_NS},
        "data": {"topology.json": json.dumps(tree)},
    }


def blocker(name: str, node: str) -> dict[str, Any]:
    """A pod another scheduler bound: it takes a whole node's GPUs."""
    obj = pod(name, gpu=8, scheduler="default-scheduler")
    obj["spec"]["nodeName"] = node
    return obj


async def node_names(cluster: Cluster, prefix: str) -> dict[str, str]:
    out = await kubectl(
        cluster, "get", "pods", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}\n{end}"
    )
    got = dict(line.split("=", 1) for line in out.splitlines() if line)
    return {n: v for n, v in got.items() if n.startswith(prefix) and v}


async def all_on_nodes(cluster: Cluster, prefix: str, n: int) -> dict[str, str] | None:
    got = await node_names(cluster, prefix)
    return got if len(got) == n else None


async def warnings(cluster: Cluster, name: str) -> str:
    return await kubectl(
        cluster,
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name={name},type=Warning",
        "-o",
        "custom-columns=REASON:.reason,MESSAGE:.message",
    )


async def message_of(cluster: Cluster, name: str) -> str:
    return await kubectl(cluster, "get", "podgroups.scheduling.x-k8s.io", name, "-o", "jsonpath={.status.message}")


@pytest.fixture
async def units() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=UNITS) as cluster:
        yield cluster


async def test_replacement_of_a_hard_tier1_gang_waits_for_room_in_its_unit(units: Cluster) -> None:
    unit1 = {"n2", "n3", "n4"}
    async with replica(units.kubeconfig):
        await apply(units, topology(UNITS), blocker("busy-0", "n0"), blocker("busy-1", "n1"))
        gang = [podgroup("g", min_member=2, networkTopology={"mode": "hard", "highestTierAllowed": 1})]
        gang += [pod(f"g-{i}", group="g", gpu=8) for i in range(3)]
        await apply(units, *gang)
        placed = await eventually(lambda: all_on_nodes(units, "g-", 3), what="g bound in unit1")
        assert set(placed.values()) == unit1, placed
        # g-2 is replaced (2 members still bound: the gang stays satisfied) while its node is taken by another
        # scheduler's pod and unit0 has room again
        await delete_pod(units, "g-2")
        await apply(units, blocker("busy-2", placed["g-2"]))
        await delete_pod(units, "busy-1")
        await apply(units, pod("g-2", group="g", gpu=8))

        async def waits() -> str | None:
            text = await warnings(units, "g-2")
            return text if "no room left in the gang's tier-1 domain unit1" in text else None

        await eventually(waits, what="the replacement waits for its unit")
        assert "g-2" not in await node_names(units, "g-")  # n1 (unit0) is free, but not the gang's unit
        await delete_pod(units, "busy-2")
        got = await eventually(lambda: all_on_nodes(units, "g-", 3), what="the replacement bound in unit1")
        assert got["g-2"] == placed["g-2"]


async def test_topology_asked_when_none_is_known_is_said_and_hard_waits_for_one() -> None:
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=NODE) as cluster, replica(cluster.kubeconfig):
        soft = [podgroup("soft", min_member=2, networkTopology={"mode": "soft", "highestTierAllowed": 1})]
        await apply(cluster, *soft, *(pod(f"soft-{i}", group="soft", gpu=8) for i in range(2)))
        await eventually(lambda: all_on_nodes(cluster, "soft-", 2), what="soft placed without a topology")

        async def soft_warned() -> str | None:
            text = await warnings(cluster, "soft")
            return text if "TopologyUnknown" in text else None

        assert "no topology is known" in await eventually(soft_warned, what="a Warning on soft")
        hard = [podgroup("hard", min_member=2, networkTopology={"mode": "hard", "highestTierAllowed": 1})]
        await apply(cluster, *hard, *(pod(f"hard-{i}", group="hard", gpu=8) for i in range(2)))

        async def hard_waits() -> str | None:
            text = await message_of(cluster, "hard")
            return text if "no topology is known" in text else None

        assert "hard network topology requested" in await eventually(hard_waits, what="hard says why it waits")
        assert "no topology is known" in await warnings(cluster, "hard")
        assert not await node_names(cluster, "hard-")
        tree = [
            {"layer": 1, "name": "unit0", "children": ["node-0", "node-1"]},
            {"layer": 1, "name": "unit1", "children": ["node-2", "node-3"]},
        ]
        await apply(cluster, topology(tree))
        placed = await eventually(lambda: all_on_nodes(cluster, "hard-", 2), what="hard placed once a tree is known")
        assert set(placed.values()) in ({"node-0", "node-1"}, {"node-2", "node-3"}), placed

        async def tier1() -> bool:
            return (
                await kubectl(
                    cluster, "get", "podgroups.scheduling.x-k8s.io", "hard", "-o", "jsonpath={.status.placedTier}"
                )
                == "1"
            )

        await eventually(tier1, what="hard's TIER 1")


async def test_a_running_status_is_no_proof_for_an_operator_that_starts_after_a_restart() -> None:
    need_tool("kubectl")
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        # what a restarted job leaves behind while no operator runs: its PodGroup still says Running, its new pods
        # are unbound, and another scheduler's pod takes a node (room for 2 of 3)
        await apply(cluster, podgroup("job", min_member=3), blocker("busy", "node-0"))
        status = '{"status": {"phase": "Running", "running": 3, "scheduled": 3}}'
        await kubectl(
            cluster,
            "patch",
            "podgroups.scheduling.x-k8s.io",
            "job",
            "--subresource=status",
            "--type=merge",
            "-p",
            status,
        )
        await apply(cluster, *(pod(f"job-{i}", group="job", gpu=8) for i in range(3)))
        assert (
            await kubectl(cluster, "get", "podgroups.scheduling.x-k8s.io", "job", "-o", "jsonpath={.status.phase}")
        ) == "Running"
        async with replica(cluster.kubeconfig):

            async def waits() -> str | None:
                text = await message_of(cluster, "job")
                return text if "cannot reach its quorum" in text else None

            await eventually(waits, what="job gang-scheduled again")
            assert not await node_names(cluster, "job-")  # none bound one by one: no partial job
            await delete_pod(cluster, "busy")
            placed = await eventually(lambda: all_on_nodes(cluster, "job-", 3), what="job bound whole")
            assert len(set(placed.values())) == 3


async def test_a_gang_of_mixed_sizes_preempts_and_says_so() -> None:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster, replica(cluster.kubeconfig):
        await apply(cluster, *PRIORITY_CLASSES)
        await apply(cluster, *(pod(f"cheap-{i}", gpu=8, priority_class="best-effort") for i in range(2)))
        await eventually(lambda: all_on_nodes(cluster, "cheap-", 2), what="cheap bound")
        members = [
            pod("mixed-0", group="mixed", gpu=6, priority_class="guarantee"),
            pod("mixed-1", group="mixed", gpu=1, priority_class="guarantee"),
            pod("mixed-2", group="mixed", gpu=1, priority_class="guarantee"),
        ]
        await apply(cluster, podgroup("mixed", min_member=3), *members)
        placed = await eventually(lambda: all_on_nodes(cluster, "mixed-", 3), what="mixed bound after preempting")
        assert len(set(placed.values())) == 1  # the one 8-GPU node freed holds 6 + 1 + 1
        assert len(await node_names(cluster, "cheap-")) == 1  # one victim, not both
        events = await kubectl(
            cluster, "get", "events", "--field-selector", "reason=Preempted", "-o", "custom-columns=M:.message"
        )
        assert "default/mixed" in events, events
        left = await node_names(cluster, "cheap-")
        assert set(bound(await pods(cluster.client))) == {"mixed-0", "mixed-1", "mixed-2", *left}
