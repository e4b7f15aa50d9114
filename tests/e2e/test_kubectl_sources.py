"""More gang sources with the real kubectl (issue 14 item 2), objects built the way each controller builds them.

- Kueue plain-pod groups (kubernetes-sigs/kueue pkg/controller/jobs/pod/constants: label
  `kueue.x-k8s.io/pod-group-name`, annotation `kueue.x-k8s.io/pod-group-total-count`, label
  `kueue.x-k8s.io/managed`; pod_webhook.go gates each pod with `kueue.x-k8s.io/admission` and pod_controller.go
  removes the gate once the group's Workload is admitted): the group is one gang of its total count; nothing binds
  while any member is gated; the gang binds whole once the last gate goes.
- LeaderWorkerSet with its Volcano provider (kubernetes-sigs/lws pkg/schedulerprovider/volcano_provider.go
  InjectPodGroupMetadata: annotation `scheduling.k8s.io/group-name` = `<lws>-<group index>-<revision>`; the pods
  carry `leaderworkerset.sigs.k8s.io/size` and the worker-index label, pkg/controllers/pod_controller.go): each group
  is a gang of `size`, all or nothing, a group that cannot fit stays whole pending.
- Koordinator's manual (koordinator.sh docs, gang scheduling): PodGroup in scheduling.sigs.k8s.io/v1alpha1 with
  pods labelled `pod-group.scheduling.sigs.k8s.io`; its `mode: "Strict\\NonStrict"` example value (Strict, as
  Koordinator's coscheduling falls back to Strict), `match-policy` and an unsupported key, each said once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, events_for, eventually, get_podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
K = "gang.scheduling.koordinator.sh/"
SIGS = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups"


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


def container(cpu: str) -> dict[str, Any]:
    return {"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": cpu}}}


def kueue_group(group: str, n: int, cpu: str) -> str:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{group}-{i}",
                "namespace": "default",
                "labels": {
                    "kueue.x-k8s.io/queue-name": "user-queue",
                    "kueue.x-k8s.io/pod-group-name": group,
                    "kueue.x-k8s.io/managed": "true",
                },
                "annotations": {"kueue.x-k8s.io/pod-group-total-count": str(n)},
            },
            "spec": {
                "schedulerName": "gangsched",
                "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                "containers": [container(cpu)],
            },
        }
        for i in range(n)
    ]
    return yaml.safe_dump_all(docs)


async def ungate(cluster: Cluster, name: str) -> None:
    """Kueue's admission: the pod controller removes its scheduling gate."""
    await kubectl(
        cluster, "patch", "pod", name, "--type=json", "-p", '[{"op":"remove","path":"/spec/schedulingGates"}]'
    )


def placed(objs: dict[str, dict[str, Any]], prefix: str) -> dict[str, str]:
    return {n: node for n, node in bound(objs).items() if n.startswith(prefix)}


