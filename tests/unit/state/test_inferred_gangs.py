"""Gangs inferred from the owning workload (issue 14 item 3): models/inferred.py, state/inferred.py and the cache.

Pods and workload objects are built as each controller's source builds them (tests/workloads.py cites the files);
which owners matter follows KAI Scheduler's pod-grouper (pkg/podgrouper/podgrouper/plugins: job, jobset,
leaderworkerset, kubeflow pytorch/mpi, trainjob, ray). Sizes as the controllers run them: a Job runs
min(parallelism, completions) pods at once (kubernetes pkg/controller/job/job_controller.go `manageJob`), a JobSet
replicas x that per replicated job, a PyTorchJob/MPIJob the sum of its replicaSpecs' replicas, a RayCluster its
head plus every worker group's replicas x numOfHosts (kuberay raycluster_controller.go `reconcilePods`).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangSpec
from gangsched.models.inferred import OwnerRef, infer_member, workload_info
from gangsched.models.rank import MemberMeta, member_ranks
from gangsched.state.cache import ClusterCache
from gangsched.state.inferred import InferredGangs
from tests import workloads as w


def _with_uids(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i, pod in enumerate(pods):
        pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}-{i}"
        pod["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    return pods


def _cases() -> list[Any]:
    job = w.indexed_job("train", parallelism=4, completions=8)
    js = w.jobset("js", [("driver", 1, 1), ("workers", 2, 3)])
    tj = w.trainjob("tj")
    tjs = w.trainjob_jobset(tj, [("node", 2, 1)])
    pt = w.pytorchjob("pt", workers=3)
    mpi = w.mpijob("mpi", workers=2)
    ray = w.raycluster("ray", workers=2, hosts=2)
    lws = w.lws("lws", replicas=2, size=3)
    return [
        ("indexed-job", job, w.job_pods(job, 4), "train", "Job", 4, ()),
        ("jobset", js, w.jobset_pods(js), "js", "JobSet", 7, (("driver", 1), ("workers", 6))),
        ("trainjob", tjs, w.jobset_pods(tjs), "tj", "JobSet", 2, (("node", 2),)),
        ("pytorchjob", pt, w.pytorch_pods(pt), "pt", "PyTorchJob", 4, (("master", 1), ("worker", 3))),
        ("mpijob", mpi, w.mpi_pods(mpi), "mpi", "MPIJob", 3, (("launcher", 1), ("worker", 2))),
        ("raycluster", ray, w.ray_pods(ray), "ray", "RayCluster", 5, (("head", 1), ("worker", 4))),
        ("lws-group-1", lws, w.lws_group_pods(lws, 1), "lws-1", "LeaderWorkerSet", 3, ()),
    ]


@pytest.mark.parametrize(
    ("case", "workload", "pods", "gang", "kind", "size", "roles"), _cases(), ids=[c[0] for c in _cases()]
)
def test_each_owner_kind_gives_one_gang_with_its_size_and_roles(
    case: str,
    workload: dict[str, Any],
    pods: list[dict[str, Any]],
    gang: str,
    kind: str,
    size: int,
    roles: tuple[tuple[str, int], ...],
) -> None:
    members = [infer_member(p) for p in pods]
    assert all(m is not None for m in members), case
    assert {m.gang for m in members if m} == {gang}
    assert {m.workload.kind for m in members if m} == {kind}
    ref = next(m.workload for m in members if m)
    info = workload_info(ref, workload)
    assert info is not None
    assert (info.size, info.total, info.roles) == (size, size, roles)
    assert {m.role for m in members if m} <= {r for r, _ in roles} | {None}
    if kind == "LeaderWorkerSet":  # the pods carry their group's size too
        assert {m.size for m in members if m} == {size}
    if case == "trainjob":  # the PodGroup goes with the TrainJob that owns the JobSet
        assert info.owner.kind == "TrainJob" and info.owner.name == "tj"
    else:
        assert info.owner == OwnerRef(
            workload["apiVersion"], workload["kind"], workload["metadata"]["name"], workload["metadata"]["uid"]
        )


def test_ranks_come_from_the_index_labels() -> None:
    """JobSet: global job index then completion index; LWS: worker-index; PyTorch: master first; Ray: head first."""

    def ranks(pods: list[dict[str, Any]]) -> dict[str, int]:
        metas = [MemberMeta(p["metadata"]["name"], p["metadata"]["labels"], p["metadata"]["annotations"]) for p in pods]
        return member_ranks(metas)

    js = w.jobset("js", [("driver", 1, 1), ("workers", 2, 2)])
    assert sorted(ranks(w.jobset_pods(js)).items(), key=lambda kv: kv[1])[0][0].startswith("js-driver-0")
    lws = ranks(w.lws_group_pods(w.lws("l", replicas=1, size=4), 0))
    assert lws == {"l-0": 0, "l-0-1": 1, "l-0-2": 2, "l-0-3": 3}
    pt = ranks(w.pytorch_pods(w.pytorchjob("pt", workers=2)))
    assert pt["pt-master-0"] == 0 and {pt["pt-worker-0"], pt["pt-worker-1"]} == {1, 2}
    ray = ranks(w.ray_pods(w.raycluster("r", workers=2)))
    assert ray["r-head-x"] == 0 and sorted(ray.values()) == [0, 1, 2]


def test_what_makes_no_gang() -> None:
    job = w.indexed_job("plain", parallelism=2, completions=2)
    pods = w.job_pods(job, 2)
    member = infer_member(pods[0])
    assert member is not None
    job["spec"]["completionMode"] = "NonIndexed"
    assert workload_info(member.workload, job) is None  # (a NonIndexed Job's pods carry no index anyway)
    del pods[1]["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
    del pods[1]["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
    assert infer_member(pods[1]) is None
    pods[0]["metadata"]["ownerReferences"] = []
    assert infer_member(pods[0]) is None  # an index without a Job owning the pod
    assert infer_member({"metadata": {"name": "lone", "labels": {"app": "x"}}}) is None


def test_bad_values_name_the_key() -> None:
    pod = w.lws_group_pods(w.lws("l", replicas=1, size=2), 0)[0]
    pod["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/size"] = "two"
    with pytest.raises(InvalidField, match=r"leaderworkerset\.sigs\.k8s\.io/size"):
        infer_member(pod)
    js = w.jobset("js", [("a", 1, 1)])
    js["spec"]["replicatedJobs"][0]["replicas"] = "many"
    ref = infer_member(w.jobset_pods(w.jobset("js", [("a", 1, 1)]))[0])
    assert ref is not None
    with pytest.raises(InvalidField, match=r"spec.replicatedJobs\[0\].replicas"):
        workload_info(ref.workload, js)


def _cache(*, all_namespaces: bool) -> ClusterCache:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.inferred = InferredGangs(all_namespaces=all_namespaces)
    return cache


def test_the_cache_waits_for_the_workload_then_schedules_the_gang_and_asks_for_its_podgroup() -> None:
    cache = _cache(all_namespaces=True)
    job = w.indexed_job("train", parallelism=3, completions=3, job_uid="job-uid")
    for pod in _with_uids(w.job_pods(job, 3)):
        cache.on_pod_event("ADDED", pod)
    assert cache.inferred is not None
    assert {p.gang for p in cache.cluster.pods.values()} == {"default/train"}
    waiting = cache.cluster.gangs["default/train"]
    assert waiting.spec is None  # its members wait until the Job is read
    wanted = cache.inferred.take_wanted()
    assert [r.path for r in wanted] == ["/apis/batch/v1/namespaces/default/jobs/train"]
    assert cache.inferred.take_wanted() == []  # read once
    cache.reinfer(cache.inferred.workload_read(wanted[0], workload_info(wanted[0], job)))
    spec = cache.cluster.gangs["default/train"].spec
    assert spec is not None
    assert (spec.min_member, spec.total_member, spec.source) == (3, 3, "inferred")
    assert cache.podgroups_to_create["default/train"] == spec
    assert cache.inferred.owner("default/train") == OwnerRef("batch/v1", "Job", "train", "job-uid")
    for pod_key in list(cache.cluster.pods):
        cache.on_pod_event("DELETED", {"metadata": {"namespace": "default", "name": pod_key.split("/")[1]}})
    assert cache.inferred.sizes() == {"candidates": 0, "workloads": 0, "owners": 0, "gangs": 0}
    assert cache.gang_structure_sizes()["sources"] == 0


def test_topology_annotations_on_the_pods_override_the_inferred_spec() -> None:
    """The template's `scheduling.gangsched.io/*` topology keys reach every pod (each controller copies its template's
    metadata); they override an inferred gang's spec field by field, as they override a PodGroup's (docs/annotations.md,
    "Declaring a gang"). Before, an inferred gang dropped them without a word."""
    cache = _cache(all_namespaces=True)
    job = w.indexed_job("train", parallelism=2, completions=2, job_uid="job-uid")
    topology = {
        "scheduling.gangsched.io/network-topology-mode": "hard",
        "scheduling.gangsched.io/highest-tier-allowed": "2",
        "scheduling.gangsched.io/group-size": "2",
    }
    for pod in _with_uids(w.job_pods(job, 2)):
        pod["metadata"]["annotations"].update(topology)
        cache.on_pod_event("ADDED", pod)
    assert cache.inferred is not None
    (wanted,) = cache.inferred.take_wanted()
    cache.reinfer(cache.inferred.workload_read(wanted, workload_info(wanted, job)))
    spec = cache.cluster.gangs["default/train"].spec
    assert spec is not None and spec.network_topology is not None
    topo = spec.network_topology
    assert (topo.mode.value, topo.highest_tier_allowed, topo.group_size) == ("hard", 2, 2)
    assert spec.min_member == 2
    assert cache.podgroups_to_create["default/train"] == spec  # the PodGroup created for it shows it


def test_an_unreadable_workload_leaves_its_pods_without_a_gang() -> None:
    cache = _cache(all_namespaces=True)
    rc = w.raycluster("ray", workers=1)
    for pod in _with_uids(w.ray_pods(rc)):
        cache.on_pod_event("ADDED", pod)
    assert cache.inferred is not None
    (ref,) = cache.inferred.take_wanted()
    cache.reinfer(cache.inferred.workload_read(ref, None))  # 403 / 404
    assert {p.gang for p in cache.cluster.pods.values()} == {None}


def spec_of(cache: ClusterCache, key: str) -> GangSpec | None:
    return cache.cluster.gangs[key].spec


def test_an_lws_group_waits_for_its_lws_and_a_namespace_opts_in_and_out() -> None:
    cache = _cache(all_namespaces=False)
    lws = w.lws("l", replicas=1, size=3)
    for pod in _with_uids(w.lws_group_pods(lws, 0)):
        cache.on_pod_event("ADDED", pod)
    assert cache.inferred is not None
    assert {p.gang for p in cache.cluster.pods.values()} == {None}  # not opted in: pods one by one, as today
    cache.reinfer(cache.inferred.namespace_set({"default"}))
    assert spec_of(cache, "default/l-0") is None  # waits for the LWS: its startupPolicy decides
    assert cache.inferred.reading("default/l-0")
    (ref,) = cache.inferred.take_wanted()
    cache.reinfer(cache.inferred.workload_read(ref, workload_info(ref, lws)))
    lws_spec = spec_of(cache, "default/l-0")
    assert lws_spec is not None and (lws_spec.min_member, lws_spec.total_member) == (3, 3)
    assert {p.rank for p in cache.cluster.pods.values()} == {0, 1, 2}
    cache.reinfer(cache.inferred.namespace_changed("default", False))
    assert {p.gang for p in cache.cluster.pods.values()} == {None}
    assert not cache.cluster.gangs.get("default/l-0")


def test_the_quorum_counts_only_the_pods_the_controller_starts_at_once() -> None:
    """JobSet: a replicated job that `dependsOn` another is created after it (jobset pkg/controllers/depends_on.go;
    trainer's initializers), InOrder starts them one by one (startup_policy.go); LWS LeaderReady creates the
    workers once the leader is ready (lws pkg/controllers/pod_controller.go; KAI lws_grouper.go
    `calcLeaderReadyMinAvailable`); RayCluster: minReplicas when set (KAI ray_grouper.go
    `calcJobNumOfPodsAndSubGroups`). A gang waiting for pods not created yet would never start."""

    def info(obj: dict[str, Any], pod: dict[str, Any]) -> tuple[int, int, tuple[tuple[str, int], ...]]:
        member = infer_member(pod)
        assert member is not None
        found = workload_info(member.workload, obj)
        assert found is not None
        return found.size, found.total, found.roles

    js = w.jobset("tj", [("initializer", 1, 1), ("node", 2, 2)])
    js["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "initializer", "status": "Complete"}]
    pod = w.jobset_pods(js)[0]
    assert info(js, pod) == (1, 5, (("initializer", 1),))
    del js["spec"]["replicatedJobs"][1]["dependsOn"]
    js["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    assert info(js, pod) == (1, 5, (("initializer", 1),))
    del js["spec"]["startupPolicy"]
    assert info(js, pod) == (5, 5, (("initializer", 1), ("node", 4)))
    lws = w.lws("l", replicas=1, size=4)
    lws["spec"]["startupPolicy"] = "LeaderReady"
    assert info(lws, w.lws_group_pods(lws, 0)[0]) == (1, 4, ())
    rc = w.raycluster("r", workers=4, hosts=2)
    rc["spec"]["workerGroupSpecs"][0]["minReplicas"] = 1
    assert info(rc, w.ray_pods(rc)[0]) == (3, 9, (("head", 1), ("worker", 2)))
    rc["spec"]["workerGroupSpecs"][0]["suspend"] = True
    assert info(rc, w.ray_pods(rc)[0]) == (1, 1, (("head", 1),))


def test_a_declared_gang_wins_over_inference() -> None:
    cache = _cache(all_namespaces=True)
    pod = _with_uids(w.ray_pods(w.raycluster("ray", workers=0)))[0]
    pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "mine"
    cache.on_pod_event("ADDED", pod)
    assert cache.cluster.pods["default/ray-head-x"].gang == "default/mine"
    assert cache.inferred is not None and cache.inferred.take_wanted() == []


def test_off_by_default() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    for pod in _with_uids(w.job_pods(w.indexed_job("j", parallelism=2, completions=2), 2)):
        cache.on_pod_event("ADDED", pod)
    assert cache.inferred is None
    assert {p.gang for p in cache.cluster.pods.values()} == {None}


def test_two_workloads_of_one_name_do_not_share_a_gang() -> None:
    """A Job and a RayCluster both named "x": the first one seen makes gang x, the other's pods get no gang."""
    cache = _cache(all_namespaces=True)
    job_pods = _with_uids(w.job_pods(w.indexed_job("x", parallelism=1, completions=1), 1))
    ray = w.raycluster("x", workers=0)
    ray_pods = _with_uids(w.ray_pods(ray))
    for pod in (*job_pods, *ray_pods):
        cache.on_pod_event("ADDED", pod)
    assert cache.cluster.pods["default/x-0-x0"].gang == "default/x"
    assert cache.cluster.pods["default/x-head-x"].gang is None


def test_the_config_option_is_off_by_default_and_strict() -> None:
    from gangsched.models.config import config_from_mapping

    assert not config_from_mapping({}).infer_gangs.enabled
    on = config_from_mapping({"inferGangs": {"enabled": True, "allNamespaces": True}}).infer_gangs
    assert (on.enabled, on.all_namespaces, on.namespace_label) == (True, True, "scheduling.gangsched.io/infer-gangs")
    with pytest.raises(InvalidField, match=r"inferGangs\.namespaceLabels"):
        config_from_mapping({"inferGangs": {"namespaceLabels": "x"}})  # a typo is refused, never a silent default


def test_jobset_exclusive_placement_quorum_is_each_jobs_leader() -> None:
    """jobset's pod webhooks (pkg/webhooks/pod_admission_webhook.go ValidateCreate: a follower, completion index != 0,
    of a JobSet with `alpha.jobset.sigs.k8s.io/exclusive-topology` is refused until its leader is scheduled, unless
    the node-selector strategy is used; pod_mutating_webhook.go then pins it to the leader's domain). The exclusive
    key on the JobSet or on a replicated job's template (jobset_controller.go labelAndAnnotateObject)."""

    def info(obj: dict[str, Any]) -> tuple[int, int, tuple[tuple[str, int], ...]]:
        member = infer_member(w.jobset_pods(obj)[0])
        assert member is not None
        found = workload_info(member.workload, obj)
        assert found is not None
        return found.size, found.total, found.roles

    js = w.jobset("ex", [("driver", 1, 1), ("workers", 2, 4)])
    js["metadata"]["annotations"] = {"alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
    assert info(js) == (3, 9, (("driver", 1), ("workers", 2)))  # one leader per Job
    js["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/node-selector"] = "true"
    assert info(js) == (9, 9, (("driver", 1), ("workers", 8)))  # nodes labelled beforehand: every pod at once
    js["metadata"]["annotations"] = {}
    js["spec"]["replicatedJobs"][1]["template"]["metadata"] = {
        "annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}
    }
    assert info(js) == (3, 9, (("driver", 1), ("workers", 2)))
