"""The typed API calls (k8s/api.py KubeApi, k8s/writes.py Writes) over real HTTP against the emulator: what each call
leaves on the object, and that over a FencedClient a write this replica may not make is never sent.

- Writes (through a PatchWriter, flushed): `set_pod_condition` sets one condition on pods/status (strategic merge:
  merged by type, the others kept), `annotate_pod` adds an annotation, `nominate` sets and clears
  status.nominatedNodeName; `discard_pod_conditions` drops a condition patch not sent yet; `set_podgroup_status`
  and `set_podgroup_owners` write the PodGroup's status and ownerReferences.
- KubeApi: `evict` goes through the Eviction API (the pod goes; a missing pod is a 404 ApiError); `create_podgroup`
  creates the PodGroup of an annotation-only gang (label, owners, spec); the ConfigMap calls create, read and patch
  `data`; `configmap_reflector` sees that one ConfigMap only; the lists return every item.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from gangsched.k8s.api import MANAGED_BY, KubeApi, PodOwner
from gangsched.k8s.client import ApiError, KubeClient
from gangsched.k8s.coalescing import PatchWriter
from gangsched.k8s.fence import FencedClient, NotLeader
from gangsched.k8s.writes import Writes
from gangsched.sim.apiserver import ApiServer
from tests.builders import pod_manifest
from tests.integration.harness import eventually

PODS = "/api/v1/namespaces/default/pods"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
CRD = Path(__file__).resolve().parents[2] / "crds" / "podgroups.yaml"


def _writes(kube: KubeClient) -> tuple[Writes, PatchWriter]:
    writer = PatchWriter(kube, settle=0, min_gap=0)
    return Writes(writer), writer


async def test_pod_writes_land_on_the_pod(kube: KubeClient) -> None:
    await kube.create(PODS, pod_manifest("p", scheduler="gangsched"))
    writes, writer = _writes(kube)
    writes.set_pod_condition("default", "p", type_="Ready", status="False", reason="R", message="kept")
    await writer.flush(everything=True)
    writes.set_pod_condition("default", "p", type_="PodScheduled", status="False", reason="Unschedulable", message="m")
    writes.annotate_pod("default", "p", {"example.com/a": "true"})
    writes.nominate("default", "p", "node-1")
    await writer.flush(everything=True)

    pod = await kube.get(f"{PODS}/p")
    conditions = {c["type"]: c for c in pod["status"]["conditions"]}
    assert conditions["PodScheduled"]["status"] == "False"
    assert conditions["PodScheduled"]["reason"] == "Unschedulable" and conditions["PodScheduled"]["message"] == "m"
    assert conditions["PodScheduled"]["lastTransitionTime"].endswith("Z")
    assert conditions["Ready"]["message"] == "kept"  # merged by type: the other condition stays
    assert pod["metadata"]["annotations"]["example.com/a"] == "true"
    assert pod["status"]["nominatedNodeName"] == "node-1"

    writes.nominate("default", "p", None)
    writes.set_pod_condition("default", "p", type_="PodScheduled", status="False", reason="Other", message="late")
    writes.discard_pod_conditions("default", "p")  # the condition goes, the nomination's clear stays
    await writer.flush(everything=True)
    pod = await kube.get(f"{PODS}/p")
    assert "nominatedNodeName" not in pod["status"]
    assert {c["type"]: c for c in pod["status"]["conditions"]}["PodScheduled"]["reason"] == "Unschedulable"
    assert writer.errors == 0


async def test_podgroup_create_status_and_owners(kube: KubeClient) -> None:
    await kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", yaml.safe_load(CRD.read_text()))
    first = await kube.create(PODS, pod_manifest("w-0", scheduler="gangsched"))
    second = await kube.create(PODS, pod_manifest("w-1", scheduler="gangsched"))
    api = KubeApi(kube)
    spec = GangSpec(
        namespace="default",
        name="g",
        min_member=2,
        total_member=3,
        mode=GangMode.NON_STRICT,
        wait_seconds=30,
        network_topology=NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=2, group_size=2),
    )
    await api.create_podgroup(spec, [PodOwner("w-0", first["metadata"]["uid"])])
    pg = await kube.get(f"{PODGROUPS}/g")
    assert pg["metadata"]["labels"][MANAGED_BY] == "gangsched"
    assert [o["uid"] for o in pg["metadata"]["ownerReferences"]] == [first["metadata"]["uid"]]
    assert pg["spec"] == {
        "minMember": 2,
        "totalMember": 3,
        "mode": "NonStrict",
        "scheduleTimeoutSeconds": 30,
        "networkTopology": {"mode": "hard", "groupSize": 2, "highestTierAllowed": 2},
    }
    with pytest.raises(ApiError) as exists:
        await api.create_podgroup(spec, [])
    assert exists.value.status == 409

    writes, writer = _writes(kube)
    owners = [PodOwner("w-0", first["metadata"]["uid"]), PodOwner("w-1", second["metadata"]["uid"])]
    writes.set_podgroup_owners("default", "g", owners)
    writes.set_podgroup_status("default", "g", {"phase": "Scheduling", "scheduled": 1})
    await writer.flush(everything=True)
    pg = await kube.get(f"{PODGROUPS}/g")
    assert [(o["kind"], o["name"]) for o in pg["metadata"]["ownerReferences"]] == [("Pod", "w-0"), ("Pod", "w-1")]
    assert pg["status"]["phase"] == "Scheduling" and pg["status"]["scheduled"] == 1


async def test_evict(kube: KubeClient) -> None:
    await kube.create(PODS, pod_manifest("victim", scheduler="gangsched"))
    api = KubeApi(kube)
    await api.evict("default", "victim")

    async def gone_or_terminating() -> bool:
        try:
            pod = await kube.get(f"{PODS}/victim")
        except ApiError as exc:
            return exc.status == 404
        return bool(pod["metadata"].get("deletionTimestamp"))

    await eventually(gone_or_terminating, what="the evicted pod going")
    with pytest.raises(ApiError) as missing:
        await api.evict("default", "nobody")
    assert missing.value.status == 404


async def test_a_fenced_write_is_never_sent(kube: KubeClient, apiserver: ApiServer) -> None:
    await kube.create(PODS, pod_manifest("p", scheduler="gangsched"))
    fenced = FencedClient(kube, lambda: False)
    api = KubeApi(fenced)
    before = kube.requests_total
    with pytest.raises(NotLeader):
        await api.evict("default", "p")
    with pytest.raises(NotLeader):
        await api.create_configmap("default", "c", {"k": "v"})
    assert kube.requests_total == before and fenced.refused == 2
    assert (await api.list_nodes()) == []  # reads go through


async def test_configmaps_and_the_reflector_of_one(kube: KubeClient) -> None:
    api = KubeApi(kube)
    await api.create_configmap("default", "topo", {"topology.json": "[]"})
    await api.create_configmap("default", "other", {"x": "y"})
    await api.patch_configmap_data("default", "topo", {"topology.json": "[1]"})
    cm = await api.get_configmap("default", "topo")
    assert cm["data"] == {"topology.json": "[1]"} and cm["metadata"]["labels"][MANAGED_BY] == "gangsched"

    listed: list[list[str]] = []
    events: list[tuple[str, str]] = []
    reflector = api.configmap_reflector(
        "default",
        "topo",
        on_list=lambda items: listed.append([i["metadata"]["name"] for i in items]),
        on_event=lambda kind, obj: events.append((kind, obj["metadata"]["name"])),
    )
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.synced.wait(), 10)
        await api.patch_configmap_data("default", "other", {"x": "z"})
        await api.patch_configmap_data("default", "topo", {"topology.json": "[2]"})

        async def saw_topo() -> bool:
            return ("MODIFIED", "topo") in events

        await eventually(saw_topo, what="the topology ConfigMap's change")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert listed == [["topo"]]
    assert all(name == "topo" for _kind, name in events)
