"""Volume constraints: models/volumes.py (claims, volumes, terms ANDed) and state/volumes.py through the cache.

Oracles:
- kube-scheduler pkg/scheduler/framework/plugins/volumebinding/volume_binding.go: podHasPVCs and PreFilter (the
  messages of a claim not found, Lost, being deleted, an ephemeral claim not yet created or not owned by the pod,
  k8s.io/component-helpers/storage/ephemeral VolumeClaimName/VolumeIsForPod), binder.go isPVCFullyBound
  (spec.volumeName and the pv.kubernetes.io/bind-completed annotation) and checkBoundClaims (the bound volume's
  node affinity, k8s.io/component-helpers/storage/volume CheckNodeAffinity: matched against a node built from
  its labels only); volume_binding_test.go `TestVolumeBinding` cases "all bound", "PVC does not exist",
  "Part of PVCs do not exist", "immediate claims not bound", "unbound claim with WaitForFirstConsumer",
  "bound and unbound unsatisfied" (a bound volume's node affinity not matching).
- pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go `TestSingleZone` and `TestMultiZone`: the table
  ZONE_CASES keeps their case names.
- k8s.io/component-helpers/scheduling/corev1/nodeaffinity: nodeSelectorTerms are ORed, the requirements of one
  term ANDed, a term without requirements matches nothing (nodeaffinity_test.go "empty term").
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.cycle.simulate import step
from gangsched.core.fit.matching import term_matches
from gangsched.core.records.records import NodeRecord, Requirement, Term
from gangsched.core.values.config import SchedulerConfig
from gangsched.models.volumes import (
    BIND_COMPLETED,
    MAX_TERMS,
    TooManyTerms,
    and_terms,
    pod_claims,
    volume_from_api,
)
from gangsched.state.cache import ClusterCache
from tests.builders import node_obj, pod_obj

CFG = SchedulerConfig()
HOST = "kubernetes.io/hostname"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def req(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, op, values)


def term(*reqs: Requirement) -> Term:
    return Term(tuple(reqs), ())


A, B, C, D = (term(req(k, "In", "x")) for k in "abcd")
EMPTY = Term((), ())

AND_CASES = [  # (name, a, b, a AND b)
    ("no constraint on either side", None, None, None),
    ("the pod has none: the volume's terms", None, (A, B), (A, B)),
    ("the volume has none: the pod's terms", (A,), None, (A,)),
    ("one term each: merged", (A,), (B,), (term(*A.expressions, *B.expressions),)),
    (
        "two OR two: the cross product",
        (A, B),
        (C, D),
        tuple(term(*x.expressions, *y.expressions) for x in (A, B) for y in (C, D)),
    ),
    ("a repeated requirement appears once", (A,), (A,), (A,)),
    ("an empty term matches nothing: dropped", (A, EMPTY), (B,), (term(*A.expressions, *B.expressions),)),
    ("only empty terms: no node", (EMPTY,), (B,), ()),
]


@pytest.mark.parametrize(("name", "a", "b", "want"), AND_CASES, ids=[c[0] for c in AND_CASES])
def test_and_terms(name: str, a: Any, b: Any, want: Any) -> None:
    assert and_terms(a, b) == want


def test_and_terms_is_bounded() -> None:
    many = tuple(term(req("k", "In", str(i))) for i in range(MAX_TERMS + 1))
    with pytest.raises(TooManyTerms):
        and_terms(many, (A, B))
    assert and_terms(many[:MAX_TERMS], (A,)) is not None


def _node(name: str, labels: dict[str, str]) -> NodeRecord:
    return NodeRecord(name, {}, labels)


def _allows(terms: tuple[Term, ...] | None, node: NodeRecord) -> bool:
    return terms is None or any(term_matches(t, node) for t in terms)


def _pv(name: str, *, labels: dict[str, str] | None = None, affinity: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": affinity}}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {}}, "spec": spec}


PV_LABELS = {  # volume_zone_test.go's pvLister (TestSingleZone, TestMultiZone)
    "Vol_1": {BETA_ZONE: "us-west1-a"},
    "Vol_2": {BETA_REGION: "us-west1", "uselessLabel": "none"},
    "Vol_Stable_1": {ZONE: "us-west1-a"},
    "Vol_Stable_2": {REGION: "us-west1", "uselessLabel": "none"},
    "Vol_Stable_3": {ZONE: "us-west1-a", REGION: "us-west1-a"},
    "Vol_3_multi": {BETA_ZONE: "us-west1-c__us-west1-a"},
    "Vol_Stable_2_multi": {ZONE: "us-west1-c__us-west1-a"},
}
ZONE_CASES = [  # (TestSingleZone / TestMultiZone case, volume, node labels, passes)
    ("node without labels", "Vol_1", {}, True),
    ("beta zone label matched", "Vol_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, True),
    ("beta region label matched", "Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, True),
    ("beta region label doesn't match", "Vol_2", {BETA_REGION: "no_us-west1", "uselessLabel": "none"}, False),
    ("beta zone label doesn't match", "Vol_1", {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, False),
    ("zone label matched", "Vol_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, True),
    ("region label matched", "Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, True),
    ("region label doesn't match", "Vol_Stable_2", {REGION: "no_us-west1", "uselessLabel": "none"}, False),
    ("zone label doesn't match", "Vol_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"}, False),
    ("pv with zone and region, node with only zone", "Vol_Stable_3", {ZONE: "us-west1-a"}, False),
    ("pv with zone,node with beta zone", "Vol_Stable_1", {BETA_ZONE: "us-west1-a"}, False),
    ("pv with beta label,node with ga label, matched", "Vol_1", {ZONE: "us-west1-a"}, True),
    ("pv with beta label,node with ga label, don't match", "Vol_1", {ZONE: "us-west1-b"}, False),
    ("multi: node without labels", "Vol_3_multi", {}, True),
    ("multi: beta zone label matched", "Vol_3_multi", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, True),
    ("multi: zone label matched", "Vol_Stable_2_multi", {ZONE: "us-west1-a", "uselessLabel": "none"}, True),
    ("multi: zone label doesn't match", "Vol_Stable_1", {ZONE: "us-west1-b", "uselessLabel": "none"}, False),
]


@pytest.mark.parametrize(("name", "volume", "labels", "passes"), ZONE_CASES, ids=[c[0] for c in ZONE_CASES])
def test_volume_zone(name: str, volume: str, labels: dict[str, str], passes: bool) -> None:
    info = volume_from_api(_pv(volume, labels=PV_LABELS[volume]))
    assert _allows(info.terms, _node("host1", labels)) is passes


def test_a_volume_without_zone_labels_or_affinity_constrains_nothing() -> None:
    assert volume_from_api(_pv("v", labels={"uselessLabel": "none"})).terms is None


def test_node_affinity_of_a_volume_and_its_match_fields() -> None:
    """CheckNodeAffinity matches a node built from its labels only: matchFields metadata.name In [...] never
    matches, NotIn always does (decided once, at parse time)."""
    local = [{"matchExpressions": [{"key": HOST, "operator": "In", "values": ["node-1"]}]}]
    info = volume_from_api(_pv("local", affinity=local))
    assert info.terms == (term(req(HOST, "In", "node-1")),)
    by_name = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]
    assert volume_from_api(_pv("f", affinity=by_name)).terms == ()  # no node
    not_name = [
        {
            "matchExpressions": [{"key": "disk", "operator": "Exists"}],
            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}],
        }
    ]
    assert volume_from_api(_pv("g", affinity=not_name)).terms == (term(req("disk", "Exists")),)


def test_pod_claims_reads_claims_and_inline_disks_only() -> None:
    """VolumeBinding reads persistentVolumeClaim and ephemeral volumes (claim `<pod>-<volume>`); VolumeRestrictions'
    inline disks are reported; emptyDir, configMap, secret, hostPath, projected, downwardAPI constrain nothing."""
    obj = pod_obj("p")
    obj["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "tmp", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "c"}},
        {"name": "s", "secret": {"secretName": "s"}},
        {"name": "h", "hostPath": {"path": "/x"}},
        {"name": "pr", "projected": {"sources": []}},
        {"name": "d", "downwardAPI": {"items": []}},
        {"name": "pd", "gcePersistentDisk": {"pdName": "x"}},
    ]
    volumes = pod_claims(obj)
    assert [(c.name, c.ephemeral, c.field) for c in volumes.claims] == [
        ("data", False, "spec.volumes[0].persistentVolumeClaim"),
        ("p-scratch", True, "spec.volumes[1].ephemeral"),
    ]
    assert volumes.unsupported == ("spec.volumes[8].gcePersistentDisk",)


# ------------------------------------------------------------------------------------------- through the cache
def _pvc(name: str, *, volume: str = "", phase: str = "Pending", owner: str = "", **extra: Any) -> dict[str, Any]:
    """A claim as the PersistentVolume controller leaves it (pkg/controller/volume/persistentvolume/pv_controller.go
    bindClaimToVolume: spec.volumeName and the bind-completed annotation; then status.phase Bound)."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if volume and phase == "Bound":
        meta["annotations"] = {BIND_COMPLETED: "yes"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": owner, "controller": True}]
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    spec.update(extra)
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


LOCAL = [{"matchExpressions": [{"key": HOST, "operator": "In", "values": ["n1"]}]}]


def _cache(nodes: int = 3) -> ClusterCache:
    cache = ClusterCache(scheduler_name="gangsched")
    for i in range(nodes):
        cache.on_node(None, node_obj(f"n{i}"))
    return cache


def _with_claim(name: str, claim: str = "data", **kw: Any) -> dict[str, Any]:
    obj = pod_obj(name, **kw)
    obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return obj


def test_all_bound_a_pod_goes_where_its_volume_is() -> None:
    """TestVolumeBinding "all bound": the bound volume's node affinity filters the nodes."""
    cache = _cache()
    cache.on_pv(None, _pv("pv-local", affinity=LOCAL))
    cache.on_pvc(None, _pvc("data", volume="pv-local", phase="Bound"))
    cache.on_pod_event("ADDED", _with_claim("p"))
    record = cache.cluster.pods["default/p"]
    assert record.sclass.required == (term(req(HOST, "In", "n1")),)
    assert not record.unready and not record.unsupported
    assert step(cache.cluster, CFG, 0.0).bindings == [("default/p", "n1")]


def test_the_pods_own_node_affinity_is_anded_with_the_volumes() -> None:
    cache = _cache()
    cache.on_pv(
        None, _pv("pv", affinity=[{"matchExpressions": [{"key": HOST, "operator": "In", "values": ["n1", "n2"]}]}])
    )
    cache.on_pvc(None, _pvc("data", volume="pv", phase="Bound"))
    mine = {"nodeSelectorTerms": [{"matchExpressions": [{"key": HOST, "operator": "NotIn", "values": ["n1"]}]}]}
    cache.on_pod_event(
        "ADDED",
        _with_claim(
            "p", spec_extra={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": mine}}}
        ),
    )
    assert step(cache.cluster, CFG, 0.0).bindings == [("default/p", "n2")]


def test_a_volume_no_node_matches_leaves_the_pod_unschedulable() -> None:
    """TestVolumeBinding "bound and unbound unsatisfied": no node in the volume's affinity, nothing bound."""
    cache = _cache()
    cache.on_pv(None, _pv("pv", affinity=[{"matchExpressions": [{"key": HOST, "operator": "In", "values": ["gone"]}]}]))
    cache.on_pvc(None, _pvc("data", volume="pv", phase="Bound"))
    cache.on_pod_event("ADDED", _with_claim("p"))
    plan = step(cache.cluster, CFG, 0.0)
    assert not plan.bindings and any("node affinity" in x.message for x in plan.conditions)


NOT_BOUND = (
    'unsupported: persistentvolumeclaim "data" is not bound (gangsched binds no volume: WaitForFirstConsumer'
    " binding is not supported; the pod waits until the claim is bound)"
)
UNREADY_CASES = [  # (case, claim objects, the message on the unready pod)
    ("PVC does not exist", [], 'persistentvolumeclaim "data" not found'),
    (
        "unbound claim with WaitForFirstConsumer",
        [_pvc("data")],
        NOT_BOUND,
    ),
    (
        "volumeName set but the binding not completed",
        [_pvc("data", volume="pv", phase="Pending")],
        NOT_BOUND,
    ),
    (
        "Lost",
        [_pvc("data", volume="pv", phase="Lost")],
        'persistentvolumeclaim "data" bound to non-existent persistentvolume "pv"',
    ),
    (
        "bound to a volume not found",
        [_pvc("data", volume="missing", phase="Bound")],
        'persistentvolumeclaim "data" is bound to persistentvolume "missing", which was not found',
    ),
]


@pytest.mark.parametrize(("case", "claims", "message"), UNREADY_CASES, ids=[c[0] for c in UNREADY_CASES])
def test_a_pod_whose_claim_is_not_usable_is_held_and_reported(
    case: str, claims: list[dict[str, Any]], message: str
) -> None:
    cache = _cache()
    cache.on_pv(None, _pv("pv"))
    for claim in claims:
        cache.on_pvc(None, claim)
    obj = _with_claim("g-0")
    obj["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "g"}
    cache.on_podgroup(
        None,
        {
            "metadata": {
                "name": "g",
                "namespace": "default",
                "uid": "pg",
                "generation": 1,
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {"minMember": 1},
        },
    )
    cache.on_pod_event("ADDED", obj)
    plan = step(cache.cluster, CFG, 0.0)
    assert not plan.bindings
    assert [(x.pod_key, x.reason, x.message) for x in plan.conditions] == [("default/g-0", "Unsupported", message)]
    warnings = sorted((e.kind, e.name, e.message) for e in plan.events if e.type == "Warning")
    assert warnings == [("Pod", "g-0", message), ("PodGroup", "g", message)]
    assert plan.gang_status["default/g"].message == message


def test_a_claim_bound_later_releases_the_pod_to_its_volumes_node() -> None:
    """The PV controller binds the claim after the pod came: the pending pod's record is rebuilt, and a backed-off
    pod is tried again at once (kube-scheduler's EventsToRegister: PVC and PV Add/Update requeue it)."""
    cache = _cache()
    cache.on_pod_event("ADDED", _with_claim("p"))
    plan = step(cache.cluster, CFG, 0.0)
    assert not plan.bindings and plan.unit_backoffs
    cache.on_pvc(None, _pvc("data"))
    assert cache.cluster.pods["default/p"].unready
    cache.on_pvc(None, _pvc("data", volume="pv-local", phase="Bound"))
    assert cache.cluster.pods["default/p"].unready_reasons == (
        'persistentvolumeclaim "data" is bound to persistentvolume "pv-local", which was not found',
    )
    cache.on_pv(None, _pv("pv-local", affinity=LOCAL))
    record = cache.cluster.pods["default/p"]
    assert not record.unready and record.sclass.required == (term(req(HOST, "In", "n1")),)
    assert step(cache.cluster, CFG, 0.5).bindings == [("default/p", "n1")]


def test_a_pod_whose_claim_goes_away_is_held_again_and_other_pods_are_untouched() -> None:
    cache = _cache()
    cache.on_pv(None, _pv("pv", affinity=LOCAL))
    cache.on_pvc(None, _pvc("data", volume="pv", phase="Bound"))
    cache.on_pod_event("ADDED", _with_claim("p"))
    cache.on_pod_event("ADDED", pod_obj("plain"))
    plain = cache.cluster.pods["default/plain"]
    cache.on_pvc("DELETED", _pvc("data", volume="pv", phase="Bound"))
    assert cache.cluster.pods["default/p"].unready_reasons == ('persistentvolumeclaim "data" not found',)
    assert cache.cluster.pods["default/plain"] is plain
    cache.on_pod_event("DELETED", _with_claim("p"))
    assert cache.volumes.sizes() == {"claims": 0, "volumes": 1, "pods": 0}


def test_ephemeral_volumes_use_the_claim_created_for_the_pod() -> None:
    """ephemeral.VolumeClaimName is `<pod>-<volume>`; VolumeIsForPod: the claim must be owned by the pod."""
    cache = _cache()
    obj = pod_obj("p")
    obj["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    cache.on_pod_event("ADDED", obj)
    assert cache.cluster.pods["default/p"].unready_reasons == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"',
    )
    cache.on_pv(None, _pv("pv", affinity=LOCAL))
    cache.on_pvc(None, _pvc("p-scratch", volume="pv", phase="Bound", owner="someone-else"))
    assert cache.cluster.pods["default/p"].unready_reasons == (
        "PVC default/p-scratch was not created for pod default/p (pod is not owner)",
    )
    cache.on_pvc(None, _pvc("p-scratch", volume="pv", phase="Bound", owner="uid-p"))
    assert step(cache.cluster, CFG, 0.0).bindings == [("default/p", "n1")]


def test_read_write_once_pod_is_placed_and_reported() -> None:
    cache = _cache()
    cache.on_pv(None, _pv("pv"))
    cache.on_pvc(None, _pvc("data", volume="pv", phase="Bound", accessModes=["ReadWriteOncePod"]))
    cache.on_pod_event("ADDED", _with_claim("p"))
    plan = step(cache.cluster, CFG, 0.0)
    assert len(plan.bindings) == 1
    rwop = "unsupported: spec.volumes[0].persistentVolumeClaim (ReadWriteOncePod claim data)"
    assert [e.message for e in plan.events if e.reason == "Unsupported"] == [
        f"{rwop} (gangsched does not evaluate it yet)"
    ]


def test_other_schedulers_pods_and_plain_volumes_are_not_tracked() -> None:
    cache = _cache()
    other = _with_claim("other")
    other["spec"]["schedulerName"] = "default-scheduler"
    cache.on_pod_event("ADDED", other)
    plain = pod_obj("tmp")
    plain["spec"]["volumes"] = [{"name": "t", "emptyDir": {}}]
    cache.on_pod_event("ADDED", plain)
    assert cache.volumes.sizes()["pods"] == 0
    assert not cache.cluster.pods["default/tmp"].unsupported


def test_an_unreadable_volume_is_reported_and_holds_its_pods() -> None:
    cache = _cache()
    cache.on_pvc(None, _pvc("data", volume="bad", phase="Bound"))
    cache.on_pod_event("ADDED", _with_claim("p"))
    cache.on_pv(None, _pv("bad", affinity=[]))
    assert [(p.kind, p.name, p.reason) for p in cache.problems] == [("PersistentVolume", "bad", "InvalidNodeAffinity")]
    assert "spec.nodeAffinity.required.nodeSelectorTerms" in cache.problems[0].message
    assert cache.cluster.pods["default/p"].unready


def test_a_big_gang_s_message_names_a_few_claims() -> None:
    cache = _cache()
    for i in range(5):
        obj = _with_claim(f"g-{i}", claim=f"data-{i}")
        obj["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "g"}
        cache.on_pod_event("ADDED", obj)
    cache.on_podgroup(
        None,
        {
            "metadata": {"name": "g", "namespace": "default", "uid": "pg", "generation": 1},
            "spec": {"minMember": 5},
        },
    )
    plan = step(cache.cluster, CFG, 0.0)
    names = ", ".join(f'persistentvolumeclaim "data-{i}" not found' for i in range(3)).replace(", ", "; ")
    assert plan.gang_status["default/g"].message == f"{names}; and 2 more"