async def test_kueue_pod_group_binds_whole_once_every_gate_is_gone(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        await kubectl(two_nodes, "apply", "-f", "-", input=kueue_group("kq", 3, cpu="2"))
        await kubectl(two_nodes, "apply", "-f", "-", input=kueue_group("big", 3, cpu="6"))

        async def podgroup_made() -> dict[str, Any] | None:
            return await get_podgroup(k, "kq")

        pg = await eventually(podgroup_made, what="the PodGroup gangsched creates for the Kueue group")
        assert pg["spec"]["minMember"] == 3, pg
        await ungate(two_nodes, "kq-0")
        await ungate(two_nodes, "kq-1")
        for i in range(3):
            await ungate(two_nodes, f"big-{i}")

        async def big_waits() -> str | None:
            status = ((await get_podgroup(k, "big")) or {}).get("status") or {}
            return status.get("message") or None

        await eventually(big_waits, what="the group that cannot fit says why")
        assert not placed(await pods(k), "kq-"), "a Kueue group started before its last member was admitted"
        assert not placed(await pods(k), "big-"), "a Kueue group that cannot fit started partly"
        await ungate(two_nodes, "kq-2")

        async def kq_bound() -> dict[str, str] | None:
            found = placed(await pods(k), "kq-")
            return found if len(found) == 3 else None

        await eventually(kq_bound, what="the admitted Kueue group bound whole")

        async def running() -> bool:
            return bool(((await get_podgroup(k, "kq")) or {}).get("status", {}).get("phase") == "Running")

        await eventually(running, what="its PodGroup Running")
        assert not placed(await pods(k), "big-")


def lws_group(lws: str, group: int, size: int, cpu: str, revision: str = "7c9d6b5f8") -> str:
    docs = []
    for worker in range(size):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{lws}-{group}" if worker == 0 else f"{lws}-{group}-{worker}",
                    "namespace": "default",
                    "labels": {
                        "leaderworkerset.sigs.k8s.io/name": lws,
                        "leaderworkerset.sigs.k8s.io/group-index": str(group),
                        "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
                        "leaderworkerset.sigs.k8s.io/template-revision-hash": revision,
                    },
                    "annotations": {
                        "leaderworkerset.sigs.k8s.io/size": str(size),
                        "scheduling.k8s.io/group-name": f"{lws}-{group}-{revision}",
                    },
                },
                "spec": {"schedulerName": "gangsched", "containers": [container(cpu)]},
            }
        )
    return yaml.safe_dump_all(docs)


async def test_lws_groups_declared_for_volcano_are_gangs_of_their_size(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        await kubectl(two_nodes, "apply", "-f", "-", input=lws_group("vllm", 0, 4, cpu="3"))
        await kubectl(two_nodes, "apply", "-f", "-", input=lws_group("huge", 0, 4, cpu="5"))

        async def group_bound() -> dict[str, str] | None:
            found = placed(await pods(k), "vllm-0")
            return found if len(found) == 4 else None

        await eventually(group_bound, what="the LWS group bound whole")

        async def huge_waits() -> str | None:
            status = ((await get_podgroup(k, "huge-0-7c9d6b5f8")) or {}).get("status") or {}
            return status.get("message") or None

        await eventually(huge_waits, what="the LWS group that cannot fit says why")
        assert not placed(await pods(k), "huge-"), "an LWS group started partly (the issue: half placed)"
        pg = await get_podgroup(k, "vllm-0-7c9d6b5f8")
        assert pg is not None and pg["spec"]["minMember"] == 4, pg


def koordinator_manual(name: str, n: int, cpu: str, **annotations: str) -> str:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": n, "scheduleTimeoutSeconds": 300},
        }
    ]
    for i in range(n):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{i}",
                    "namespace": "default",
                    "labels": {"pod-group.scheduling.sigs.k8s.io": name},
                    "annotations": annotations,
                },
                "spec": {"schedulerName": "gangsched", "containers": [container(cpu)]},
            }
        )
    return yaml.safe_dump_all(docs)


