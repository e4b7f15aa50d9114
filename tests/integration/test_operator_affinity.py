"""InterPodAffinity through the operator and the emulator: pods of other schedulers count (their labels and their
own anti-affinity terms), the gang's members count among themselves.

Oracle: kube-scheduler pkg/scheduler/framework/plugins/interpodaffinity/filtering.go (satisfyPodAffinity,
satisfyPodAntiAffinity, satisfyExistingPodsAntiAffinity; a pod counts in the domain of its node's label).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.cluster import create_nodes
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.integration.harness import bound, create, eventually, pod, podgroup, pods, replica

NODE = NODE_8_GPUS
ZONE = "topology.kubernetes.io/zone"
ZONES = {"a0": "a", "a1": "a", "b0": "b", "b1": "b"}


@pytest.fixture
async def two_zones() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=0, node_resources=NODE) as cluster:
        await create_nodes(cluster.client, list(ZONES), NODE, labels_for_name=lambda n: {ZONE: ZONES[n]})
        yield cluster


def _required(kind: str, app: str, key: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _with(obj: dict[str, Any], affinity: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    obj["spec"]["affinity"] = affinity
    if node is not None:
        obj["spec"]["nodeName"] = node  # placed by someone else (bound at creation, as a DaemonSet's pods are)
    return obj


async def test_existing_pods_anti_affinity_and_the_members_own_terms(two_zones: Cluster) -> None:
    k = two_zones.client
    guard = _with(
        pod("guard", labels={"app": "guard"}, scheduler="default-scheduler"),
        _required("podAntiAffinity", "web", ZONE),
        node="a0",
    )
    await create(k, guard)
    async with replica(two_zones.kubeconfig):
        members = [
            _with(
                pod(f"web-{i}", group="web", gpu=1, labels={"app": "web"}),
                _required("podAntiAffinity", "web", "kubernetes.io/hostname"),
            )
            for i in range(2)
        ]
        await create(k, podgroup("web", min_member=2), *members)

        async def placed() -> dict[str, str] | None:
            nodes = {name: node for name, node in bound(await pods(k)).items() if name.startswith("web-")}
            return nodes if len(nodes) == 2 else None

        nodes = await eventually(placed, what="both web members bound")
        assert sorted(nodes.values()) == ["b0", "b1"]  # zone a refuses app=web (guard); one member per node


async def test_affinity_follows_a_pod_of_another_scheduler(two_zones: Cluster) -> None:
    k = two_zones.client
    await create(k, _with(pod("cache", labels={"app": "cache"}, scheduler="default-scheduler"), {}, node="b1"))
    async with replica(two_zones.kubeconfig):
        members = [
            _with(pod(f"app-{i}", group="app", gpu=8, labels={"app": "app"}), _required("podAffinity", "cache", ZONE))
            for i in range(2)
        ]
        await create(k, podgroup("app", min_member=2), *members)

        async def placed() -> dict[str, str] | None:
            nodes = {name: node for name, node in bound(await pods(k)).items() if name.startswith("app-")}
            return nodes if len(nodes) == 2 else None

        nodes = await eventually(placed, what="both app members bound")
        assert sorted(nodes.values()) == ["b0", "b1"]  # zone b holds the cache; 8 GPUs each: one per node


async def test_namespace_selector_reads_namespace_labels_from_the_api(two_zones: Cluster) -> None:
    """types.go newAffinityTerm: a term with a namespaceSelector selects pods of the namespaces whose labels match
    (the operator watches namespaces for their labels)."""
    k = two_zones.client
    for name, team in (("team-a", "a"), ("team-b", "b")):
        await k.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": team}}},
        )
    await create(
        k, _with(pod("db", namespace="team-a", labels={"app": "db"}, scheduler="default-scheduler"), {}, node="a0")
    )
    await create(
        k, _with(pod("db", namespace="team-b", labels={"app": "db"}, scheduler="default-scheduler"), {}, node="b0")
    )
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "topologyKey": ZONE,
        "namespaceSelector": {"matchLabels": {"team": "a"}},
    }
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    async with replica(two_zones.kubeconfig):
        await create(k, _with(pod("away", gpu=8), affinity))

        async def placed() -> str | None:
            return bound(await pods(k, "default")).get("away")

        assert await eventually(placed, what="the pod bound") in {"b0", "b1"}  # team-a's db is in zone a
