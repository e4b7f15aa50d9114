"""DRA claims through the cache and the scheduling cycle: state/dra.py, core/placement/devices.py.

Oracle: kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go `TestPlugin`; the
cases ported keep their names (PreEnqueue -> the pod held with upstream's message; Filter -> the node refused;
Reserve -> the claim's allocation decided with the placement; Unreserve -> nothing kept of an abandoned attempt):
"empty", "claim-reference", "claim-template", "missing-claim", "deleted-claim", "wrong-claim",
"structured-no-resources", "structured-with-resources", "structured-skip-bind", "structured-exhausted-resources",
"CEL-runtime-error" ("claim-parameters-CEL-runtime-error" in older releases), "missing-class".
Not ported: the PodSchedulingContext and classic-DRA cases (gone upstream), the finalizer cases (gangsched writes
no finalizer: the resourceclaim controller's), "with-parameters" / translated parameters (removed API), the
extended-resource and binding-conditions cases (features not in the stable set, docs/devices.md).
PreBind (the status written) is covered end to end: tests/e2e/test_kubectl_dra_gangs.py.
"""

from __future__ import annotations

from typing import Any

from gangsched.core.cycle.simulate import step
from gangsched.core.values.config import SchedulerConfig
from gangsched.sim.dra import driver
from gangsched.state.cache import ClusterCache
from gangsched.state.dra_feed import flush_devices
from tests.builders import node_obj, pod_obj

CFG = SchedulerConfig()


def claim(name: str, *, owner: str | None = None, count: int = 8, selectors: tuple[str, ...] = (), **extra: Any) -> Any:
    exactly: dict[str, Any] = {"deviceClassName": extra.pop("cls", driver.DRIVER), "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"claim-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{owner}"}]
    meta.update(extra.pop("meta", {}))
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}},
        "status": extra.pop("status", {}),
    }


def template_pod(name: str, claim_name: str | None, **kw: Any) -> dict[str, Any]:
    """A pod with a claim from a template; `claim_name` as status.resourceClaimStatuses says (None: not yet)."""
    obj = pod_obj(name, spec_extra={"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}, **kw)
    if claim_name is not None:
        obj["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return obj


def named_pod(name: str, claim_name: str, **kw: Any) -> dict[str, Any]:
    return pod_obj(name, spec_extra={"resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}]}, **kw)


def cluster(nodes: int = 1, gpus: int = 8, *, with_class: bool = True) -> ClusterCache:
    cache = ClusterCache(scheduler_name="gangsched")
    for i in range(nodes):
        cache.on_node(None, node_obj(f"n{i}"))
        if gpus:
            cache.on_resource_slice(None, driver.resource_slice(f"n{i}", gpus, clique=f"c{i // 2}"))
    if with_class:
        cache.on_device_class(None, driver.device_class())
    return cache


def run(cache: ClusterCache, now: float = 0.0) -> Any:
    flush_devices(cache)
    return step(cache.cluster, CFG, now)


def held_message(plan: Any, key: str) -> str:
    return str(next(c.message for c in plan.conditions if c.pod_key == key))


def test_empty() -> None:
    cache = cluster()
    cache.on_pod_event("ADDED", pod_obj("p"))
    plan = run(cache)
    assert plan.bindings == [("default/p", "n0")] and not plan.device_fits


def test_claim_template() -> None:
    """A template's claim (the pod owns it), allocated with the placement: 8 devices of the node."""
    cache = cluster()
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="p"))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    plan = run(cache)
    assert plan.bindings == [("default/p", "n0")]
    fit = plan.device_fits["default/p"]
    (result,) = fit.new.values()
    assert {(d.pool, d.device) for d in result.devices} == {("n0", f"gpu-{i}") for i in range(8)}


def test_claim_reference() -> None:
    """A claim named directly and already allocated: the pod goes where its devices are, one more consumer."""
    cache = cluster(2)
    results = [{"request": "gpus", "driver": driver.DRIVER, "pool": "n1", "device": "gpu-0"}]
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    allocation = {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": terms}}
    cache.on_resource_claim("ADDED", claim("shared", count=1, status={"allocation": allocation}))
    cache.on_pod_event("ADDED", named_pod("p", "shared"))
    plan = run(cache)
    assert plan.bindings == [("default/p", "n1")]
    assert plan.device_fits["default/p"].new == {}  # nothing new allocated: reserved for one more consumer


def test_missing_claim() -> None:
    cache = cluster()
    cache.on_pod_event("ADDED", template_pod("p", None))
    plan = run(cache)
    assert not plan.bindings
    assert 'pod "default/p": ResourceClaim not created yet' in held_message(plan, "default/p")
    # a wait for the resourceclaim controller, not a problem: no Warning (upstream's PreEnqueue emits no event)
    assert {c.reason for c in plan.conditions} == {"WaitingForResourceClaim"}
    assert not [e for e in plan.events if e.type == "Warning"]


def test_deleted_claim() -> None:
    cache = cluster()
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="p", meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    plan = run(cache)
    assert not plan.bindings
    assert 'resourceclaim "p-gpu" is being deleted' in held_message(plan, "default/p")
    assert {c.reason for c in plan.conditions} == {"Unsupported"}  # a problem: Warning events


def test_wrong_claim() -> None:
    cache = cluster()
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="someone-else"))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    plan = run(cache)
    assert not plan.bindings
    assert "ResourceClaim default/p-gpu was not created for pod default/p (pod is not owner)" in held_message(
        plan, "default/p"
    )


def test_structured_no_resources() -> None:
    cache = cluster(gpus=0)
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="p"))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    plan = run(cache)
    assert not plan.bindings and not plan.device_fits
    assert "8 x gpu.nvidia.com (0 nodes have them free)" in held_message(plan, "default/p")


