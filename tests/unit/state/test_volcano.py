"""Volcano PodGroups give Volcano-style gangs their count (state/volcano.py through state/cache.py).

Objects as LeaderWorkerSet's Volcano provider builds them (kubernetes-sigs/lws
pkg/schedulerprovider/volcano_provider.go: pods annotated `scheduling.k8s.io/group-name` and
`leaderworkerset.sigs.k8s.io/size`; a Volcano PodGroup of that name with minMember = size, or 1 under the
LeaderReady startup policy).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.state.cache import ClusterCache
from tests.builders import member_obj

GROUP = "vllm-0-abc"


def lws_member(worker: int, size: str | None = "4", **annotations: str) -> dict[str, Any]:
    obj = member_obj(f"vllm-0-{worker}")
    obj["metadata"]["labels"] = {"leaderworkerset.sigs.k8s.io/worker-index": str(worker)}
    obj["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": GROUP, **annotations}
    if size is not None:
        obj["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/size"] = size
    return obj


def volcano_pg(min_member: Any, uid: str = "v-1") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": GROUP, "namespace": "default", "uid": uid},
        "spec": {"minMember": min_member},
    }


def quorum(cache: ClusterCache) -> int | None:
    gang = cache.cluster.gangs.get(f"default/{GROUP}")
    return gang.spec.min_member if gang is not None and gang.spec is not None else None


@pytest.mark.parametrize("volcano_first", [True, False])
def test_volcano_minmember_wins_over_lws_size(volcano_first: bool) -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    if volcano_first:
        cache.on_volcano_podgroup("ADDED", volcano_pg(1))
    for worker in range(4):
        cache.on_pod_event("ADDED", lws_member(worker))
    if not volcano_first:
        assert quorum(cache) == 4  # LWS's size, until the Volcano PodGroup is seen
        cache.on_volcano_podgroup("ADDED", volcano_pg(1))
    assert quorum(cache) == 1  # LeaderReady: the leader may start alone
    cache.on_volcano_podgroup("DELETED", volcano_pg(1))
    assert quorum(cache) == 4


def test_volcano_podgroup_counts_pods_without_a_size() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", lws_member(0, size=None))
    assert quorum(cache) is None  # a name alone: waits for a PodGroup
    cache.on_volcano_podgroup("ADDED", volcano_pg(3))
    assert quorum(cache) == 3
    assert cache.podgroups_to_create[f"default/{GROUP}"].min_member == 3  # shown by `kubectl get pg`


def test_explicit_min_available_wins_over_volcano() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_volcano_podgroup("ADDED", volcano_pg(1))
    cache.on_pod_event("ADDED", lws_member(0, **{"gang.scheduling.koordinator.sh/min-available": "2"}))
    assert quorum(cache) == 2


@pytest.mark.parametrize("bad", [0, -1, "4", None, True])
def test_invalid_volcano_minmember_is_reported_once_and_gives_no_count(bad: Any) -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", lws_member(0))
    cache.on_volcano_podgroup("ADDED", volcano_pg(bad))
    cache.on_volcano_podgroup("MODIFIED", volcano_pg(bad))
    (problem,) = [p for p in cache.problems if p.reason == "InvalidSpec"]
    assert problem.api_version == "scheduling.volcano.sh/v1beta1" and "spec.minMember" in problem.message
    assert quorum(cache) == 4


def test_other_gangs_ignore_volcano_podgroups() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    labelled = member_obj("p")
    labelled["metadata"]["annotations"] = {
        "gang.scheduling.koordinator.sh/name": GROUP,
        "gang.scheduling.koordinator.sh/min-available": "3",
    }
    cache.on_pod_event("ADDED", labelled)
    cache.on_volcano_podgroup("ADDED", volcano_pg(1))
    assert quorum(cache) == 3


def volcano_job_member(name: str, task: str) -> dict[str, Any]:
    """A Volcano job's pod (volcano-sh/volcano pkg/controllers/job/job_controller_util.go createJobPod)."""
    obj = member_obj(name)
    obj["metadata"]["labels"] = {"volcano.sh/task-spec": task, "volcano.sh/job-name": "tf"}
    obj["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": GROUP, "volcano.sh/task-spec": task}
    return obj


def job_pg(min_member: int, min_task_member: Any) -> dict[str, Any]:
    pg = volcano_pg(min_member)
    pg["spec"]["minTaskMember"] = min_task_member
    return pg


@pytest.mark.parametrize(
    ("min_member", "roles"),
    [
        (3, ()),  # below the tasks' sum (5): Volcano skips the per-task check (job_info.go CheckTaskReady)
        (5, (("ps", 1), ("worker", 4))),  # at the sum: every task's minimum is enforced
        (6, (("ps", 1), ("worker", 4))),
    ],
)
def test_volcano_min_task_member_are_roles_exactly_when_volcano_enforces_them(
    min_member: int, roles: tuple[tuple[str, int], ...]
) -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_volcano_podgroup("ADDED", job_pg(min_member, {"ps": 1, "worker": 4, "chief": 0}))
    cache.on_pod_event("ADDED", volcano_job_member("tf-ps-0", "ps"))
    for i in range(4):
        cache.on_pod_event("ADDED", volcano_job_member(f"tf-worker-{i}", "worker"))
    gang = cache.cluster.gangs[f"default/{GROUP}"]
    assert gang.spec is not None
    assert (gang.spec.min_member, gang.spec.roles) == (min_member, roles)
    assert gang.spec.total_member is None  # a Volcano PodGroup bounds no total: the quorum is chosen among all
    assert cache.cluster.pods["default/tf-ps-0"].role == "ps"  # volcano.sh/task-spec


