"""Volume constraints end to end through the emulator: the operator watches PersistentVolumeClaims and
PersistentVolumes (read only) and places a pod where its bound volume is (issue 13 item 1).

The emulator has no PersistentVolume controller, so the tests bind claims as that controller does
(pkg/controller/volume/persistentvolume/pv_controller.go bindVolumeToClaim / bindClaimToVolume: the PV's
spec.claimRef, the claim's spec.volumeName and annotation pv.kubernetes.io/bind-completed, then both statuses
Bound through the status subresource). What a placement must respect is kube-scheduler's VolumeBinding plugin
(pkg/scheduler/framework/plugins/volumebinding/volume_binding.go: a bound claim's volume node affinity filters the
nodes; a claim not found or not bound keeps the pod unschedulable with the claim named).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.integration.harness import bound, create, events_for, eventually, pod, podgroup, pods, replica

NODE = NODE_8_GPUS
PVS = "/api/v1/persistentvolumes"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
HOST = "kubernetes.io/hostname"


@pytest.fixture
async def three() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        yield cluster


def local_pv(name: str, node: str) -> dict[str, Any]:
    """A local PersistentVolume pinned to one node, as the local static provisioner creates them."""
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
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": HOST, "operator": "In", "values": [node]}]}]
                }
            },
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


async def bind(k: KubeClient, claim_name: str, pv_name: str) -> None:
    """What the PV controller does for a claim and a volume that match (see the module docstring)."""
    pvc = await k.get(f"{PVCS}/{claim_name}")
    ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": claim_name, "uid": pvc["metadata"]["uid"]}
    await k.patch(f"{PVS}/{pv_name}", {"spec": {"claimRef": ref}})
    await k.patch(
        f"{PVCS}/{claim_name}",
        {"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}}, "spec": {"volumeName": pv_name}},
    )
    await k.patch(f"{PVS}/{pv_name}/status", {"status": {"phase": "Bound"}})
    await k.patch(f"{PVCS}/{claim_name}/status", {"status": {"phase": "Bound"}})


def with_claim(obj: dict[str, Any], claim_name: str) -> dict[str, Any]:
    obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return obj


async def test_a_gang_lands_where_its_bound_volumes_are(three: Cluster) -> None:
    k = three.client
    for i in range(2):
        await k.create(PVS, local_pv(f"pv-{i}", "node-1"))
        await k.create(PVCS, claim(f"data-{i}"))
        await bind(k, f"data-{i}", f"pv-{i}")
    async with replica(three.kubeconfig):
        await create(
            k,
            podgroup("g", min_member=2),
            *(with_claim(pod(f"g-{i}", group="g", gpu=1), f"data-{i}") for i in range(2)),
        )

        async def placed() -> dict[str, str] | None:
            got = bound(await pods(k))
            return got if len(got) == 2 else None

        assert await eventually(placed, what="the gang bound") == {"g-0": "node-1", "g-1": "node-1"}


async def test_an_unbound_claim_holds_the_gang_until_it_is_bound(three: Cluster) -> None:
    k = three.client
    await k.create(PVCS, claim("data"))
    async with replica(three.kubeconfig):
        await create(k, podgroup("g", min_member=1), with_claim(pod("g-0", group="g", gpu=1), "data"))
        message = (
            'unsupported: persistentvolumeclaim "data" is not bound (gangsched binds no volume: WaitForFirstConsumer'
            " binding is not supported; the pod waits until the claim is bound)"
        )

        async def reported() -> list[dict[str, Any]] | None:
            found = [e for name in ("g", "g-0") for e in await events_for(k, name) if e["reason"] == "Unsupported"]
            return found if len(found) >= 2 else None

        events = await eventually(reported, what="a Warning on the PodGroup and on the pod")
        assert {(e["involvedObject"]["kind"], e["type"], e["message"]) for e in events} == {
            ("PodGroup", "Warning", message),
            ("Pod", "Warning", message),
        }

        async def condition() -> dict[str, Any] | None:
            status = (await k.get("/api/v1/namespaces/default/pods/g-0"))["status"]
            found = [c for c in status.get("conditions", []) if c["type"] == "PodScheduled"]
            return found[0] if found and found[0]["message"] == message else None

        assert (await eventually(condition, what="PodScheduled=False on the pod"))["status"] == "False"
        assert not bound(await pods(k))
        await k.create(PVS, local_pv("pv", "node-2"))
        await bind(k, "data", "pv")

        async def placed() -> dict[str, str] | None:
            return bound(await pods(k)) or None

        assert await eventually(placed, what="the pod bound once its claim is") == {"g-0": "node-2"}


async def test_a_missing_claim_is_named(three: Cluster) -> None:
    k = three.client
    async with replica(three.kubeconfig):
        await create(k, with_claim(pod("alone", gpu=1), "nowhere"))

        async def reported() -> list[str] | None:
            found = [e["message"] for e in await events_for(k, "alone") if e["reason"] == "Unsupported"]
            return found or None

        assert await eventually(reported, what="a Warning on the pod") == ['persistentvolumeclaim "nowhere" not found']
        assert not bound(await pods(k))
