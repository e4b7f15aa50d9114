"""Several scheduler names served by one replica (issue 14 item 1): config `schedulerNames`, which pods are ours,
and the pods of other schedulers that name a PodGroup (state/foreign.py).

Oracles: kube-scheduler serves every profile's schedulerName from one process and one cache
(pkg/scheduler/profile/profile.go `NewMap`, pkg/scheduler/scheduler.go `frameworkForPod`: a pod whose
schedulerName has no profile is skipped); the apiserver defaults spec.schedulerName to "default-scheduler"
(pkg/apis/core/v1/defaults.go `SetDefaults_PodSpec`); KubeRay hard-codes `scheduler-plugins-scheduler` and the
`scheduling.x-k8s.io/pod-group` label (ray-operator/controllers/ray/batchscheduler/scheduler-plugins/
scheduler_plugins.go `schedulerInstanceName`).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.config import config_from_mapping
from gangsched.models.gang import referenced_gang
from gangsched.state.cache import ClusterCache
from gangsched.state.foreign import ForeignMembers

LABEL = "scheduling.x-k8s.io/pod-group"


def pod(name: str, *, scheduler: str | None, gang: str | None = "g") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if gang is not None:
        meta["labels"] = {LABEL: gang}
    return {"metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def test_scheduler_names_list_serves_every_name_and_its_first_is_the_primary() -> None:
    cfg = config_from_mapping({"schedulerNames": ["scheduler-plugins-scheduler", "gangsched"]})
    assert cfg.scheduler_name == "scheduler-plugins-scheduler"
    assert cfg.served_names == ("scheduler-plugins-scheduler", "gangsched")


def test_scheduler_name_alone_is_the_one_name_form() -> None:
    cfg = config_from_mapping({"schedulerName": "mine"})
    assert cfg.served_names == ("mine",)
    both = config_from_mapping({"schedulerName": "gangsched", "schedulerNames": ["a", "gangsched"]})
    assert both.scheduler_name == "gangsched" and both.served_names == ("gangsched", "a")


@pytest.mark.parametrize(
    ("data", "field", "allowed"),
    [
        ({"schedulerNames": []}, "schedulerNames", "must not be empty"),
        ({"schedulerNames": [""]}, "schedulerNames.0", "must not be empty"),
        ({"schedulerNames": "gangsched"}, "schedulerNames", "must be a list"),
        ({"schedulerNames": ["a", "a"]}, "schedulerNames", "must not repeat a name"),
        ({"schedulerName": "x", "schedulerNames": ["a", "b"]}, "schedulerName", "must be one of schedulerNames"),
        ({"schedulerNames": [f"n{i}" for i in range(33)]}, "schedulerNames", "at most 32"),
    ],
)
def test_bad_scheduler_names_name_the_field(data: dict[str, Any], field: str, allowed: str) -> None:
    with pytest.raises(InvalidField) as err:
        config_from_mapping(data)
    assert err.value.field == field and allowed in err.value.allowed


def test_every_served_name_is_ours_and_others_are_counted_for_their_podgroup() -> None:
    cache = ClusterCache(scheduler_name="gangsched", scheduler_names=("scheduler-plugins-scheduler",))
    cache.on_pod_list(
        [
            pod("ray-0", scheduler="scheduler-plugins-scheduler", gang="ray"),
            pod("mine-0", scheduler="gangsched", gang="ray"),
            pod("other-0", scheduler=None),  # defaulted by the apiserver: default-scheduler
            pod("other-1", scheduler="default-scheduler"),
            pod("volcano-0", scheduler="volcano"),
            pod("lone", scheduler="volcano", gang=None),
        ]
    )
    pods = cache.cluster.pods
    assert pods["default/ray-0"].ours and pods["default/ray-0"].gang == "default/ray"
    assert pods["default/mine-0"].ours
    assert not pods["default/other-0"].ours and pods["default/other-0"].gang is None
    assert cache.foreign.note("default/ray") is None
    assert cache.foreign.note("default/g") == (
        "3 pods reference this PodGroup with other schedulers: "
        "2 pods with schedulerName default-scheduler, 1 pod with schedulerName volcano"
    )
    assert len(cache.foreign) == 3
    cache.dirty_gangs.clear()
    cache.on_pod_event("DELETED", pod("volcano-0", scheduler="volcano"))
    assert cache.dirty_gangs == {"default/g"}
    assert cache.foreign.note("default/g") == "2 pods reference this PodGroup with schedulerName default-scheduler"
    cache.on_pod_event("MODIFIED", pod("other-1", scheduler="gangsched"))  # (re-created as ours: a member now)
    assert cache.foreign.note("default/g") == "1 pod references this PodGroup with schedulerName default-scheduler"
    assert cache.cluster.pods["default/other-1"].gang == "default/g"


def test_foreign_members_report_only_changes() -> None:
    foreign = ForeignMembers()
    assert foreign.update("ns/a", "ns/g", "x") == {"ns/g"}
    assert foreign.update("ns/a", "ns/g", "x") == set()
    assert foreign.update("ns/a", "ns/h", "x") == {"ns/g", "ns/h"}
    assert foreign.update("ns/a", None, "x") == {"ns/h"}
    assert foreign.remove("ns/a") == set() and len(foreign) == 0


def test_referenced_gang_never_raises() -> None:
    assert referenced_gang(pod("p", scheduler=None, gang="Bad_Name")) is None
    assert referenced_gang({"metadata": {"labels": "not a map"}}) is None
    conflicting = pod("p", scheduler=None, gang="a")
    conflicting["metadata"]["annotations"] = {"gang.scheduling.koordinator.sh/name": "b"}
    assert referenced_gang(conflicting) is None
    assert referenced_gang(pod("p", scheduler=None, gang="a")) == "default/a"