async def test_koordinator_manual_podgroup_and_its_annotations(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        koord = {K + "mode": "Strict\\NonStrict", K + "match-policy": "only-waiting", K + "preemptible": "true"}
        await kubectl(two_nodes, "apply", "-f", "-", input=koordinator_manual("job", 3, cpu="2", **koord))
        await kubectl(two_nodes, "apply", "-f", "-", input=koordinator_manual("toobig", 3, cpu="6"))

        async def running() -> str | None:
            out = await kubectl(
                two_nodes, "get", "podgroups.scheduling.sigs.k8s.io", "job", "-o=jsonpath={.status.phase}"
            )
            return out if out == "Running" else None

        await eventually(running, what="the scheduling.sigs.k8s.io PodGroup's status Running")
        assert len(placed(await pods(k), "job-")) == 3

        async def toobig_waits() -> str | None:
            status = (await k.get(f"{SIGS}/toobig")).get("status") or {}
            return status.get("message") or None

        await eventually(toobig_waits, what="the Koordinator gang that cannot fit says why, on its own object")
        assert not placed(await pods(k), "toobig-")

        async def said() -> dict[str, dict[str, Any]] | None:
            found = {e["reason"]: e for e in await events_for(k, "job") if e["involvedObject"]["kind"] == "PodGroup"}
            wanted = {"InvalidGangMode", "MatchPolicyApproximated", "UnsupportedAnnotation"}
            return found if wanted <= set(found) else None

        events = await eventually(said, what="the notices on the PodGroup")
        assert events["InvalidGangMode"]["type"] == "Warning" and "Strict" in events["InvalidGangMode"]["message"]
        assert events["MatchPolicyApproximated"]["type"] == "Normal"
        assert K + "preemptible" in events["UnsupportedAnnotation"]["message"]
        assert events["InvalidGangMode"]["involvedObject"]["apiVersion"] == "scheduling.sigs.k8s.io/v1alpha1"
        for event in events.values():
            assert event.get("count", 1) == 1, event  # once per gang, not per pod or per cycle


async def test_same_name_in_both_groups_uses_scheduling_x_k8s_io(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        both = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "dup", "namespace": "default"},
            "spec": {"minMember": 2},
        }
        manual = koordinator_manual("dup", 2, cpu="1")
        await kubectl(two_nodes, "apply", "-f", "-", input=yaml.safe_dump(both) + "---\n" + manual)

        async def running() -> bool:
            return bool(((await get_podgroup(k, "dup")) or {}).get("status", {}).get("phase") == "Running")

        await eventually(running, what="the scheduling.x-k8s.io PodGroup's status Running")

        async def warned() -> list[dict[str, Any]] | None:
            found = [e for e in await events_for(k, "dup") if e["reason"] == "PodGroupConflict"]
            return found or None

        (event,) = await eventually(warned, what="one PodGroupConflict Warning")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["apiVersion"] == "scheduling.sigs.k8s.io/v1alpha1"

        async def ignored() -> bool:  # (its status is removed if its watch event came first and it was written)
            return not (await k.get(f"{SIGS}/dup")).get("status", {}).get("phase")

        await eventually(ignored, what="the ignored PodGroup without a status")
        table = await kubectl(two_nodes, "get", "pg", "dup")
        assert "Running" in table, table  # `kubectl get pg` stays gangsched's PodGroup


async def test_volcano_podgroup_gives_the_lws_group_its_count(two_nodes: Cluster) -> None:
    """LWS with the LeaderReady startup policy: its Volcano provider creates the group's Volcano PodGroup with
    minMember 1 (volcano_provider.go CreatePodGroupIfNotExists), so the leader starts alone although the group of
    4 does not fit; a group of the default policy (minMember = size) stays whole pending. The operator started
    before Volcano's CRD existed serves everything else (Kopf: "Unresolved resources cannot be served"); it reads
    Volcano PodGroups once the CRD exists at its start, so it is restarted after the install, as the docs say."""
    from tests.integration.volcano import CRD, lws_volcano_podgroup

    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        await kubectl(two_nodes, "apply", "-f", "-", input=lws_group("plain", 0, 2, cpu="1"))

        async def plain_bound() -> dict[str, str] | None:
            found = placed(await pods(k), "plain-0")
            return found if len(found) == 2 else None

        await eventually(plain_bound, what="a gang bound by an operator that found no Volcano CRD")
    await kubectl(two_nodes, "apply", "-f", "-", input=yaml.safe_dump(CRD))
    docs = [lws_volcano_podgroup("ready-0-7c9d6b5f8", 1), lws_volcano_podgroup("whole-0-7c9d6b5f8", 4)]
    await kubectl(two_nodes, "apply", "-f", "-", input=yaml.safe_dump_all(docs))
    async with replica(two_nodes.kubeconfig):
        await kubectl(two_nodes, "apply", "-f", "-", input=lws_group("ready", 0, 4, cpu="5"))
        await kubectl(two_nodes, "apply", "-f", "-", input=lws_group("whole", 0, 4, cpu="5"))

        async def some_ready_bound() -> dict[str, str] | None:
            found = placed(await pods(k), "ready-0")
            return found if len(found) == 2 else None  # 5 cpu each on two 8-cpu nodes: one per node

        await eventually(some_ready_bound, what="the LeaderReady group's members that fit, one by one")

        async def whole_waits() -> str | None:
            status = ((await get_podgroup(k, "whole-0-7c9d6b5f8")) or {}).get("status") or {}
            return status.get("message") or None

        await eventually(whole_waits, what="the group of minMember 4 waits with a message")
        assert not placed(await pods(k), "whole-"), "a group whose Volcano PodGroup says 4 started partly"
        pg = await get_podgroup(k, "ready-0-7c9d6b5f8")
        assert pg is not None and pg["spec"]["minMember"] == 1, pg