def test_structured_exhausted_resources() -> None:
    """Devices allocated by another claim (another scheduler's pod) are not free: the pod does not fit."""
    cache = cluster()
    results = [{"request": "gpus", "driver": driver.DRIVER, "pool": "n0", "device": "gpu-7"}]
    cache.on_resource_claim("ADDED", claim("other", count=1, status={"allocation": {"devices": {"results": results}}}))
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="p"))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    plan = run(cache)
    assert not plan.bindings
    message = held_message(plan, "default/p")
    assert "8 x gpu.nvidia.com (0 nodes have them free)" in message
    assert "not enough free gpu.nvidia.com" in message


def test_structured_with_resources_two_members_never_share_a_device() -> None:
    """A gang of two pods of 4 devices on one node of 8, decided in one transaction: disjoint allocations."""
    cache = cluster()
    gang(cache, "g", 2, count=4)
    plan = run(cache)
    assert sorted(plan.bindings) == [("default/g-0", "n0"), ("default/g-1", "n0")]
    devices = [d for fit in plan.device_fits.values() for r in fit.new.values() for d in r.devices]
    assert len(devices) == 8 and len({d.device for d in devices}) == 8


def gang(cache: ClusterCache, name: str, n: int, count: int = 8) -> None:
    cache.on_podgroup(
        "ADDED",
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}", "generation": 1},
            "spec": {"minMember": n},
        },
    )
    for i in range(n):
        cache.on_resource_claim("ADDED", claim(f"{name}-{i}-gpu", owner=f"{name}-{i}", count=count))
        obj = template_pod(f"{name}-{i}", f"{name}-{i}-gpu")
        obj["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": name}
        cache.on_pod_event("ADDED", obj)


def test_structured_skip_bind() -> None:
    """A Strict gang that cannot be placed whole keeps no device (Unreserve): 3 pods of 8 on 2 nodes."""
    cache = cluster(2)
    gang(cache, "g", 3)
    plan = run(cache)
    assert not plan.bindings and not plan.device_fits and not plan.reservations
    assert (
        "needs 3 pods x {cpu: 1} + 8 x gpu.nvidia.com (2 nodes have them free)" in plan.gang_status["default/g"].message
    )


def test_cel_runtime_error() -> None:
    """A selector reading an attribute the devices lack: the pod is unready with the CEL error (upstream's Filter
    status names it), nothing else breaks."""
    cache = cluster()
    bad = 'device.attributes["gpu.nvidia.com"].noSuchAttribute == "x"'
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="p", selectors=(bad,)))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    cache.on_pod_event("ADDED", pod_obj("plain"))
    plans = [run(cache, t) for t in range(3)]
    assert [b for plan in plans for b in plan.bindings] == [("default/plain", "n0")]  # the rest goes on
    message = held_message(plans[0], "default/p")
    assert "claim default/p-gpu: selector #0: CEL runtime error: no such key: noSuchAttribute" in message, message


def test_missing_class() -> None:
    cache = cluster(with_class=False)
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="p"))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    plan = run(cache)
    assert not plan.bindings
    assert "claim default/p-gpu: could not retrieve device class gpu.nvidia.com: not found" in held_message(
        plan, "default/p"
    )


def test_an_allocation_assumed_is_not_taken_again_before_its_event() -> None:
    """runtime/claims.py assumes a decided allocation: the next cycle does not pick the same devices."""
    cache = cluster()
    cache.on_resource_claim("ADDED", claim("a-gpu", owner="a", count=4))
    cache.on_pod_event("ADDED", template_pod("a", "a-gpu"))
    first = run(cache)
    cache.dra.assume_fit(first.device_fits["default/a"])
    cache.devices_dirty = True
    cache.on_resource_claim("ADDED", claim("b-gpu", owner="b", count=4))
    cache.on_pod_event("ADDED", template_pod("b", "b-gpu"))
    second = run(cache, 1.0)
    taken = {d.device for r in first.device_fits["default/a"].new.values() for d in r.devices}
    again = {d.device for r in second.device_fits["default/b"].new.values() for d in r.devices}
    assert len(taken) == len(again) == 4 and not taken & again


def test_a_finished_pods_claim_keeps_its_devices_until_released() -> None:
    """A Succeeded pod's requests count nowhere, but its claim holds the devices until the resourceclaim controller
    releases it (pkg/controller/resourceclaim/controller.go syncClaim): a new pod does not get them meanwhile."""
    cache = cluster()
    results = [{"request": "gpus", "driver": driver.DRIVER, "pool": "n0", "device": f"gpu-{i}"} for i in range(8)]
    done = claim("done-gpu", owner="done", status={"allocation": {"devices": {"results": results}}})
    cache.on_resource_claim("ADDED", done)
    cache.on_pod_event("ADDED", template_pod("done", "done-gpu", node="n0", phase="Succeeded"))
    cache.on_resource_claim("ADDED", claim("p-gpu", owner="p"))
    cache.on_pod_event("ADDED", template_pod("p", "p-gpu"))
    plan = run(cache)
    assert not plan.bindings
    cache.on_resource_claim("MODIFIED", {**done, "status": {}})  # released
    assert run(cache, 10.0).bindings == [("default/p", "n0")]
