"""ClusterCache's quick path for pod updates that only move nodeName or status (bind, Running, nomination).

The record it keeps must be exactly what a full parse of the new version gives; anything else (labels,
annotations, spec) takes the full parse. Checked against a fresh cache fed only the new version.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gangsched.state.cache import ClusterCache
from tests.builders import same_record

Change = Callable[[dict[str, Any]], None]


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p0",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "5",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"scheduling.x-k8s.io/pod-group": "g"},
            "annotations": {},
        },
        "spec": {
            "schedulerName": "gangsched",
            "priority": 3,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
        },
        "status": {"phase": "Pending"},
    }


def _set(path: str, value: Any) -> Change:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = obj
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value

    return change


def _both(*changes: Change) -> Change:
    def change(obj: dict[str, Any]) -> None:
        for c in changes:
            c(obj)

    return change


CASES = [
    pytest.param(_set("spec.nodeName", "n1"), True, id="bound"),
    pytest.param(_both(_set("spec.nodeName", "n1"), _set("status.phase", "Running")), True, id="running"),
    pytest.param(_set("status.phase", "Succeeded"), True, id="succeeded"),
    pytest.param(_set("status.nominatedNodeName", "n2"), True, id="nominated"),
    pytest.param(_set("status.conditions", [{"type": "PodScheduled", "status": "False"}]), True, id="condition-only"),
    pytest.param(_set("status", None), True, id="status-null"),
    pytest.param(_set("metadata.resourceVersion", "9"), True, id="resource-version-only"),
    pytest.param(_set("metadata.labels", {"scheduling.x-k8s.io/pod-group": "other"}), False, id="gang-label-changed"),
    pytest.param(
        _set("metadata.annotations", {"gang.scheduling.koordinator.sh/timeout": "true"}), False, id="timeout-annotation"
    ),
    pytest.param(_set("spec.priority", 7), False, id="priority-changed"),
    pytest.param(_set("spec.schedulerName", "default-scheduler"), False, id="scheduler-changed"),
    pytest.param(_set("metadata.uid", "u-2"), False, id="recreated-same-name"),
]


@pytest.mark.parametrize(("change", "quick"), CASES)
def test_update_keeps_what_a_full_parse_gives(change: Change, quick: bool) -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", _pod())
    new = _pod()
    change(new)
    cache.on_pod_event("MODIFIED", copy.deepcopy(new))
    fresh = ClusterCache(scheduler_name="gangsched")
    fresh.on_pod_event("ADDED", copy.deepcopy(new))
    assert same_record(cache.cluster.pods["ns/p0"], fresh.cluster.pods["ns/p0"])
    assert cache.quick_updates == (1 if quick else 0)
    assert not cache.problems


def test_quick_update_marks_the_gang_dirty_and_wakes_the_loop_on_a_bind() -> None:
    wakes: list[int] = []
    cache = ClusterCache(scheduler_name="gangsched", on_change=lambda: wakes.append(1))
    cache.on_pod_event("ADDED", _pod())
    cache.dirty_gangs.clear()
    wakes.clear()
    bound = _pod()
    bound["spec"]["nodeName"] = "n1"
    cache.on_pod_event("MODIFIED", bound)
    assert cache.dirty_gangs == {"ns/g"} and wakes
    assert cache.cluster.pods["ns/p0"].node_name == "n1"


def test_an_unchanged_record_is_not_applied_again() -> None:
    wakes: list[int] = []
    cache = ClusterCache(scheduler_name="gangsched", on_change=lambda: wakes.append(1))
    running = _pod()
    running["spec"]["nodeName"] = "n1"
    running["status"]["phase"] = "Running"
    cache.on_pod_event("ADDED", copy.deepcopy(running))
    cache.dirty_gangs.clear()
    wakes.clear()
    running["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    cache.on_pod_event("MODIFIED", running)
    assert cache.quick_updates == 1 and not cache.dirty_gangs and not wakes


def test_bad_status_after_a_good_version_is_reported_by_the_full_parse() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", _pod())
    bad = _pod()
    bad["status"] = ["not", "an", "object"]
    cache.on_pod_event("MODIFIED", bad)
    assert cache.quick_updates == 0
    assert [p.reason for p in cache.problems] == ["InvalidGangDeclaration"]
    assert "status" in cache.problems[0].message
    assert "ns/p0" not in cache.cluster.pods


def test_a_deleted_and_recreated_pod_is_parsed_again() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", _pod())
    cache.on_pod_event("DELETED", _pod())
    again = _pod()
    again["spec"]["priority"] = 9
    cache.on_pod_event("ADDED", again)
    assert cache.quick_updates == 0
    assert cache.cluster.pods["ns/p0"].priority == 9


def _bound(node: str | None, phase: str, *, scheduler: str = "gangsched") -> dict[str, Any]:
    pod = _pod()
    pod["spec"]["schedulerName"] = scheduler
    if node:
        pod["spec"]["nodeName"] = node
    pod["status"]["phase"] = phase
    return pod


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(None, _bound(None, "Pending"), "change", id="new-pending-pod"),
        pytest.param(_bound(None, "Pending"), _bound("n1", "Pending"), "status", id="ours-seen-bound"),
        pytest.param(_bound("n1", "Pending"), _bound("n1", "Running"), "status", id="ours-running"),
        pytest.param(_bound("n1", "Running"), _bound("n1", "Succeeded"), "change", id="finished-frees-capacity"),
        pytest.param(
            _bound(None, "Pending", scheduler="other"),
            _bound("n1", "Pending", scheduler="other"),
            "change",
            id="others-pod-bound-takes-capacity",
        ),
        pytest.param(
            _bound(None, "Pending"),
            _bound(None, "Pending") | {"status": {"phase": "Pending", "nominatedNodeName": "n2"}},
            "change",
            id="pending-pod-nominated",
        ),
        pytest.param(
            _bound("n1", "Running"),
            _bound("n1", "Running") | {"status": {"phase": "Running", "podIP": "10.0.0.1"}},
            "none",
            id="nothing-that-matters",
        ),
    ],
)
def test_which_events_wake_the_scheduler_and_which_only_the_status_writer(
    before: dict[str, Any] | None, after: dict[str, Any], expected: str
) -> None:
    calls: list[str] = []
    cache = ClusterCache(
        scheduler_name="gangsched", on_change=lambda: calls.append("change"), on_status=lambda: calls.append("status")
    )
    if before is not None:
        cache.on_pod_event("ADDED", before)
    calls.clear()
    cache.on_pod_event("MODIFIED" if before is not None else "ADDED", after)
    assert calls == ([] if expected == "none" else [expected])


def _podgroup(
    *, generation: int = 1, phase: str | None = None, min_member: int = 2, uid: str = "pg-1"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": "g",
            "namespace": "ns",
            "uid": uid,
            "generation": generation,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minMember": min_member},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


@pytest.mark.parametrize(
    ("after", "expected", "min_member"),
    [
        pytest.param(_podgroup(phase="Scheduling"), "status", 2, id="status-echo"),
        # (a phase alone never satisfies a gang: its pods must show it, issue 13 item 5)
        pytest.param(_podgroup(phase="Running"), "status", 2, id="status-running-without-bound-pods"),
        pytest.param(_podgroup(generation=2, min_member=3), "change", 3, id="spec-changed"),
        pytest.param(_podgroup(uid="pg-2", min_member=4), "change", 4, id="recreated"),
    ],
)
def test_podgroup_status_updates_do_not_reschedule(after: dict[str, Any], expected: str, min_member: int) -> None:
    calls: list[str] = []
    cache = ClusterCache(
        scheduler_name="gangsched", on_change=lambda: calls.append("change"), on_status=lambda: calls.append("status")
    )
    cache.on_podgroup("ADDED", _podgroup())
    calls.clear()
    cache.dirty_gangs.clear()
    cache.on_podgroup("MODIFIED", after)
    assert calls[-1] == expected and ("change" in calls) == (expected == "change")
    assert cache.dirty_gangs == {"ns/g"}
    pg = cache.podgroup("ns/g")
    assert pg is not None and pg.phase == (after.get("status") or {}).get("phase")
    assert pg.spec is not None and pg.spec.min_member == min_member
    assert not cache.cluster.gangs["ns/g"].satisfied  # no member bound: no phase makes it satisfied