TREE = [
    {"layer": 2, "name": "spine0", "children": ["block0", "block1"]},
    {"layer": 1, "name": "block0", "parents": ["spine0"], "children": [f"node{i}" for i in range(4)]},
    {"layer": 1, "name": "block1", "parents": ["spine0"], "children": [f"node{i}" for i in range(4, 8)]},
]
GPU_NODE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}


def gpu_pods(name: str, n: int) -> list[dict[str, Any]]:
    gpu = {"nvidia.com/gpu": "8"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{i}",
                "namespace": "default",
                "labels": {"pod-group.scheduling.sigs.k8s.io": name},
            },
            "spec": {
                "schedulerName": "gangsched",
                "containers": [{"name": "main", "image": "pause", "resources": {"requests": gpu, "limits": gpu}}],
            },
        }
        for i in range(n)
    ]


async def test_koordinator_network_topology_spec_is_hard_or_soft() -> None:
    """Koordinator's manual puts `network-topology-spec` on its scheduling.sigs.k8s.io PodGroup (BlockLayer under
    SpineLayer, koordinator.sh network-topology-aware scheduling): MustGather at BlockLayer = all members in one block
    (tier 1), so 5 pods of 8 GPUs on blocks of 4 nodes wait; PreferGather lets the same gang span the spine."""
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=GPU_NODE, topology=TREE) as cluster:
        k = cluster.client
        topology_cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
            "data": {"topology.json": json.dumps(TREE)},
        }
        async with replica(cluster.kubeconfig):
            await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump(topology_cm))
            for name, strategy in (("must", "MustGather"), ("prefer", "PreferGather")):
                spec = {"gatherStrategy": [{"layer": "BlockLayer", "strategy": strategy}]}
                pg = {
                    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": {
                        "name": name,
                        "namespace": "default",
                        "annotations": {K + "network-topology-spec": json.dumps(spec)},
                    },
                    "spec": {"minMember": 5},
                }
                await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all([pg, *gpu_pods(name, 5)]))
                if name == "must":

                    async def must_waits() -> str | None:
                        status = (await k.get(f"{SIGS}/must")).get("status") or {}
                        return status.get("message") or None

                    message = await eventually(must_waits, what="the MustGather gang waits with a message")
                    assert not placed(await pods(k), "must-"), message
                    assert "tier" in message, message  # held by the topology, not by capacity (8 nodes free)
                    await kubectl(cluster, "delete", "podgroups.scheduling.sigs.k8s.io", "must")
                    await kubectl(cluster, "delete", "pod", *(f"must-{i}" for i in range(5)), "--wait=false")

            async def prefer_bound() -> dict[str, str] | None:
                found = placed(await pods(k), "prefer-")
                return found if len(found) == 5 else None

            nodes = await eventually(prefer_bound, what="the PreferGather gang bound across both blocks")
            assert len(set(nodes.values())) == 5
