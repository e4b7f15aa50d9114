"""PodTopologySpread (DoNotSchedule) for our gangs, end to end with the real kubectl (issue 13 "Why":
`topologySpreadConstraints` maxSkew 1 was violated without a word).

Oracles: kube-scheduler pkg/scheduler/framework/plugins/podtopologyspread/filtering.go (Filter: matching pods in the
node's domain + selfMatch - global minimum <= maxSkew; the minimum is 0 while fewer eligible domains than
minDomains), placing a gang's members one after another as kube-scheduler places pods: six members with maxSkew 1
over three empty zones can only end 2/2/2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, get_podgroup, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
async def three_zones() -> AsyncIterator[Cluster]:
    """Six nodes, two per zone (za, zb, zc), labelled with kubectl."""
    need_tool("kubectl")
    async with running_cluster(nodes=6, node_resources=NODE) as cluster:
        for i in range(6):
            await kubectl(cluster, "label", "node", f"node-{i}", f"{ZONE}=z{'abc'[i // 2]}")
        yield cluster


def member(name: str, group: str, **constraint: Any) -> dict[str, Any]:
    obj = pod(name, group=group, gpu=1, labels={"app": group})
    obj["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": group}},
            **constraint,
        }
    ]
    return obj


async def test_gang_of_six_spreads_two_per_zone(three_zones: Cluster) -> None:
    """Without the constraint, binpack puts all six 1-GPU members on one 8-GPU node."""
    k = three_zones.client
    async with replica(three_zones.kubeconfig):
        members = [member(f"spread-{i}", "spread") for i in range(6)]
        await kubectl(
            three_zones, "apply", "-f", "-", input=yaml.safe_dump_all([podgroup("spread", min_member=6), *members])
        )

        async def six_bound() -> dict[str, str] | None:
            placed = bound(await pods(k))
            return placed if len(placed) == 6 else None

        placed = await eventually(six_bound, what="six members bound")
        zones = Counter(f"z{'abc'[int(node.removeprefix('node-')) // 2]}" for node in placed.values())
        assert zones == {"za": 2, "zb": 2, "zc": 2}
        shown = await kubectl(three_zones, "get", "pods", "-o", "custom-columns=NODE:.spec.nodeName", "--no-headers")
        assert len([line for line in shown.split() if line.startswith("node-")]) == 6


async def test_gang_that_cannot_keep_the_skew_waits_naming_the_plugin(three_zones: Cluster) -> None:
    """minDomains 4 with three zones: the global minimum stays 0, so each zone takes one member; a Strict gang of
    six waits, nothing bound, and its PodGroup says PodTopologySpread."""
    k = three_zones.client
    async with replica(three_zones.kubeconfig):
        members = [member(f"tight-{i}", "tight", minDomains=4) for i in range(6)]
        await kubectl(
            three_zones, "apply", "-f", "-", input=yaml.safe_dump_all([podgroup("tight", min_member=6), *members])
        )

        async def explained() -> str | None:
            pg = await get_podgroup(k, "tight")
            message: str = (pg or {}).get("status", {}).get("message") or ""
            return message if "PodTopologySpread" in message else None

        message = await eventually(explained, what="the PodGroup names PodTopologySpread")
        assert "fewer than minDomains 4" in message
        assert not bound(await pods(k))


async def test_node_taints_policy_honor_leaves_tainted_zone_out(three_zones: Cluster) -> None:
    """zc's nodes tainted with kubectl: with nodeTaintsPolicy Honor they are no domain (matchNodeInclusionPolicies),
    so a gang of four spreads 2/2 over za and zb; with the default Ignore, zc would count with 0 pods and hold
    za and zb to one member each."""
    k = three_zones.client
    for node in ("node-4", "node-5"):
        await kubectl(three_zones, "taint", "node", node, "dedicated=x:NoSchedule")
    async with replica(three_zones.kubeconfig):
        members = [member(f"honor-{i}", "honor", nodeTaintsPolicy="Honor") for i in range(4)]
        await kubectl(
            three_zones, "apply", "-f", "-", input=yaml.safe_dump_all([podgroup("honor", min_member=4), *members])
        )

        async def four_bound() -> dict[str, str] | None:
            placed = bound(await pods(k))
            return placed if len(placed) == 4 else None

        placed = await eventually(four_bound, what="four members bound")
        zones = Counter(f"z{'abc'[int(node.removeprefix('node-')) // 2]}" for node in placed.values())
        assert zones == {"za": 2, "zb": 2}
