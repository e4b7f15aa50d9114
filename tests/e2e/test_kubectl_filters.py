"""kube-scheduler's pod constraints for our pods, end to end with the real kubectl (issue 13 "Why": scheduling
gates ignored, hostPort ignored, required pod anti-affinity silently violated; preferred terms: evaluated).

Oracles: KEP-3521 (pod scheduling readiness; kube-apiserver pkg/registry/core/pod/strategy.go
applySchedulingGatedCondition sets PodScheduled=False reason SchedulingGated on create), kube-scheduler
pkg/scheduler/framework/plugins/nodeports (two pods asking for the same hostPort never share a node) and
interpodaffinity/filtering.go (required anti-affinity on kubernetes.io/hostname: one matching pod per node) and
scoring.go (preferred anti-affinity subtracts its weight per matching pod in the domain).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, events_for, eventually, get_podgroup, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS


@pytest.fixture
async def three_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        yield cluster


async def apply(cluster: Cluster, *objs: dict[str, Any]) -> None:
    await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(objs))


def gated(name: str, group: str) -> dict[str, Any]:
    obj = pod(name, group=group, gpu=1)
    obj["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    return obj


async def test_gated_gang_waits_then_binds_whole_when_the_gates_are_removed(three_nodes: Cluster) -> None:
    k = three_nodes.client
    async with replica(three_nodes.kubeconfig):
        members = [gated(f"gated-{i}", "gated") for i in range(3)]
        await apply(three_nodes, podgroup("gated", min_member=3), *members)

        async def waiting() -> str | None:
            pg = await get_podgroup(k, "gated")
            message: str | None = (pg or {}).get("status", {}).get("message")
            return message if message == "3 of 3 members gated" else None

        await eventually(waiting, what="PodGroup says its members are gated")
        assert not bound(await pods(k))
        shown = json.loads(await kubectl(three_nodes, "get", "pod", "gated-0", "-o", "json"))
        condition = next(c for c in shown["status"]["conditions"] if c["type"] == "PodScheduled")
        assert condition["reason"] == "SchedulingGated"  # the apiserver's, left as it is
        await kubectl(three_nodes, "patch", "pod", "gated-0", "--type=json", "-p", GATE_REMOVAL)
        await kubectl(three_nodes, "patch", "pod", "gated-1", "--type=json", "-p", GATE_REMOVAL)

        async def two_gated() -> bool:
            pg = await get_podgroup(k, "gated")
            return bool((pg or {}).get("status", {}).get("message") == "1 of 3 members gated")

        await eventually(two_gated, what="one member still gated")
        assert not bound(await pods(k))  # never a partial gang
        await kubectl(three_nodes, "patch", "pod", "gated-2", "--type=json", "-p", GATE_REMOVAL)

        async def all_bound() -> bool:
            return len(bound(await pods(k))) == 3

        await eventually(all_bound, what="the gang bound whole once the gates are gone")
        gated_events = [e for e in await events_for(k, "gated") if e["reason"] == "SchedulingGated"]
        messages = [e["message"] for e in gated_events]  # one event per change of the message, not per cycle
        assert "3 of 3 members gated" in messages and "1 of 3 members gated" in messages
        assert len(set(messages)) == len(messages) and all(e.get("count", 1) == 1 for e in gated_events)


GATE_REMOVAL = '[{"op": "remove", "path": "/spec/schedulingGates"}]'


async def test_three_pods_with_host_port_8080_never_share_a_node(three_nodes: Cluster) -> None:
    k = three_nodes.client
    async with replica(three_nodes.kubeconfig):
        members = []
        for i in range(4):
            obj = pod(f"web-{i}", group="web", gpu=1)
            obj["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
            members.append(obj)
        await apply(three_nodes, podgroup("web", min_member=3), *members)

        async def three_bound() -> dict[str, str] | None:
            placed = bound(await pods(k))
            return placed if len(placed) == 3 else None

        placed = await eventually(three_bound, what="three web pods bound")
        assert len(set(placed.values())) == 3  # one per node: the fourth has no node with 8080 free
        out = await kubectl(three_nodes, "get", "pods", "--field-selector", "spec.nodeName=", "-o", "name")
        assert out.strip().startswith("pod/web-")

        async def explained() -> bool:
            shown = json.loads(await kubectl(three_nodes, "get", "pod", out.strip().removeprefix("pod/"), "-o", "json"))
            conditions = shown["status"].get("conditions") or []
            return any("host port 8080/TCP in use" in c.get("message", "") for c in conditions)

        await eventually(explained, what="the unplaced pod names the port conflict")


def anti_affine(name: str, group: str) -> dict[str, Any]:
    obj = pod(name, group=group, gpu=1, labels={"app": group})
    term = {"labelSelector": {"matchLabels": {"app": group}}, "topologyKey": "kubernetes.io/hostname"}
    obj["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return obj


async def test_required_anti_affinity_puts_three_members_on_three_nodes(three_nodes: Cluster) -> None:
    k = three_nodes.client
    async with replica(three_nodes.kubeconfig):
        await apply(three_nodes, podgroup("anti", min_member=3), *(anti_affine(f"anti-{i}", "anti") for i in range(3)))

        async def three_bound() -> dict[str, str] | None:
            placed = bound(await pods(k))
            return placed if len(placed) == 3 else None

        placed = await eventually(three_bound, what="three anti-affine members bound")
        assert len(set(placed.values())) == 3  # kube-scheduler's InterPodAffinity: one per hostname
        out = await kubectl(three_nodes, "get", "pods", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName")
        assert len({line.split()[1] for line in out.strip().splitlines()[1:]}) == 3


async def test_required_anti_affinity_gang_larger_than_the_nodes_waits_with_a_message(three_nodes: Cluster) -> None:
    k = three_nodes.client
    async with replica(three_nodes.kubeconfig):
        await apply(three_nodes, podgroup("wide", min_member=4), *(anti_affine(f"wide-{i}", "wide") for i in range(4)))

        async def explained() -> str | None:
            message = str(((await get_podgroup(k, "wide")) or {}).get("status", {}).get("message", ""))
            return message if "InterPodAffinity" in message else None

        message = await eventually(explained, what="the PodGroup names InterPodAffinity")
        assert "one pod per kubernetes.io/hostname" in message, message
        assert not bound(await pods(k))  # Strict: nothing of the gang is bound while 3 nodes take 3 of 4


async def test_preferred_anti_affinity_spreads_the_members_and_is_not_reported(three_nodes: Cluster) -> None:
    """interpodaffinity/scoring.go: a preferred anti-affinity term subtracts its weight for every matching pod in
    the node's domain, so two members that avoid each other by hostname go to two nodes (binpacking alone would
    put both on one 8-GPU node), and nothing is reported unsupported any more."""
    k = three_nodes.client
    async with replica(three_nodes.kubeconfig):
        members = []
        for i in range(2):
            obj = pod(f"soft-{i}", group="soft", gpu=1, labels={"app": "soft"})
            term = {"labelSelector": {"matchLabels": {"app": "soft"}}, "topologyKey": "kubernetes.io/hostname"}
            weighted = [{"weight": 10, "podAffinityTerm": term}]
            obj["spec"]["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": weighted}}
            members.append(obj)
        await apply(three_nodes, podgroup("soft", min_member=2), *members)

        async def both_bound() -> dict[str, str] | None:
            found = bound(await pods(k))
            return found if len(found) == 2 else None

        placed = await eventually(both_bound, what="both members bound")
        assert len(set(placed.values())) == 2, placed
        events = [e for name in ("soft", "soft-0", "soft-1") for e in await events_for(k, name)]
        assert not [e for e in events if e["reason"] == "Unsupported"], events


async def test_required_pod_affinity_puts_the_gang_in_the_domain_of_the_pod_it_follows(three_nodes: Cluster) -> None:
    """interpodaffinity/filtering.go satisfyPodAffinity: every member needs a pod matching its term in the node's
    kubernetes.io/hostname domain, here another scheduler's pod bound to node-2 (binpacking alone would start on
    node-0); a pod whose term matches no pod anywhere (and not itself) waits, naming the plugin."""
    k = three_nodes.client
    async with replica(three_nodes.kubeconfig):
        anchor = pod("db", labels={"app": "db"}, scheduler="default-scheduler")
        anchor["spec"]["nodeName"] = "node-2"
        term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
        members = []
        for i in range(3):
            obj = pod(f"near-{i}", group="near", gpu=1)
            obj["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
            members.append(obj)
        lonely = pod("lonely", gpu=1)
        nowhere = {"labelSelector": {"matchLabels": {"app": "nowhere"}}, "topologyKey": "kubernetes.io/hostname"}
        lonely["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [nowhere]}}
        await apply(three_nodes, anchor, podgroup("near", min_member=3), *members, lonely)

        async def three_bound() -> dict[str, str] | None:
            placed = {n: node for n, node in bound(await pods(k)).items() if n.startswith("near-")}
            return placed if len(placed) == 3 else None

        placed = await eventually(three_bound, what="the three members bound")
        assert set(placed.values()) == {"node-2"}, placed

        async def explained() -> bool:
            shown = json.loads(await kubectl(three_nodes, "get", "pod", "lonely", "-o", "json"))
            conditions = shown["status"].get("conditions") or []
            return any("InterPodAffinity: pod affinity" in c.get("message", "") for c in conditions)

        await eventually(explained, what="the pod without a matching pod names InterPodAffinity")
        assert "lonely" not in bound(await pods(k))
