"""Gangs inferred from the owning workload, through the emulator (issue 14 item 3).

The emulator runs no workload controller: each test creates the workload object (its CRD from
tests/data/workload-crds.yaml; batch/v1 Job is built in) and then the pods exactly as its controller would
(tests/workloads.py cites the controller sources), with the controller's ownerReference carrying the uid the
apiserver gave the workload. The operator runs as the ServiceAccount of manifests/rbac.yaml with RBAC enforced
(plugin/pkg/auth/authorizer/rbac/rbac.go), plus manifests/rbac-infer-gangs.yaml where a test says so.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, apply_crds, running_cluster
from tests import workloads as w
from tests.integration.harness import (
    OPERATOR_NAMESPACE,
    SERVICE_ACCOUNT,
    bound,
    create,
    eventually,
    get_podgroup,
    on_replica,
    pod,
    pods,
    replica,
)

ROOT = Path(__file__).resolve().parents[2]
NODE = {"cpu": "4", "memory": "32Gi", "pods": "110"}
LABEL = "scheduling.gangsched.io/infer-gangs"
INFER: dict[str, Any] = {"inferGangs": {"enabled": True}}
USER = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{SERVICE_ACCOUNT}"
PATHS = {
    "Job": "/apis/batch/v1/namespaces/default/jobs",
    "JobSet": "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets",
    "LeaderWorkerSet": "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets",
    "PyTorchJob": "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs",
    "MPIJob": "/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs",
    "TrainJob": "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs",
    "RayCluster": "/apis/ray.io/v1/namespaces/default/rayclusters",
}


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(name) if isinstance(d, dict)]


async def install_inference_rbac(k: KubeClient) -> None:
    for doc in load((ROOT / "manifests" / "rbac-infer-gangs.yaml").read_text()):
        plural = "clusterroles" if doc["kind"] == "ClusterRole" else "clusterrolebindings"
        await k.create(f"/apis/rbac.authorization.k8s.io/v1/{plural}", doc)


def grants(*files: str) -> set[tuple[str, str, str, str]]:
    """(verb, group, resource, subresource) the ClusterRoles/Roles of these manifests grant."""
    out: set[tuple[str, str, str, str]] = set()
    for name in files:
        for doc in load((ROOT / "manifests" / name).read_text()):
            if doc["kind"] in ("ClusterRole", "Role"):
                for rule in doc["rules"]:
                    for group in rule["apiGroups"]:
                        for resource in rule["resources"]:
                            res, _, sub = resource.partition("/")
                            out.update((verb, group, res, sub) for verb in rule["verbs"])
    return out


async def opt_in(k: KubeClient, namespace: str = "default") -> None:
    await k.patch(f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": {LABEL: "true"}}})


async def apply(k: KubeClient, obj: dict[str, Any]) -> dict[str, Any]:
    """Create a workload (or a Job / StatefulSet between it and its pods); returns it as the apiserver stored it
    (with the uid its pods' ownerReferences carry)."""
    body = {**obj, "metadata": {k2: v for k2, v in obj["metadata"].items() if k2 != "uid"}}
    if obj["kind"] == "StatefulSet":
        return await k.create("/apis/apps/v1/namespaces/default/statefulsets", body)
    return await k.create(PATHS[obj["kind"]], body)


async def pods_of(k: KubeClient, workload: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods, with the Jobs / StatefulSets their controller references created first (tests/workloads.py)."""
    await w.materialize(lambda obj: apply(k, obj), pods, workload)
    return pods


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE) as c:
        await apply_crds(c.client, load((ROOT / "tests" / "data" / "workload-crds.yaml").read_text()))
        yield c


async def _all_bound(k: KubeClient, names: list[str]) -> bool:
    placed = bound(await pods(k))
    return all(n in placed for n in names)


def _names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


async def test_an_indexed_job_is_one_gang_owned_podgroup_ranks_and_status(cluster: Cluster) -> None:
    k = cluster.client
    await install_inference_rbac(k)
    await opt_in(k)
    job = await apply(k, w.indexed_job("train", parallelism=4, completions=4))
    members = w.job_pods(job, 4, cpu="2")
    async with replica(cluster.kubeconfig, **INFER) as op:
        await create(k, *members)
        await eventually(lambda: _all_bound(k, _names(members)), what="the Job's four pods bound")
        pg = await eventually(lambda: get_podgroup(k, "train"), what="PodGroup created for the Job")
        assert pg["spec"]["minMember"] == 4
        assert pg["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "train",
                "uid": job["metadata"]["uid"],
                "controller": False,
                "blockOwnerDeletion": False,
            }
        ]

        async def running() -> bool:
            status = ((await get_podgroup(k, "train")) or {}).get("status", {})
            return bool(status.get("phase") == "Running" and status.get("running") == 4)

        await eventually(running, what="PodGroup Running with 4 running")
        ranks = on_replica(op, lambda: {p.name: p.rank for p in op.cluster.pods.values()})
        assert {ranks[m["metadata"]["name"]] for m in members} == {0, 1, 2, 3}
        assert op.inference is not None and op.inference.reads == 1  # one GET for the Job, not one per pod
    used = cluster.server.authorizer.usage.get(USER, set())
    assert ("get", "batch", "jobs", "") in used and ("list", "", "namespaces", "") in used


async def test_a_jobset_that_does_not_fit_binds_nothing_and_a_raycluster_that_fits_binds(cluster: Cluster) -> None:
    k = cluster.client
    await install_inference_rbac(k)
    await opt_in(k)
    js = await apply(k, w.jobset("big", [("driver", 1, 1), ("workers", 2, 2)]))  # 5 pods x 2 cpu > 2 nodes x 4 cpu
    rc = await apply(k, w.raycluster("ray", workers=1, hosts=2))
    big, ray = await pods_of(k, js, w.jobset_pods(js, cpu="2")), w.ray_pods(rc, cpu="1")
    async with replica(cluster.kubeconfig, **INFER):
        await create(k, *big, *ray)
        await eventually(lambda: _all_bound(k, _names(ray)), what="the RayCluster's head and workers bound")
        pg = await eventually(lambda: get_podgroup(k, "big"), what="PodGroup of the JobSet")
        assert pg["spec"]["minMember"] == 5
        assert pg["metadata"]["ownerReferences"][0]["uid"] == js["metadata"]["uid"]
        ray_pg = await eventually(lambda: get_podgroup(k, "ray"), what="PodGroup of the RayCluster")
        assert ray_pg["spec"]["minMember"] == 3  # the head + 1 replica x 2 hosts
        assert not set(_names(big)) & set(bound(await pods(k)))  # all or nothing: none of the JobSet's pods


async def test_off_by_default_and_without_the_optional_role(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """Without inferGangs the Job's pods are bound one by one as before; with it but without
    manifests/rbac-infer-gangs.yaml the namespace opts in (namespaces are readable with the main ClusterRole: pod
    affinity's namespaceSelector) but its Job cannot be read (403): one warning, the pods bound one by one."""
    k = cluster.client
    await opt_in(k)
    job = await apply(k, w.indexed_job("j", parallelism=3, completions=3))
    members = w.job_pods(job, 3, cpu="3")  # 3 x 3 cpu on 2 x 4 cpu nodes: as a gang nothing would bind
    async with replica(cluster.kubeconfig):
        await create(k, *members)
        await eventually(lambda: _count_bound(k, _names(members), 2), what="two of the pods bound one by one (no gang)")
    assert await get_podgroup(k, "j") is None
    for m in members:
        await k.delete(f"/api/v1/namespaces/default/pods/{m['metadata']['name']}")
    members = [dict(m, metadata=dict(m["metadata"], name=m["metadata"]["name"] + "-b")) for m in members]
    with caplog.at_level(logging.WARNING, logger="gangsched.runtime.inferred"):
        async with replica(cluster.kubeconfig, **INFER) as op:
            await create(k, *members)
            await eventually(lambda: _count_bound(k, _names(members), 2), what="bound one by one again")
            assert op.inference is not None
    warnings = [r for r in caplog.records if "rbac-infer-gangs.yaml" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]


async def _count_bound(k: KubeClient, names: list[str], count: int) -> bool:
    placed = bound(await pods(k))
    return sum(1 for n in names if n in placed) == count


async def test_lws_groups_kubeflow_jobs_and_a_trainjob_get_podgroups_owned_by_their_workload(cluster: Cluster) -> None:
    k = cluster.client
    await install_inference_rbac(k)
    await opt_in(k)
    lws = await apply(k, w.lws("lws", replicas=2, size=2))
    pt = await apply(k, w.pytorchjob("pt", workers=1))
    mpi = await apply(k, w.mpijob("mpi", workers=1))
    tj = await apply(k, w.trainjob("tj"))
    tjs = await apply(k, w.trainjob_jobset(tj, [("node", 2, 1)]))
    groups = await pods_of(k, lws, [p for g in range(2) for p in w.lws_group_pods(lws, g, cpu="500m")])
    everything = [
        *groups,
        *w.pytorch_pods(pt, cpu="500m"),
        *await pods_of(k, mpi, w.mpi_pods(mpi, cpu="500m")),
        *await pods_of(k, tjs, w.jobset_pods(tjs, cpu="500m")),
    ]
    async with replica(cluster.kubeconfig, **INFER):
        await create(k, *everything)
        await eventually(lambda: _all_bound(k, _names(everything)), what="every workload's pods bound")
        expected = {
            "lws-0": ("LeaderWorkerSet", lws, 2),
            "lws-1": ("LeaderWorkerSet", lws, 2),
            "pt": ("PyTorchJob", pt, 2),
            "mpi": ("MPIJob", mpi, 2),
            "tj": ("TrainJob", tj, 2),  # the JobSet's owner: the PodGroup goes with the TrainJob
        }
        for name, (kind, owner, size) in expected.items():
            pg = await eventually(lambda name=name: get_podgroup(k, name), what=f"PodGroup {name}")  # type: ignore[misc]
            (ref,) = pg["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["uid"], ref["controller"]) == (kind, owner["metadata"]["uid"], False), name
            assert pg["spec"]["minMember"] == size, name
        pt_pg = await get_podgroup(k, "pt")
        assert (pt_pg or {})["spec"]["roles"] == [
            {"name": "master", "minMember": 1},
            {"name": "worker", "minMember": 1},
        ]
    # the optional ClusterRole is read-only, and with it every request the operator made was granted
    optional = grants("rbac-infer-gangs.yaml")
    assert {verb for verb, *_ in optional} == {"get", "list", "watch"}
    used = cluster.server.authorizer.usage.get(USER, set())
    assert used <= grants("rbac.yaml") | optional, sorted(used - grants("rbac.yaml") - optional)
    assert {("get", "leaderworkerset.x-k8s.io", "leaderworkersets", ""), ("get", "kubeflow.org", "mpijobs", "")} <= used


async def test_an_existing_podgroup_of_that_name_wins_with_a_warning(cluster: Cluster) -> None:
    k = cluster.client
    await install_inference_rbac(k)
    await opt_in(k)
    await create(
        k,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "pt", "namespace": "default"},
            "spec": {"minMember": 1},
        },
    )
    pt = await apply(k, w.pytorchjob("pt", workers=3))  # 4 pods x 3 cpu: as a gang of 4 it would not fit
    members = w.pytorch_pods(pt, cpu="3")
    async with replica(cluster.kubeconfig, **INFER):
        await create(k, *members)
        await eventually(lambda: _count_bound(k, _names(members), 2), what="two bound under the PodGroup's minMember 1")

        async def warned() -> list[dict[str, Any]]:
            items = (await k.get("/api/v1/namespaces/default/events"))["items"]
            return [e for e in items if e["reason"] == "InferredGangNameTaken"]

        (event,) = await eventually(warned, what="one InferredGangNameTaken event")
        assert event["involvedObject"]["kind"] == "PodGroup" and "PyTorchJob pt" in event["message"]


async def test_a_restart_of_every_pod_of_the_job_is_gang_scheduled_again(cluster: Cluster) -> None:
    """The Job controller re-creates every pod (new names, same indexes: pkg/controller/job/job_controller.go
    `manageJob`); the new incarnation is all or nothing again: with room for three of its four pods, none binds."""
    k = cluster.client
    await install_inference_rbac(k)
    await opt_in(k)
    job = await apply(k, w.indexed_job("train", parallelism=4, completions=4))
    first = w.job_pods(job, 4, cpu="2")
    async with replica(cluster.kubeconfig, **INFER):
        await create(k, *first)
        await eventually(lambda: _all_bound(k, _names(first)), what="the first incarnation bound")
        for name in _names(first):
            await k.delete(f"/api/v1/namespaces/default/pods/{name}", body={"gracePeriodSeconds": 0})

        async def gone() -> bool:
            return not set(_names(first)) & set(await pods(k))

        await eventually(gone, what="the first incarnation deleted")
        await create(k, pod("blocker", cpu="2"))
        await eventually(lambda: _all_bound(k, ["blocker"]), what="a lone pod taking 2 of the 8 cpus")
        second = [dict(p, metadata=dict(p["metadata"], name=p["metadata"]["name"] + "-r")) for p in first]
        await create(k, *second)

        async def unschedulable() -> bool:
            ps = await pods(k)
            conditions = [
                c
                for n in _names(second)
                for c in (ps[n].get("status") or {}).get("conditions") or []
                if c["type"] == "PodScheduled" and c["status"] == "False"
            ]
            return len(conditions) == 4

        await eventually(unschedulable, what="the new incarnation's four pods reported unschedulable")
        assert not set(_names(second)) & set(bound(await pods(k))), "a part of the restarted gang started"


async def test_a_trainjob_with_an_initializer_does_not_wait_for_pods_not_created_yet(cluster: Cluster) -> None:
    """trainer's runtimes run a dataset/model initializer first: the trainer node replicated job `dependsOn` it
    (kubeflow/trainer manifests/base/runtimes, jobset pkg/controllers/depends_on.go: its Jobs are created once the
    initializer is Complete). The gang's quorum is the initializer alone, so it starts; the node pods come after."""
    k = cluster.client
    await install_inference_rbac(k)
    await opt_in(k)
    tj = await apply(k, w.trainjob("tj"))
    spec = w.trainjob_jobset(tj, [("dataset-initializer", 1, 1), ("node", 2, 1)])
    spec["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
    tjs = await apply(k, spec)
    every = await pods_of(k, tjs, w.jobset_pods(tjs))
    initializer = [p for p in every if "initializer" in p["metadata"]["name"]]
    nodes = [p for p in every if p not in initializer]
    async with replica(cluster.kubeconfig, **INFER):
        await create(k, *initializer)
        await eventually(lambda: _all_bound(k, _names(initializer)), what="the initializer bound on its own")
        pg = await eventually(lambda: get_podgroup(k, "tj"), what="PodGroup of the TrainJob")
        assert (pg["spec"]["minMember"], pg["spec"]["totalMember"]) == (1, 3)
        assert pg["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
        await create(k, *nodes)
        await eventually(lambda: _all_bound(k, _names(nodes)), what="the trainer nodes bound after it")


async def test_a_namespace_labelled_while_the_operator_runs_opts_in_and_out(cluster: Cluster) -> None:
    """The namespaces are watched with a labelSelector: the apiserver sends DELETED when an object stops matching
    it (staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go `convertToWatchEvent`)."""
    k = cluster.client
    await install_inference_rbac(k)
    async with replica(cluster.kubeconfig, **INFER) as op:
        assert op.inference is not None and op.inference.watches_namespaces
        await opt_in(k)
        inferred = op.cache.inferred
        assert inferred is not None

        async def opted(on: bool) -> bool:
            return on_replica(op, lambda: "default" in inferred.namespaces) == on

        await eventually(lambda: opted(True), what="the label seen through the watch")
        job = await apply(k, w.indexed_job("a", parallelism=2, completions=2))
        await create(k, *w.job_pods(job, 2))
        await eventually(lambda: get_podgroup(k, "a"), what="the Job's gang and PodGroup")
        await k.patch("/api/v1/namespaces/default", {"metadata": {"labels": {LABEL: None}}})
        await eventually(lambda: opted(False), what="the label's removal seen through the watch")
        other = await apply(k, w.indexed_job("b", parallelism=2, completions=2))
        members = w.job_pods(other, 2)
        await create(k, *members)
        await eventually(lambda: _all_bound(k, _names(members)), what="the other Job's pods bound")
        assert await get_podgroup(k, "b") is None  # bound one by one: no gang, no PodGroup
