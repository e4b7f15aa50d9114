"""Gangs inferred from the owning workload with the real kubectl (issue 14 item 3).

Everything is applied with kubectl as a user (and the controllers) would: the workload CRDs (tests/data), the
optional ClusterRole manifests/rbac-infer-gangs.yaml, the namespace label, each workload object, then the objects its
controller creates between it and its pods (Jobs, StatefulSets) and the pods themselves with the controller's
labels and ownerReferences (tests/workloads.py cites the controller source of each; the emulator runs no workload
controller). Checked: the gang is recognized (all or nothing: a JobSet that cannot fit binds nothing), ranks come
from the index labels, the PodGroup is created, owned by the workload, with the right status; and without opt-in the
same pods are bound one by one as before.
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
from tests import workloads as w
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, get_podgroup, on_replica, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
NODE = {"cpu": "4", "memory": "32Gi", "pods": "110"}
LABEL = "scheduling.gangsched.io/infer-gangs"


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        await kubectl(cluster, "apply", "-f", str(ROOT / "tests" / "data" / "workload-crds.yaml"))
        yield cluster


async def kubectl_gang(cluster: Cluster, *args: str) -> str:
    """`kubectl gang ...`: the plugin this package installs, first on PATH ($KUBECONFIG: kubectl refuses flags
    before a plugin's name)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path, KUBECONFIG=cluster.kubeconfig)
    result = await asyncio.to_thread(
        subprocess.run, ["kubectl", "gang", *args], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, f"kubectl gang {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


async def kubectl_create(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    """`kubectl create -f - -o json`: the object as stored (its uid is what its dependents' ownerReferences name)."""
    body = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}
    created: dict[str, Any] = json.loads(
        await kubectl(cluster, "create", "-f", "-", "-o", "json", input=json.dumps(body))
    )
    return created


async def apply_pods(cluster: Cluster, workload: dict[str, Any], members: list[dict[str, Any]]) -> list[str]:
    await w.materialize(lambda obj: kubectl_create(cluster, obj), members, workload)
    await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(members))
    return [m["metadata"]["name"] for m in members]


async def podgroups(cluster: Cluster) -> dict[str, dict[str, Any]]:
    items = json.loads(await kubectl(cluster, "get", "podgroups.scheduling.x-k8s.io", "-o", "json"))["items"]
    return {pg["metadata"]["name"]: pg for pg in items}


async def test_job_jobset_lws_and_raycluster_are_gangs_when_opted_in(two_nodes: Cluster) -> None:
    c, k = two_nodes, two_nodes.client
    await kubectl(c, "apply", "-f", str(ROOT / "manifests" / "rbac-infer-gangs.yaml"))
    await kubectl(c, "label", "namespace", "default", f"{LABEL}=true")
    job = await kubectl_create(c, w.indexed_job("train", parallelism=2, completions=4))
    lws = await kubectl_create(c, w.lws("serve", replicas=1, size=2))
    ray = await kubectl_create(c, w.raycluster("ray", workers=1))
    js = await kubectl_create(c, w.jobset("big", [("workers", 1, 5)]))  # 5 x 2 cpu: more than both nodes
    async with replica(c.kubeconfig, inferGangs={"enabled": True}) as op:
        fits = [
            *await apply_pods(c, job, w.job_pods(job, 2)),
            *await apply_pods(c, lws, w.lws_group_pods(lws, 0)),
            *await apply_pods(c, ray, w.ray_pods(ray)),
        ]
        big = await apply_pods(c, js, w.jobset_pods(js, cpu="2"))

        async def all_fitting_bound() -> bool:
            return set(fits) <= set(bound(await pods(k)))

        await eventually(all_fitting_bound, what="the Job, the LWS group and the RayCluster bound")

        async def running() -> dict[str, dict[str, Any]] | None:
            found = await podgroups(c)
            phases = {n: (pg.get("status") or {}).get("phase") for n, pg in found.items()}
            ok = all(phases.get(n) == "Running" for n in ("train", "serve-0", "ray")) and "big" in found
            return found if ok else None

        found = await eventually(running, what="PodGroups Running for the fitting workloads")
        for name, owner, size in (("train", job, 2), ("serve-0", lws, 2), ("ray", ray, 2), ("big", js, 5)):
            pg = found[name]
            (ref,) = pg["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["name"], ref["uid"]) == (
                owner["kind"],
                owner["metadata"]["name"],
                owner["metadata"]["uid"],
            ), name
            assert (ref["controller"], ref["blockOwnerDeletion"]) == (False, False)
            assert pg["spec"]["minMember"] == size, name
        assert not set(big) & set(bound(await pods(k))), "a part of the JobSet started"
        big_status = found["big"].get("status") or {}
        assert big_status.get("phase") != "Running" and not big_status.get("scheduled"), big_status
        ranks = on_replica(op, lambda: {p.name: p.rank for p in op.cluster.pods.values()})
        assert (ranks["serve-0"], ranks["serve-0-1"]) == (0, 1)  # leaderworkerset.sigs.k8s.io/worker-index
        assert ranks["ray-head-x"] == 0  # ray.io/node-type: head first
        train = [ranks[n] for n in fits if n.startswith("train-")]
        assert sorted(r for r in train if r is not None) == [0, 1] and None not in train  # job-completion-index
        table = await kubectl(c, "get", "podgroups.scheduling.x-k8s.io")
        assert "train" in table and "Running" in table, table
        tree = await kubectl_gang(c, "ray")  # the plugin finds an inferred gang's pods through their workload
        assert "gang default/ray" in tree and "role head (1)" in tree and "role worker (1)" in tree, tree
        assert "ray-head-x  node=node-" in tree and "ray-worker-gpu-0  node=node-" in tree, tree


async def test_without_opt_in_the_same_pods_are_bound_one_by_one(two_nodes: Cluster) -> None:
    c, k = two_nodes, two_nodes.client
    await kubectl(c, "apply", "-f", str(ROOT / "manifests" / "rbac-infer-gangs.yaml"))
    js = await kubectl_create(c, w.jobset("big", [("workers", 1, 5)]))
    async with replica(c.kubeconfig):  # inferGangs off (the default)
        big = await apply_pods(c, js, w.jobset_pods(js, cpu="2"))

        async def four_bound() -> bool:
            placed = bound(await pods(k))
            return sum(1 for n in big if n in placed) == 4

        await eventually(four_bound, what="four of the five pods bound one by one (two per node)")
        assert await get_podgroup(k, "big") is None
        assert await podgroups(c) == {}
