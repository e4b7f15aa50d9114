"""Scheduling gates on pod create, against the emulator, as kube-apiserver v1.32 does it: pkg/registry/core/pod/
strategy.go PrepareForCreate resets the status (phase Pending) and applySchedulingGatedCondition adds
{type: PodScheduled, status: False, reason: SchedulingGated, message: "Scheduling is blocked due to non-empty
scheduling gates"} to a pod created with gates; a pod without gates gets no condition; removing the gates
leaves the condition to the scheduler (KEP-3521)."""

from __future__ import annotations

from gangsched.sim.apiserver import ApiServer
from tests.conformance._binding_helpers import call, pod

PODS = "/api/v1/namespaces/default/pods"


async def test_gated_pod_is_created_with_the_scheduling_gated_condition(apiserver: ApiServer) -> None:
    status, created = await call(apiserver, "POST", PODS, pod("g", schedulingGates=[{"name": "example.com/q"}]))
    assert status == 201, created
    (condition,) = created["status"]["conditions"]
    assert condition["type"] == "PodScheduled" and condition["status"] == "False"
    assert condition["reason"] == "SchedulingGated"
    assert condition["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    status, ungated = await call(
        apiserver,
        "PATCH",
        f"{PODS}/g",
        {"spec": {"schedulingGates": None}},
        content_type="application/merge-patch+json",
    )
    assert status == 200 and not ungated["spec"].get("schedulingGates")
    assert ungated["status"]["conditions"] == created["status"]["conditions"]  # the scheduler's to change


async def test_pod_without_gates_gets_no_condition(apiserver: ApiServer) -> None:
    status, created = await call(apiserver, "POST", PODS, pod("p"))
    assert status == 201, created
    assert not created["status"].get("conditions")