def test_invalid_min_task_member_is_reported_and_gives_no_roles() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", volcano_job_member("tf-ps-0", "ps"))
    cache.on_volcano_podgroup("ADDED", job_pg(5, {"ps": "1"}))
    (problem,) = [p for p in cache.problems if p.reason == "InvalidSpec"]
    assert "spec.minTaskMember" in problem.message
    gang = cache.cluster.gangs[f"default/{GROUP}"]
    assert gang.spec is not None and (gang.spec.min_member, gang.spec.roles) == (5, ())


def test_lws_size_stays_the_total_under_a_volcano_podgroup() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_volcano_podgroup("ADDED", volcano_pg(1))
    for worker in range(4):
        cache.on_pod_event("ADDED", lws_member(worker))
    gang = cache.cluster.gangs[f"default/{GROUP}"]
    assert gang.spec is not None and (gang.spec.min_member, gang.spec.total_member) == (1, 4)


def trainer_pg(topology: Any) -> dict[str, Any]:
    """The Volcano PodGroup Kubeflow Trainer builds in Volcano mode (kubeflow/trainer
    pkg/runtime/framework/plugins/volcano/volcano.go Build, commit 8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3):
    named after the TrainJob, minMember = the pods of all its PodSets, their summed requests as minResources, and
    the runtime's networkTopology copied as {mode, highestTierAllowed}."""
    pg = volcano_pg(4)
    pg["spec"]["minResources"] = {"nvidia.com/gpu": "32"}
    pg["spec"]["networkTopology"] = topology
    return pg


def network(cache: ClusterCache) -> Any:
    gang = cache.cluster.gangs.get(f"default/{GROUP}")
    return gang.spec.network_topology if gang is not None and gang.spec is not None else None


@pytest.mark.parametrize(
    ("topology", "mode", "tier"),
    [
        ({"mode": "hard", "highestTierAllowed": 1}, "hard", 1),
        ({"mode": "soft", "highestTierAllowed": 2}, "soft", 2),
        ({"highestTierAllowed": 1}, "hard", 1),  # +kubebuilder:default=hard (volcano-sh/apis types.go)
        ({"mode": "hard"}, "hard", None),  # no tier: no limit
    ],
)
def test_volcano_network_topology_is_the_gangs(topology: dict[str, Any], mode: str, tier: int | None) -> None:
    """Volcano's NetworkTopologySpec (volcano-sh/apis pkg/apis/scheduling/v1beta1/types.go: mode hard|soft, default
    hard; highestTierAllowed the highest tier the job may cross) is the gang's networkTopology (tiers count from 1 in
    both); the bug it fixes: a hard tier-1 request was not read at all, so the gang was placed with no limit."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_volcano_podgroup("ADDED", trainer_pg(topology))
    for worker in range(4):
        cache.on_pod_event("ADDED", lws_member(worker, size=None))
    found = network(cache)
    assert found is not None and (str(found.mode), found.highest_tier_allowed) == (mode, tier)
    assert not cache.problems
    assert quorum(cache) == 4


def test_volcano_network_topology_changes_are_followed_and_not_frozen_into_the_created_podgroup() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    for worker in range(4):
        cache.on_pod_event("ADDED", lws_member(worker, size=None))
    cache.on_volcano_podgroup("ADDED", trainer_pg({"mode": "hard", "highestTierAllowed": 1}))
    assert network(cache).highest_tier_allowed == 1
    created = cache.podgroups_to_create.get(f"default/{GROUP}")
    assert created is None or created.network_topology is None  # the Volcano PodGroup stays the source
    cache.on_volcano_podgroup("MODIFIED", trainer_pg({"mode": "soft", "highestTierAllowed": 2}))
    assert str(network(cache).mode) == "soft" and network(cache).highest_tier_allowed == 2
    cache.on_volcano_podgroup("MODIFIED", volcano_pg(4))
    assert network(cache) is None


@pytest.mark.parametrize(
    ("topology", "field"),
    [
        ({"mode": "hard", "highestTierName": "spine"}, "highestTierName"),
        ({"mode": "hard", "highestTierAllowed": 0}, "highestTierAllowed"),
        ({"mode": "strict"}, "mode"),
    ],
)
def test_volcano_network_topology_that_does_not_map_is_reported(topology: dict[str, Any], field: str) -> None:
    """highestTierName (volcano-sh/apis types.go: a tier's name, exclusive with highestTierAllowed) and tier 0 have
    no gangsched tier; a mode other than the CRD's enum hard|soft is invalid: each reported, naming field and value."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_volcano_podgroup("ADDED", trainer_pg(topology))
    assert [p.reason for p in cache.problems] == ["InvalidSpec"]
    message = cache.problems[0].message
    assert f"spec.networkTopology.{field}" in message and repr(topology[field]) in message, message
    assert quorum(cache) is None or quorum(cache) == 4
    cache.on_volcano_podgroup("MODIFIED", trainer_pg(topology))
    assert len(cache.problems) == 1  # said once


def test_volcano_sub_group_policy_is_reported_not_honoured() -> None:
    """Volcano's PodGroup spec.subGroupPolicy (a networkTopology per subgroup, volcano.sh docs "Multi-dimensional
    network topology"): not applied by gangsched, so it says so; the gang keeps its own networkTopology."""
    cache = ClusterCache(scheduler_name="gangsched")
    pg = trainer_pg({"mode": "hard", "highestTierAllowed": 2})
    pg["spec"]["subGroupPolicy"] = [{"name": "tp", "subGroupSize": 2, "networkTopology": {"mode": "hard"}}]
    cache.on_volcano_podgroup("ADDED", pg)
    for worker in range(4):
        cache.on_pod_event("ADDED", lws_member(worker, size=None))
    (problem,) = cache.problems
    assert "spec.subGroupPolicy" in problem.message, problem.message
    assert network(cache).highest_tier_allowed == 2
