"""Volume constraints with the real kubectl (issue 13 item 1): a gang whose claims are bound to local volumes lands
on their node; a claim that is not bound holds the gang, named in an event and on the PodGroup, until it is.

Oracles: kube-scheduler pkg/scheduler/framework/plugins/volumebinding/volume_binding.go (a bound claim's volume
node affinity filters nodes; an unbound claim keeps the pod unschedulable). The emulator has no PersistentVolume
controller: the test binds the claim with kubectl as pkg/controller/volume/persistentvolume/pv_controller.go does
(the PV's claimRef, the claim's spec.volumeName and annotation pv.kubernetes.io/bind-completed, then status.phase
Bound on both through the status subresource).
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
from tests.integration.harness import bound, eventually, get_podgroup, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS
HOST = "kubernetes.io/hostname"


@pytest.fixture
async def three_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        yield cluster


async def apply(cluster: Cluster, *objs: dict[str, Any]) -> None:
    await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(objs))


def local_pv(name: str, node: str) -> dict[str, Any]:
    terms = [{"matchExpressions": [{"key": HOST, "operator": "In", "values": [node]}]}]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "local",
            "local": {"path": f"/mnt/disks/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": terms}},
        },
    }


def claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }


def member(name: str, group: str, claim_name: str) -> dict[str, Any]:
    obj = pod(name, group=group, gpu=1)
    obj["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}},
        {"name": "scratch", "emptyDir": {}},  # constrains nothing, never reported
    ]
    return obj


async def bind(cluster: Cluster, claim_name: str, pv_name: str) -> None:
    """The PV controller's binding, with kubectl (see the module docstring)."""
    uid = await kubectl(cluster, "get", "pvc", claim_name, "-o", "jsonpath={.metadata.uid}")
    ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": claim_name, "uid": uid}
    await kubectl(cluster, "patch", "pv", pv_name, "-p", json.dumps({"spec": {"claimRef": ref}}))
    await kubectl(cluster, "annotate", "pvc", claim_name, "pv.kubernetes.io/bind-completed=yes")
    await kubectl(cluster, "patch", "pvc", claim_name, "-p", json.dumps({"spec": {"volumeName": pv_name}}))
    bound_status = json.dumps({"status": {"phase": "Bound"}})
    await kubectl(cluster, "patch", "pv", pv_name, "--subresource=status", "-p", bound_status)
    await kubectl(cluster, "patch", "pvc", claim_name, "--subresource=status", "-p", bound_status)


async def test_a_gang_lands_on_the_node_of_its_bound_local_volumes(three_nodes: Cluster) -> None:
    k = three_nodes.client
    await apply(three_nodes, *(local_pv(f"pv-{i}", "node-2") for i in range(2)), claim("data-0"), claim("data-1"))
    for i in range(2):
        await bind(three_nodes, f"data-{i}", f"pv-{i}")
    assert await kubectl(three_nodes, "get", "pvc", "data-0", "-o", "jsonpath={.status.phase}") == "Bound"
    async with replica(three_nodes.kubeconfig):
        await apply(three_nodes, podgroup("g", min_member=2), *(member(f"g-{i}", "g", f"data-{i}") for i in range(2)))

        async def placed() -> dict[str, str] | None:
            got = bound(await pods(k))
            return got if len(got) == 2 else None

        assert await eventually(placed, what="the gang bound") == {"g-0": "node-2", "g-1": "node-2"}
        events = await kubectl(three_nodes, "get", "events", "-o", "json")
        assert not [e for e in json.loads(events)["items"] if e["reason"] == "Unsupported"]


async def test_an_unbound_claim_holds_the_gang_and_says_why_until_it_is_bound(three_nodes: Cluster) -> None:
    k = three_nodes.client
    await apply(three_nodes, claim("data-0"), claim("data-1"), local_pv("pv-0", "node-0"), local_pv("pv-1", "node-0"))
    await bind(three_nodes, "data-0", "pv-0")  # one of the two claims is bound: the gang still waits whole
    async with replica(three_nodes.kubeconfig):
        await apply(three_nodes, podgroup("g", min_member=2), *(member(f"g-{i}", "g", f"data-{i}") for i in range(2)))
        message = (
            'unsupported: persistentvolumeclaim "data-1" is not bound (gangsched binds no volume:'
            " WaitForFirstConsumer binding is not supported; the pod waits until the claim is bound)"
        )

        async def waiting() -> str | None:
            pg = await get_podgroup(k, "g")
            shown: str | None = (pg or {}).get("status", {}).get("message")
            return shown if shown == message else None

        await eventually(waiting, what="the PodGroup names the unbound claim")
        assert not bound(await pods(k))

        async def described() -> str | None:
            text = await kubectl(three_nodes, "describe", "pod", "g-1")
            return text if 'persistentvolumeclaim "data-1" is not bound' in text and "Unsupported" in text else None

        await eventually(described, what="kubectl describe shows the Warning on the unready pod")
        await bind(three_nodes, "data-1", "pv-1")

        async def placed() -> dict[str, str] | None:
            got = bound(await pods(k))
            return got if len(got) == 2 else None

        assert await eventually(placed, what="the gang bound once both claims are") == {
            "g-0": "node-0",
            "g-1": "node-0",
        }
