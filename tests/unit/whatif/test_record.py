"""whatif/inputs/record.py `jobs_from_objects`: what `gangsched sim record` writes for listed PodGroups and pods
(the e2e test tests/e2e/test_sim_record.py drives the whole command against the emulator).

Oracles: Koordinator's gang annotations (apis/extension/coscheduling.go: gang.scheduling.koordinator.sh/name,
min-available, mode, waiting-time) and scheduler-plugins' PodGroup (apis/scheduling/v1alpha1/types.go:
minMember, scheduleTimeoutSeconds); pod status times as in k8s.io/api/core/v1/types.go (startTime,
containerStatuses[].state.terminated.finishedAt); effective requests as kube-scheduler computes them
(pkg/scheduler/framework/types.go `computePodResourceRequest`: max of init containers, sum of containers).
"""

from __future__ import annotations

from typing import Any

from gangsched.models.keys import KOORD_MIN_AVAILABLE, KOORD_MODE, KOORD_NAME, KOORD_WAITING_TIME
from gangsched.whatif.inputs.record import PLACEHOLDER_DURATION, jobs_from_objects
from gangsched.whatif.model import RoleSpec

D = "2026-01-01"


def _pod(
    name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    spec = {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "500m"}}}],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4", "memory": "512Mi"}}}],
    }  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": "ml", "labels": labels or {}, "annotations": annotations or {},
                     "creationTimestamp": extra.pop("created", "2026-01-01T00:00:10Z")},
        "spec": spec,
        "status": extra.pop("status", {"phase": "Pending"}),
    }  # fmt: skip


def _finished(start: str, end: str) -> dict[str, Any]:
    terminated = {"state": {"terminated": {"exitCode": 0, "finishedAt": end}}}
    return {"phase": "Succeeded", "startTime": start, "containerStatuses": [terminated, terminated]}


def test_koordinator_annotation_gang_without_podgroup() -> None:
    gang = {KOORD_NAME: "k", KOORD_MIN_AVAILABLE: "2", KOORD_MODE: "NonStrict", KOORD_WAITING_TIME: "90s"}
    pods = [
        _pod("k-0", annotations=gang, created=f"{D}T00:01:00Z", status=_finished(f"{D}T00:02:00Z", f"{D}T00:12:00Z")),
        _pod("k-1", annotations=gang, created=f"{D}T00:01:05Z", status=_finished(f"{D}T00:02:03Z", f"{D}T00:12:30Z")),
        _pod("plain"),
    ]  # fmt: skip
    (job,), notes = jobs_from_objects([], pods)
    assert (job.id, job.submit, job.min_member, job.mode, job.wait_seconds) == ("ml/k", 0.0, 2, "NonStrict", 90.0)
    assert job.duration == 630.0  # the last finish (00:12:30) minus the first start (00:02:00)
    assert job.roles == (RoleSpec(2, 4000, 1024, 1),)  # init container's 4 cpu > 1.5 of the containers
    assert notes == ["1 pod(s) of no gang not recorded"]


def test_podgroup_gang_times_and_placeholder() -> None:
    podgroups = [
        {"metadata": {"name": "early", "namespace": "ml", "creationTimestamp": "2026-01-01T00:00:00Z"},
         "spec": {"minMember": 1, "scheduleTimeoutSeconds": 30}},
        {"metadata": {"name": "late", "namespace": "ml", "creationTimestamp": "2026-01-01T01:00:00Z"},
         "spec": {"minMember": 1}},
        {"metadata": {"name": "bad", "namespace": "ml"}, "spec": {"minMember": -1}},
    ]  # fmt: skip
    pods = [
        _pod("e-0", labels={"scheduling.x-k8s.io/pod-group": "early"}),
        _pod("l-0", labels={"scheduling.x-k8s.io/pod-group": "late"}),
        _pod("x-0", labels={"scheduling.x-k8s.io/pod-group": "bad name!"}),
    ]
    jobs, notes = jobs_from_objects(podgroups, pods)
    assert [(j.id, j.submit, j.duration, j.wait_seconds) for j in jobs] == [
        ("ml/early", 0.0, PLACEHOLDER_DURATION, 30.0),
        ("ml/late", 3600.0, PLACEHOLDER_DURATION, None),
    ]
    assert any(n.startswith("PodGroup ml/bad left out: spec.minMember") for n in notes)
    assert any(n.startswith("pod ml/x-0 left out:") for n in notes)
    assert sum("duration unknown" in n for n in notes) == 2
