"""A native PodGroup's `schedulingConstraints.topology` (issue 25 item 2), with the real kubectl and the operator
in-process against the emulator serving scheduling.k8s.io/v1beta1 with TopologyAwareWorkloadScheduling (its
default profile).

Objects as the API types define them (staging/src/k8s.io/api/scheduling/v1beta1/types.go:
PodGroupSchedulingConstraints.Topology, a list of at most one `{key}`: all the group's pods in one domain of that node
label). Oracle: kube-scheduler 1.37's TopologyAwareWorkloadScheduling (pkg/scheduler/schedule_one_podgroup.go
podGroupSchedulingPlacementAlgorithm: one placement per domain of the key, the group placed whole within one of them
or not at all: "0/N placements are available"). gangsched maps a key that is one of its topology tiers' node labels
(config topology.nodeLabelTiers) onto its own hard networkTopology at that tier; any other key is a one-level domain
of its own (nodes sharing a value of that label; a node without the label is in no domain).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pod, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
TIER1 = "topology.gangsched.io/tier-1"  # the label running_cluster(topology=...) puts on each node for tier 1
TREE = [
    {"layer": 1, "name": "rack-a", "children": ["a0", "a1"]},
    {"layer": 1, "name": "rack-b", "children": ["b0", "b1"]},
]


@pytest.fixture
async def racks() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE) as cluster:
        yield cluster


def constrained(name: str, min_count: int, key: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "schedulingConstraints": {"topology": [{"key": key}]},
        },
    }


def member(name: str, group: str) -> dict[str, Any]:
    body = pod(name, gpu=8)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


def blocker(name: str, node: str) -> dict[str, Any]:
    body = pod(name, gpu=8)
    body["spec"]["nodeName"] = node  # already bound: it fragments the racks
    return body


async def apply(cluster: Cluster, path: Path, *objs: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    await kubectl(cluster, "apply", "-f", str(path))


async def told(cluster: Cluster, names: list[str]) -> bool:
    out = json.loads(await kubectl(cluster, "get", "pods", "-o", "json"))
    waiting = {
        p["metadata"]["name"]
        for p in out["items"]
        for c in (p.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    }
    return set(names) <= waiting


async def test_topology_constraint_on_a_fragmented_cluster(racks: Cluster, tmp_path: Path) -> None:
    """One free node in each rack: a 2-pod gang bound to one rack fits in neither, so none is placed (though two
    nodes are free); once a rack has two free nodes, the gang binds there, whole."""
    names = ["tp-0", "tp-1"]
    async with replica(racks.kubeconfig, topology={"nodeLabelTiers": [TIER1]}):
        await apply(racks, tmp_path / "blockers.yaml", blocker("block-a", "a0"), blocker("block-b", "b0"))
        await apply(racks, tmp_path / "gang.yaml", constrained("tp", 2, TIER1), *(member(n, "tp") for n in names))
        await eventually(lambda: told(racks, names), what="the members told they cannot be placed")
        assert not set(names) & set(bound(await pods(racks.client)))
        why = await kubectl(
            racks, "get", "pod", "tp-0", "-o", 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'
        )
        assert "hard network topology: no domain of tier <= 1 can hold the gang's 2 member(s)" in why, why
        events = json.loads(await kubectl(racks, "get", "events", "-o", "json"))["items"]
        assert not [e for e in events if e.get("reason") == "UnsupportedField"]  # a tier's label: honoured
        await kubectl(racks, "delete", "pod", "block-a", "--wait=true")

        async def placed() -> dict[str, str] | None:
            got = {n: node for n, node in bound(await pods(racks.client)).items() if n in names}
            return got if len(got) == 2 else None

        nodes = await eventually(placed, what="the gang bound in one rack")
        assert set(nodes.values()) == {"a0", "a1"}, nodes


async def test_topology_key_not_a_tier_is_a_domain_of_its_own(racks: Cluster, tmp_path: Path) -> None:
    """A key that is no tier's label (issue 25: "any other node label key works as its own one-level domain"): nodes
    labelled rack=a (a0, a1) and rack=b (b0), b1 without the label; a0 taken. Free: a1, b0, b1, but no rack value has
    two free nodes (b1 is in no domain): the 2-pod gang is not placed, and nothing is reported unsupported; a0 freed,
    it binds on a0 and a1."""
    names = ["rk-0", "rk-1"]
    for node, rack in (("a0", "a"), ("a1", "a"), ("b0", "b")):
        await kubectl(racks, "label", "node", node, f"example.com/rack={rack}")
    async with replica(racks.kubeconfig, topology={"nodeLabelTiers": [TIER1]}):
        await apply(racks, tmp_path / "blockers.yaml", blocker("block-a", "a0"))
        await apply(
            racks, tmp_path / "gang.yaml", constrained("rk", 2, "example.com/rack"), *(member(n, "rk") for n in names)
        )
        await eventually(lambda: told(racks, names), what="the members told they cannot be placed")
        assert not set(names) & set(bound(await pods(racks.client)))
        events = json.loads(await kubectl(racks, "get", "events", "-o", "json"))["items"]
        assert not [e for e in events if e.get("reason") == "UnsupportedField"]  # honoured
        await kubectl(racks, "delete", "pod", "block-a", "--wait=true")

        async def placed() -> dict[str, str] | None:
            got = {n: node for n, node in bound(await pods(racks.client)).items() if n in names}
            return got if len(got) == 2 else None

        nodes = await eventually(placed, what="the gang bound in one rack")
        assert set(nodes.values()) == {"a0", "a1"}, nodes
