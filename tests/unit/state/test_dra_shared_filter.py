"""Shared DRA claims in the per-node filter (state/dra.py): a claim the pod does not own, named by several pods or
its PodGroup's.

Oracle: kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go `Filter`: a claim already
allocated is checked against the node only through its allocation's NodeSelector ("resourceclaim not available on
the node" otherwise), so its consumers go where its devices are; an unallocated claim is allocated once for all its
consumers (`Reserve` of the first pod; the others then find it allocated, and `reservedFor` grows), so its devices
are needed once, not once per consumer (dynamicresources_test.go TestPlugin "claim-reference": the allocated claim
pins the pod to its node).
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.dra import driver
from gangsched.state.cache import ClusterCache
from gangsched.state.dra_feed import flush_devices
from tests.builders import pod_obj
from tests.unit.state.test_dra_scheduling import claim, cluster, named_pod, run

SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
    ]
}


def allocated_on(node: str, count: int = 1) -> dict[str, Any]:
    results = [{"request": "gpus", "driver": driver.DRIVER, "pool": node, "device": f"gpu-{i}"} for i in range(count)]
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    return {"allocation": {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": terms}}}


def spread_pod(name: str, claim_name: str) -> dict[str, Any]:
    spec = {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}], **SPREAD}
    return pod_obj(name, labels={"app": "x"}, spec_extra=spec)


def test_an_allocated_shared_claim_pins_its_consumer_in_the_filter() -> None:
    """Filter with an allocated claim -> the allocation's node selector: a pod whose hard spread constraint keeps it
    from being moved after placement still lands on n1, where the claim's device is (n0 would be tried first)."""
    cache = cluster(2)
    cache.on_resource_claim("ADDED", claim("shared", count=1, status=allocated_on("n1")))
    cache.on_pod_event("ADDED", spread_pod("p", "shared"))
    plan = run(cache)
    assert plan.bindings == [("default/p", "n1")]
    required = cache.cluster.pods["default/p"].sclass.required
    assert required is not None and [r.values for t in required for r in t.fields] == [("n1",)]


def test_an_unallocated_shared_claim_is_counted_once() -> None:
    """Three pods naming one unallocated claim of 8 devices: its 8 are in the requests of one consumer only (the first
    by key), so the three fit one node of 8 devices, which they would not if each counted 8; n0's devices are taken
    by another scheduler's claim, so the filter sends the carrier to n1."""
    cache = cluster(2)
    cache.on_resource_claim("ADDED", claim("other", count=8, status=allocated_on("n0", 8)))
    cache.on_resource_claim("ADDED", claim("shared", count=8))
    for i in range(3):
        cache.on_pod_event("ADDED", spread_pod(f"p{i}", "shared") if i == 0 else named_pod(f"p{i}", "shared"))
    flush_devices(cache)
    devices = {k: sum(q for r, q in p.sclass.requests.items() if r.startswith("devices.")) for k, p in _pods(cache)}
    assert devices == {"default/p0": 8, "default/p1": 0, "default/p2": 0}
    bindings = [b for now in range(4) for b in run(cache, float(now)).bindings]  # (pods without a gang: a cycle each)
    assert sorted(bindings) == [("default/p0", "n1"), ("default/p1", "n1"), ("default/p2", "n1")]


def test_the_next_consumer_carries_the_claim_when_the_first_finishes() -> None:
    cache = cluster(1)
    cache.on_resource_claim("ADDED", claim("shared", count=8))
    for i in range(2):
        cache.on_pod_event("ADDED", named_pod(f"p{i}", "shared"))
    cache.on_pod_event("MODIFIED", named_pod("p0", "shared", phase="Failed"))
    run(cache)  # (the flush re-derives the pods whose carrying moved)
    p1 = cache.cluster.pods["default/p1"]
    assert sum(q for r, q in p1.sclass.requests.items() if r.startswith("devices.")) == 8


def _pods(cache: ClusterCache) -> list[tuple[str, Any]]:
    return sorted((k, p) for k, p in cache.cluster.pods.items() if k.startswith("default/p"))


def test_a_podgroup_claim_of_a_multi_node_pool_gives_its_gang_the_pools_node_label_as_domain() -> None:
    """KEP-5732 "DRA Constraint" (the placement's node selector is the shared claim's allocation's): a PodGroup's claim
    whose devices come only from pools selecting their nodes by one node label makes that label the gang's domain;
    a claim of node-local devices gives none (the pin of an allocated claim does the rest)."""
    cache = cluster(2)
    cache.on_device_class(None, driver.channel_class())
    for clique in ("c0", "c1"):
        cache.on_resource_slice(None, driver.clique_slice(clique, "rack"))
    owner = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": "g", "uid": "pg-g"}
    channel = claim("g-clique", count=1, cls=driver.CHANNEL_CLASS, meta={"ownerReferences": [owner]})
    cache.on_resource_claim("ADDED", channel)
    assert cache.dra.claim_domain("default/g") == "rack"
    gpus = claim("h-gpus", count=1, meta={"ownerReferences": [{**owner, "name": "h", "uid": "pg-h"}]})
    cache.on_resource_claim("ADDED", gpus)
    assert cache.dra.claim_domain("default/h") is None
    assert cache.dra.claim_domain("other/g") is None
