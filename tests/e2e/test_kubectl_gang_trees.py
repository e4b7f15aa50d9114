"""Gang trees end to end (issue 25 item 3, "Done when"): a three-level CompositePodGroup tree and a Grove PodGang, with
the real kubectl (and the kubectl-gang plugin) and the operator in-process against the emulator.

Objects as their sources build them:
- The tree as kubernetes.io/docs/concepts/workloads/compositepodgroup-api/ and its lifecycle page describe it (a
  Workload with compositePodGroupTemplates, then the root CompositePodGroup, its descendants naming their parent in
  spec.parentCompositePodGroupName and their template in spec.workloadRef, then pods naming their leaf PodGroup in
  spec.schedulingGroup.podGroupName). Oracle: kube-scheduler 1.37's integration test TestCPGQueueing
  (test/integration/scheduler/podgroup/) "Pod add triggers queueing hint for unschedulable CPG root": pods wait while a
  group the root needs lacks a pod, and the whole tree schedules once it comes.
- The PodGang as Grove's operator writes it (ai-dynamo/grove at fcc3b3bb: scheduler/api/core/v1alpha1/podgang.go;
  pods created with the scheduling gate grove.io/podgang-pending-creation, operator/internal/controller/podclique/
  components/pod/pod.go, lifted once the PodGang references them; label grove.io/podgang), as KAI serves it
  (NVIDIA/KAI-Scheduler pkg/podgrouper/podgrouper/plugins/grove/grove_grouper.go: minAvailable per pod group =
  minReplicas): a router and a decode group needing all 4 never bind 3 of the decode pods.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, eventually, pod, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
GATE = "grove.io/podgang-pending-creation"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=5, node_resources=NODE) as c:
        yield c


def _run(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path, KUBECONFIG=cluster.kubeconfig)
    return subprocess.run(["kubectl", *args], check=False, capture_output=True, text=True, timeout=60, env=env)


async def kubectl(cluster: Cluster, *args: str) -> str:
    result = await asyncio.to_thread(_run, cluster, *args)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


async def apply(cluster: Cluster, path: Path, *objs: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    await kubectl(cluster, "apply", "-f", str(path))


def _template(name: str, *, count: int | None = None, groups: int | None = None, **kids: Any) -> dict[str, Any]:
    policy = {"gang": {"minCount": count}} if count is not None else {"gang": {"minGroupCount": groups}}
    return {"name": name, "schedulingPolicy": policy, **kids}


def workload() -> dict[str, Any]:
    mid = _template("mid", groups=2, podGroupTemplates=[_template("a", count=2), _template("b", count=1)])
    root = _template("root", groups=2, compositePodGroupTemplates=[mid], podGroupTemplates=[_template("c", count=1)])
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"compositePodGroupTemplates": [root]},
    }


def group(kind: str, name: str, parent: str | None, **policy: int) -> dict[str, Any]:
    version = "v1alpha3" if kind == "CompositePodGroup" else "v1beta1"
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": "train", "templateName": name},
        "schedulingPolicy": {"gang": policy},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": kind,
        "metadata": {"name": f"train-{name}", "namespace": "default"},
        "spec": spec,
    }


def member(name: str, leaf: str) -> dict[str, Any]:
    body = pod(name, gpu=8)
    body["spec"]["schedulingGroup"] = {"podGroupName": f"train-{leaf}"}
    return body


async def told(cluster: Cluster, names: list[str]) -> bool:
    out = json.loads(await kubectl(cluster, "get", "pods", "-o", "json"))
    waiting = {
        p["metadata"]["name"]
        for p in out["items"]
        for c in (p.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    }
    return set(names) <= waiting


async def test_three_level_composite_tree_binds_whole(cluster: Cluster, tmp_path: Path) -> None:
    """root (2 of: mid, c) > mid (2 of: a, b) > a (minCount 2), b, c: with a's second pod missing nothing binds; once
    it exists the five pods bind together; kubectl gang shows the tree, one level per indentation."""
    first = ["a-0", "b-0", "c-0"]
    async with replica(cluster.kubeconfig):
        await apply(
            cluster,
            tmp_path / "tree.yaml",
            workload(),
            group("CompositePodGroup", "root", None, minGroupCount=2),
            group("CompositePodGroup", "mid", "train-root", minGroupCount=2),
            group("PodGroup", "a", "train-mid", minCount=2),
            group("PodGroup", "b", "train-mid", minCount=1),
            group("PodGroup", "c", "train-root", minCount=1),
            member("a-0", "a"),
            member("b-0", "b"),
            member("c-0", "c"),
        )
        await eventually(lambda: told(cluster, first), what="the tree's pods told they wait")
        assert not set(first) & set(bound(await pods(cluster.client)))
        await apply(cluster, tmp_path / "last.yaml", member("a-1", "a"))

        async def all_bound() -> bool:
            return {*first, "a-1"} <= set(bound(await pods(cluster.client)))

        await eventually(all_bound, what="the whole tree bound")
        shown = await kubectl(cluster, "gang", "train-mid")
        assert "  composite default/train-root  minGroupCount 2  groups 2/2 ready  ready" in shown, shown
        assert "    composite default/train-mid  minGroupCount 2  groups 2/2 ready  ready" in shown, shown
        assert "      podgroup default/train-a  minCount 2  pods 2/2 bound  ready" in shown, shown

        async def conditions_written() -> bool:
            out = yaml.safe_load(await kubectl(cluster, "get", "compositepodgroups", "-o", "yaml"))
            got = {
                o["metadata"]["name"]: [
                    (c["type"], c["status"], c["reason"]) for c in (o.get("status") or {}).get("conditions") or []
                ]
                for o in out["items"]
            }
            want = [("CompositePodGroupInitiallyScheduled", "True", "Scheduled")]
            return got == {"train-root": want, "train-mid": want}

        # kube-scheduler 1.37 pkg/scheduler/schedule_one_podgroup.go submitCompositePodGroupResult (Success: True,
        # CompositePodGroupReasonScheduled), as test/e2e/scheduling's verifyCompositePodGroupCondition reads it
        await eventually(conditions_written, what="CompositePodGroupInitiallyScheduled True on both composites")


def grove_pod(name: str) -> dict[str, Any]:
    body = pod(name, gpu=8)
    body["metadata"]["labels"] = {"grove.io/podgang": "serve-0"}
    body["spec"]["schedulingGates"] = [{"name": GATE}]
    return body


def podgang() -> dict[str, Any]:
    decode = [{"namespace": "default", "name": f"decode-{i}"} for i in range(4)]
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "serve-0", "namespace": "default"},
        "spec": {
            "podgroups": [
                {
                    "name": "serve-0-router",
                    "minReplicas": 1,
                    "podReferences": [{"namespace": "default", "name": "router-0"}],
                },
                {"name": "serve-0-decode", "minReplicas": 4, "podReferences": decode},
            ]
        },
    }


async def test_grove_podgang_router_and_three_decode_pods_never_bind(cluster: Cluster, tmp_path: Path) -> None:
    """One of the 5 nodes is taken: the router and 3 decode pods would fit, the decode group needs 4: nothing binds;
    the node freed, the router and the 4 decode pods bind together."""
    names = ["router-0", *(f"decode-{i}" for i in range(4))]
    blocker = pod("blocker", gpu=8)
    blocker["spec"]["nodeName"] = "node-0"
    async with replica(cluster.kubeconfig):
        await apply(cluster, tmp_path / "pods.yaml", blocker, *(grove_pod(n) for n in names))
        await apply(cluster, tmp_path / "podgang.yaml", podgang())
        for name in names:  # Grove's operator lifts the gates once the PodGang references the pods
            await kubectl(
                cluster, "patch", "pod", name, "--type=json", "-p", '[{"op":"remove","path":"/spec/schedulingGates"}]'
            )
        decode = names[1:]  # (the router reached its own quorum: it holds a reservation while its tree waits)
        await eventually(lambda: told(cluster, decode), what="the decode pods told they cannot all be placed")
        assert not set(names) & set(bound(await pods(cluster.client)))
        shown = await kubectl(cluster, "gang", "serve-0")
        assert "  podgang default/serve-0  minGroupCount 2  groups 0/2 ready  not ready" in shown, shown
        await kubectl(cluster, "delete", "pod", "blocker", "--wait=true")

        async def all_bound() -> bool:
            return set(names) <= set(bound(await pods(cluster.client)))

        await eventually(all_bound, what="the router and the 4 decode pods bound")


async def test_a_cycle_is_reported_on_the_objects(cluster: Cluster, tmp_path: Path) -> None:
    """Two CompositePodGroups naming each other as parent (kube-scheduler 1.37
    test/integration/scheduler/podgroup/hierarchy_validation_test.go at d6947b57, "cycle detected in hierarchy": the
    pods are held): nothing binds; the PodGroup's PodGroupInitiallyScheduled is False with reason SchedulerError naming
    the field, and InvalidGangTree events go to the PodGroup and the CompositePodGroup."""
    async with replica(cluster.kubeconfig):
        await apply(
            cluster,
            tmp_path / "cycle.yaml",
            workload(),
            group("CompositePodGroup", "root", "train-mid", minGroupCount=1),
            group("CompositePodGroup", "mid", "train-root", minGroupCount=1),
            group("PodGroup", "b", "train-mid", minCount=1),
            member("b-0", "b"),
        )

        async def condition() -> dict[str, Any] | None:
            got = json.loads(await kubectl(cluster, "get", "podgroups.scheduling.k8s.io", "train-b", "-o", "json"))
            found = [
                c
                for c in (got.get("status") or {}).get("conditions") or []
                if c["type"] == "PodGroupInitiallyScheduled"
            ]
            return found[0] if found else None

        cond = await eventually(condition, what="the PodGroup's condition")
        assert (cond["status"], cond["reason"]) == ("False", "SchedulerError"), cond
        assert "spec.parentCompositePodGroupName: cycle detected in hierarchy" in cond["message"], cond

        async def told() -> set[tuple[str, str]] | None:
            events = json.loads(await kubectl(cluster, "get", "events", "-o", "json"))["items"]
            found = {
                (e["involvedObject"]["kind"], e["involvedObject"]["name"])
                for e in events
                if e["reason"] == "InvalidGangTree"
            }
            return found if {("PodGroup", "train-b"), ("CompositePodGroup", "train-mid")} <= found else None

        await eventually(told, what="InvalidGangTree on the PodGroup and the CompositePodGroup")
        assert "b-0" not in bound(await pods(cluster.client))
