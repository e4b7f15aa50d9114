"""Kubernetes 1.37 fields that bear on scheduling, read or reported (never silently ignored).

Fields as the 1.37 schemas define them (kubernetes-validate 1.37.0, v1.37.0-local/_definitions.json; k8s.io/api
core/v1/types.go): NodeSpec.podPreemptionPolicy {disableResizePreemption} (alpha, InPlacePodVerticalScaling-
SchedulerPreemption: stops preemption for in-place resizes only), NodeStatus.declaredFeatures (KEP-5328, matched by
kube-scheduler's NodeDeclaredFeatures filter against what a pod needs), PodSpec.evictionResponders (responders to
EvictionRequests before a pod is evicted).
"""

from __future__ import annotations

from typing import Any

from gangsched.state.cache import ClusterCache
from tests.builders import node_obj, pod_obj, pod_record

RESPONDERS = [{"name": "acme.io/checkpointer", "priority": 10000}]


def test_eviction_responders_are_placed_and_reported() -> None:
    """gangsched's preemption deletes a victim without an EvictionRequest, so the responders are not consulted: the
    pod is scheduled (the field does not constrain placement) and named unsupported (a Warning when it binds,
    core/gang/readiness.py report_unsupported)."""
    record = pod_record(pod_obj("p", spec_extra={"evictionResponders": RESPONDERS}), gang=None, ours=True)
    assert record.unsupported == ("spec.evictionResponders",) and not record.unready
    plain = pod_record(pod_obj("q"), gang=None, ours=True)
    assert plain.unsupported == ()


def declared(features: Any, **spec: Any) -> dict[str, Any]:
    obj = node_obj("n1")
    obj["metadata"]["uid"] = "u-n1"
    obj["spec"].update(spec)
    if features is not None:
        obj["status"]["declaredFeatures"] = features
    return obj


def test_declared_features_are_reported_once_per_value_and_the_node_still_serves() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node("ADDED", declared(["GuaranteedQoSPodCPUResize"]))
    cache.on_node("MODIFIED", declared(["GuaranteedQoSPodCPUResize"]))
    (problem,) = cache.problems
    assert (problem.kind, problem.name, problem.reason) == ("Node", "n1", "UnsupportedField")
    assert "status.declaredFeatures" in problem.message and "GuaranteedQoSPodCPUResize" in problem.message
    assert "n1" in cache.cluster.nodes  # reported, not left out
    cache.on_node("MODIFIED", declared(["GuaranteedQoSPodCPUResize", "Other"]))
    assert len(cache.problems) == 2  # a new value is said again
    cache.on_node("MODIFIED", declared(None))
    cache.on_node("MODIFIED", declared(["GuaranteedQoSPodCPUResize"]))
    assert len(cache.problems) == 3  # gone, then back: said again


def test_pod_preemption_policy_needs_nothing() -> None:
    """disableResizePreemption only stops preemption for in-place resizes, which gangsched never does: nothing to
    report, the node serves as before."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node("ADDED", declared(None, podPreemptionPolicy={"disableResizePreemption": ["vpa"]}))
    assert not cache.problems and "n1" in cache.cluster.nodes
