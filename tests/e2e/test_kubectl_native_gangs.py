"""Kubernetes 1.37's own gang API as a gang source (issue 25 item 2, start), with the real kubectl and the operator
in-process against the emulator serving scheduling.k8s.io/v1beta1 (its default profile).

Objects are built as KEP-4671 / KEP-5832 and the API types define them (kubernetes/enhancements
keps/sig-scheduling/5832-decouple-podgroup-api/README.md: a standalone PodGroup with `schedulingPolicy.gang.minCount`,
pods naming it in `spec.schedulingGroup.podGroupName`; staging/src/k8s.io/api/scheduling/v1beta1/types.go).
Oracle: kube-scheduler's GangScheduling plugin (pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go:
PreEnqueue holds a pod until its PodGroup exists and minCount pods of it exist; Permit waits until minCount pods
are assumed, so either the quorum is bound or nothing is). Status as kube-scheduler 1.37 writes it
(pkg/scheduler/schedule_one_podgroup.go submitPodGroupAlgorithmResult and updatePodGroupCondition): the PodGroup's
PodGroupInitiallyScheduled condition, False/Unschedulable while it cannot be placed, True/Scheduled once placed,
terminal; pods' PodScheduled False/Unschedulable (FailureHandler), True from the binding.
A `basic` PodGroup is no gang: its pods are scheduled
one by one. A pod that names a gang both natively and by gangsched's label gets a conflict report, not a guess.
On a cluster without the native API (the emulator's plain-1.37 profile: GenericWorkload off) the operator still
schedules gangsched's own gangs (its watch of scheduling.k8s.io/v1beta1 podgroups is optional, like Volcano's).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.features import resolve
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


def native_podgroup(name: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": policy},
    }


def member(name: str, group: str, gpu: int = 8) -> dict[str, Any]:
    body = pod(name, gpu=gpu)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


async def apply(cluster: Cluster, path: Path, *objs: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    await kubectl(cluster, "apply", "-f", str(path))


async def unschedulable(cluster: Cluster, names: list[str]) -> bool:
    """Every one of these pods has been told why it waits (PodScheduled=False): the operator has decided."""
    out = json.loads(await kubectl(cluster, "get", "pods", "-o", "json"))
    told = {
        p["metadata"]["name"]
        for p in out["items"]
        for c in (p.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    }
    return set(names) <= told


async def initially_scheduled(cluster: Cluster, name: str, status: str | None = None) -> dict[str, Any] | None:
    """The native PodGroup's PodGroupInitiallyScheduled condition (with that status, if given), or None."""
    obj = json.loads(await kubectl(cluster, "get", "podgroups.scheduling.k8s.io", name, "-o", "json"))
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodGroupInitiallyScheduled" and status in (None, cond.get("status")):
            return dict(cond)
    return None


async def test_native_gang_binds_whole(two_nodes: Cluster, tmp_path: Path) -> None:
    """minCount 3, three pods of 4 GPUs on two 8-GPU nodes: all three bound (the quorum is met)."""
    names = [f"train-{i}" for i in range(3)]
    async with replica(two_nodes.kubeconfig):
        await apply(
            two_nodes,
            tmp_path / "train.yaml",
            native_podgroup("train", {"gang": {"minCount": 3}}),
            *(member(n, "train", gpu=4) for n in names),
        )

        async def all_bound() -> bool:
            return set(names) <= set(bound(await pods(two_nodes.client)))

        await eventually(all_bound, what="the native gang bound whole")
        cond = await eventually(lambda: initially_scheduled(two_nodes, "train"), what="the group condition written")
        assert (cond["status"], cond["reason"]) == ("True", "Scheduled"), cond
        assert cond["observedGeneration"] == 1 and cond["lastTransitionTime"], cond
        shown = await kubectl(
            two_nodes, "get", "podgroups", "train", "-o", "jsonpath={.spec.schedulingPolicy.gang.minCount}"
        )
        assert shown == "3"  # a bare `podgroups` is the native kind


