"""PodGroup lifecycle with the real kubectl (issue 13 item 9): an annotation-only gang applied with kubectl gets a
PodGroup owned by its pods; `kubectl delete pods` takes the PodGroup with them (the garbage collector,
pkg/controller/garbagecollector, through ownerReferences) and it does not come back; a PodGroup deleted with
`kubectl delete podgroup` and applied again under the same name shows its status again in `kubectl get`."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator

import pytest
import yaml

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import eventually, get_podgroup, on_replica, phase_of, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS
KOORD = "gang.scheduling.koordinator.sh/"


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


def gang_pods(gang: str, count: int, *, annotated: bool) -> str:
    docs = []
    for i in range(count):
        meta: dict[str, object] = {"name": f"{gang}-{i}", "namespace": "default"}
        if annotated:
            meta["annotations"] = {KOORD + "name": gang, KOORD + "min-available": str(count)}
        else:
            meta["labels"] = {"scheduling.x-k8s.io/pod-group": gang}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta,
                "spec": {
                    "schedulerName": "gangsched",
                    "containers": [
                        {"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            }
        )
    return yaml.safe_dump_all(docs)


PODGROUP = """apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: mine, namespace: default}
spec: {minMember: 2}
"""


async def test_annotation_gangs_podgroup_goes_with_its_pods_and_stays_gone(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig) as op:
        await kubectl(two_nodes, "apply", "-f", "-", input=gang_pods("koord", 2, annotated=True))

        async def running() -> bool:
            return await phase_of(k, "koord") == "Running"

        await eventually(running, what="koord Running")
        owners = await kubectl(
            two_nodes,
            "get",
            "podgroups.scheduling.x-k8s.io",
            "koord",
            "-o",
            "jsonpath={.metadata.ownerReferences[*].name}",
        )
        assert sorted(owners.split()) == ["koord-0", "koord-1"]
        await kubectl(two_nodes, "delete", "pods", "koord-0", "koord-1", "--wait=true")

        async def gone() -> bool:
            return await get_podgroup(k, "koord") is None and not any(n.startswith("koord-") for n in await pods(k))

        await eventually(gone, what="PodGroup gone with its pods")

        def forgotten() -> bool:
            return op.cache.podgroup("default/koord") is None and "default/koord" not in op.cache.cluster.gangs

        async def operator_forgot() -> bool:
            return on_replica(op, forgotten)

        await eventually(operator_forgot, what="the operator forgot the gang")
        # Another annotation-only gang's PodGroup appearing: the operator's decisions about koord are behind us.
        await kubectl(two_nodes, "apply", "-f", "-", input=gang_pods("after", 1, annotated=True))
        await eventually(lambda: get_podgroup(k, "after"), what="PodGroup after created")
        table = await kubectl(two_nodes, "get", "podgroups.scheduling.x-k8s.io", "-o", "name")
        assert "koord" not in table, table


async def test_podgroup_deleted_and_applied_again_shows_its_status(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        await kubectl(two_nodes, "apply", "-f", "-", input=PODGROUP + "---\n" + gang_pods("mine", 2, annotated=False))

        async def running() -> bool:
            return await phase_of(k, "mine") == "Running"

        await eventually(running, what="mine Running")
        for _ in range(5):  # quickly, within the second of the last status write: the same body (timestamps too)
            await kubectl(two_nodes, "delete", "podgroups.scheduling.x-k8s.io", "mine", "--wait=true")
            await kubectl(two_nodes, "apply", "-f", "-", input=PODGROUP)
            await eventually(running, what="status on the PodGroup applied again")
        table = await kubectl(two_nodes, "get", "podgroups.scheduling.x-k8s.io", "mine")
        assert "Running" in table, table


async def test_created_podgroup_deleted_by_hand_comes_back_owned_with_its_status(two_nodes: Cluster) -> None:
    """`kubectl delete podgroup` of a live annotation-only gang: the operator creates it again (the gang still has
    its pods), owned by them, and `kubectl get podgroup` shows its status again."""
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        await kubectl(two_nodes, "apply", "-f", "-", input=gang_pods("live", 2, annotated=True))

        async def running() -> bool:
            return await phase_of(k, "live") == "Running"

        await eventually(running, what="live Running")
        for _ in range(2):
            uid = await kubectl(
                two_nodes, "get", "podgroups.scheduling.x-k8s.io", "live", "-o", "jsonpath={.metadata.uid}"
            )
            await kubectl(two_nodes, "delete", "podgroups.scheduling.x-k8s.io", "live", "--wait=true")
            await eventually(functools.partial(_another, k, "live", uid), what="PodGroup created again")
            await eventually(running, what="status on the PodGroup created again")
        owners = await kubectl(
            two_nodes,
            "get",
            "podgroups.scheduling.x-k8s.io",
            "live",
            "-o",
            "jsonpath={.metadata.ownerReferences[*].name}",
        )
        assert sorted(owners.split()) == ["live-0", "live-1"]


async def _another(k: KubeClient, name: str, uid: str) -> bool:
    """The PodGroup exists again, as another object than `uid`."""
    pg = await get_podgroup(k, name)
    return pg is not None and pg["metadata"]["uid"] != uid