async def test_native_gang_short_of_quorum_binds_nothing(two_nodes: Cluster, tmp_path: Path) -> None:
    """minCount 4, four pods of 8 GPUs, room for 2: none is bound (all or nothing)."""
    names = [f"big-{i}" for i in range(4)]
    async with replica(two_nodes.kubeconfig):
        await apply(
            two_nodes,
            tmp_path / "big.yaml",
            native_podgroup("big", {"gang": {"minCount": 4}}),
            *(member(n, "big") for n in names),
        )
        await eventually(lambda: unschedulable(two_nodes, names), what="the operator's verdict on every member")
        assert not set(names) & set(bound(await pods(two_nodes.client)))
        why = await kubectl(
            two_nodes, "get", "pod", "big-0", "-o", 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'
        )
        assert "cannot reach its quorum (0 bound + 2 fit of minMember 4)" in why, why
        reason = await kubectl(
            two_nodes, "get", "pod", "big-0", "-o", 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}'
        )
        assert reason == "Unschedulable"  # kube-scheduler's v1.PodReasonUnschedulable
        cond = await eventually(lambda: initially_scheduled(two_nodes, "big"), what="the group condition written")
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable"), cond
        assert "cannot reach its quorum" in cond["message"], cond


async def test_initially_scheduled_is_terminal(two_nodes: Cluster, tmp_path: Path) -> None:
    """Once True the condition never goes back (updatePodGroupCondition), even when the gang loses its quorum and
    gangsched gang-schedules its re-created pods again; the pods' PodScheduled is the binding's True."""
    names = [f"job-{i}" for i in range(2)]
    async with replica(two_nodes.kubeconfig):
        await apply(
            two_nodes,
            tmp_path / "job.yaml",
            native_podgroup("job", {"gang": {"minCount": 2}}),
            *(member(n, "job") for n in names),
        )
        first = await eventually(lambda: initially_scheduled(two_nodes, "job", "True"), what="the gang scheduled")
        scheduled = await kubectl(
            two_nodes, "get", "pod", "job-0", "-o", 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].status}'
        )
        assert scheduled == "True"
        await kubectl(two_nodes, "delete", "pod", *names, "--wait=true")
        await apply(two_nodes, tmp_path / "blocker.yaml", pod("blocker", gpu=8))  # no gang: it takes one node

        async def blocker_bound() -> bool:
            return "blocker" in bound(await pods(two_nodes.client))

        await eventually(blocker_bound, what="the blocker bound")
        await apply(two_nodes, tmp_path / "again.yaml", *(member(n, "job") for n in names))  # cannot fit now
        await eventually(lambda: unschedulable(two_nodes, names), what="the re-created gang told it cannot fit")
        again = await initially_scheduled(two_nodes, "job")
        assert again == first, again  # terminal: not moved back to False, not rewritten


async def test_members_wait_for_their_podgroup(two_nodes: Cluster, tmp_path: Path) -> None:
    """PreEnqueue: pods naming a PodGroup that does not exist yet wait (told so), and bind once it appears."""
    names = [f"late-{i}" for i in range(2)]
    async with replica(two_nodes.kubeconfig):
        await apply(two_nodes, tmp_path / "pods.yaml", *(member(n, "late") for n in names))
        await eventually(lambda: unschedulable(two_nodes, names), what="the members told they wait")
        assert not set(names) & set(bound(await pods(two_nodes.client)))
        await apply(two_nodes, tmp_path / "pg.yaml", native_podgroup("late", {"gang": {"minCount": 2}}))

        async def all_bound() -> bool:
            return set(names) <= set(bound(await pods(two_nodes.client)))

        await eventually(all_bound, what="the gang bound once its PodGroup exists")


async def test_basic_native_podgroup_is_no_gang(two_nodes: Cluster, tmp_path: Path) -> None:
    """basic: the pods are scheduled one by one, so 2 of 4 8-GPU pods bind on two nodes."""
    names = [f"web-{i}" for i in range(4)]
    async with replica(two_nodes.kubeconfig):
        await apply(
            two_nodes, tmp_path / "web.yaml", native_podgroup("web", {"basic": {}}), *(member(n, "web") for n in names)
        )

        async def two_bound() -> bool:
            return len(set(names) & set(bound(await pods(two_nodes.client)))) == 2

        await eventually(two_bound, what="two of the basic group's pods bound one by one")


async def test_pod_naming_a_gang_twice_is_reported(two_nodes: Cluster, tmp_path: Path) -> None:
    """A pod with both the scheduling.x-k8s.io/pod-group label and spec.schedulingGroup: a conflict report."""
    both = member("both-0", "native")
    both["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "crd"
    async with replica(two_nodes.kubeconfig):
        await apply(two_nodes, tmp_path / "both.yaml", native_podgroup("native", {"gang": {"minCount": 1}}), both)

        async def reported() -> str | None:
            events = json.loads(await kubectl(two_nodes, "get", "events", "-o", "json"))["items"]
            for event in events:
                if event.get("involvedObject", {}).get("name") == "both-0" and "declares its gang once" in (
                    event.get("message") or ""
                ):
                    return str(event["message"])
            return None

        message = await eventually(reported, what="the conflict reported on the pod")
        assert "spec.schedulingGroup.podGroupName" in message and "scheduling.x-k8s.io/pod-group" in message
        assert "both-0" not in bound(await pods(two_nodes.client))


async def test_unsupported_fields_are_reported_on_the_podgroup(two_nodes: Cluster, tmp_path: Path) -> None:
    """DESIGN.md: a field of a gang declaration is never silently ignored. A priorityClassName the API server did not
    resolve into spec.priority (kube-apiserver 1.37 resolves it only with the WorkloadAwarePreemption gate: the
    Priority admission plugin's PodGroup case, TestAdmitPodGroup) is not honoured and says so (a topology key and
    resourceClaims are honoured: test_kubectl_native_topology.py, test_kubectl_dra_gangs.py)."""
    group = native_podgroup("topo", {"gang": {"minCount": 1}})
    group["spec"]["priorityClassName"] = "high-priority"
    async with replica(two_nodes.kubeconfig):
        await apply(two_nodes, tmp_path / "topo.yaml", group)

        async def reported() -> str | None:
            events = json.loads(await kubectl(two_nodes, "get", "events", "-o", "json"))["items"]
            found = [e for e in events if e.get("reason") == "UnsupportedField"]
            return str(found[0]["involvedObject"]["apiVersion"]) + " " + found[0]["message"] if found else None

        message = await eventually(reported, what="UnsupportedField on the PodGroup")
        assert message.startswith("scheduling.k8s.io/v1beta1 spec.priorityClassName: not honoured"), message


async def test_operator_works_without_the_native_api(tmp_path: Path) -> None:
    """plain-1.37: scheduling.k8s.io/v1beta1 is not served; a CRD gang is bound whole all the same."""
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE, gates=resolve("plain-1.37")) as cluster:
        names = [f"crd-{i}" for i in range(2)]
        members = [pod(n, group="crd", gpu=8) for n in names]
        async with replica(cluster.kubeconfig):
            await apply(cluster, tmp_path / "crd.yaml", podgroup("crd", min_member=2), *members)

            async def all_bound() -> bool:
                return set(names) <= set(bound(await pods(cluster.client)))

            await eventually(all_bound, what="the CRD gang bound on a plain 1.37 cluster")
            names_shown = await kubectl(cluster, "get", "podgroups", "-o", "name")
            assert names_shown.split() == ["podgroup.scheduling.x-k8s.io/crd"]  # bare `podgroups`: the CRD here
