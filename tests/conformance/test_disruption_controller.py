"""The emulator's disruption controller against kube-controller-manager's own table tests.

Ported from kubernetes/kubernetes pkg/controller/disruption/disruption_test.go (v1.32): each test names the
upstream test it follows. The controller under test is sim/disruption.py (modelled on
pkg/controller/disruption/disruption.go); objects are written through the emulator's Registry and the
controller is synced explicitly, as the upstream tests call `dc.sync(ctx, pdbName)`. A last test runs it on the
event loop inside the real ApiServer (no explicit sync: debounced on the loop).
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim import status as st
from gangsched.sim.disruption import DisruptionController, format_time
from gangsched.sim.registry import Registry
from gangsched.sim.request import RequestContext
from gangsched.sim.store import Store

FOO_BAR = {"foo": "bar"}
T0 = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


class World:
    """A registry, its store and a disruption controller with a settable clock."""

    def __init__(self) -> None:
        self.now = T0
        self.registry = Registry(Store(), clock=lambda: self.now)
        self.dc = DisruptionController(self.registry, clock=lambda: self.now)
        self.dc.start()
        self.ctx = RequestContext()

    def t(self, group: str, version: str, plural: str) -> Any:
        rtype = self.registry.resolve(group, version, plural)
        assert rtype is not None
        return rtype

    def create(self, group: str, plural: str, obj: dict[str, Any], version: str = "v1") -> dict[str, Any]:
        return self.registry.create(self.t(group, version, plural), "default", obj, self.ctx).obj

    def pdb(self, *, selector: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"metadata": {"name": "foobar"}, "spec": dict(spec)}
        body["spec"]["selector"] = {"matchLabels": FOO_BAR} if selector is None else selector
        return self.create("policy", "poddisruptionbudgets", body)

    def pod(
        self,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        ready: bool = True,
        owner: dict[str, Any] | None = None,
        **meta: Any,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "metadata": {"name": name, "labels": FOO_BAR if labels is None else labels, **meta},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
        if owner is not None:
            body["metadata"]["ownerReferences"] = [owner]
        created = self.create("", "pods", body)  # (the apiserver resets a new pod's status)
        if ready:
            self.set_ready(name, True)
        return created

    def set_ready(self, name: str, ready: bool) -> None:
        entry = self.registry.get(self.t("", "v1", "pods"), "default", name)
        obj = entry.copy()
        obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}] if ready else []
        self.registry.update(self.t("", "v1", "pods"), "default", name, obj, self.ctx, subresource="status")

    def workload(
        self, group: str, plural: str, kind: str, name: str, replicas: int, *, owner: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        meta: dict[str, Any] = {"name": name}
        if owner is not None:
            meta["ownerReferences"] = [owner]
        template = {"metadata": {"labels": FOO_BAR}, "spec": {"containers": [{"name": "c", "image": "i"}]}}  # required
        # as the real schemas have them: a ReplicationController's selector is a plain map, a StatefulSet names its
        # headless Service
        selector = dict(FOO_BAR) if kind == "ReplicationController" else {"matchLabels": FOO_BAR}
        spec: dict[str, Any] = {"replicas": replicas, "selector": selector, "template": template}
        if kind == "StatefulSet":
            spec["serviceName"] = name
        obj = self.create(group, plural, {"metadata": meta, "spec": spec})
        ref = {
            "apiVersion": f"{group}/v1" if group else "v1",
            "kind": kind,
            "name": name,
            "uid": obj["metadata"]["uid"],
            "controller": True,
        }
        return obj, ref

    def scale(self, group: str, plural: str, name: str, replicas: int) -> None:
        rtype = self.t(group, "v1", plural)
        obj = self.registry.get(rtype, "default", name).copy()
        obj["spec"]["replicas"] = replicas
        self.registry.update(rtype, "default", name, obj, self.ctx)

    def status(self) -> dict[str, Any]:
        self.dc.sync_all()
        pdb = self.registry.get(self.t("policy", "v1", "poddisruptionbudgets"), "default", "foobar").obj
        return dict(pdb["status"], generation=pdb["metadata"]["generation"])

    def verify(
        self, allowed: int, healthy: int, desired: int, expected: int, disrupted: dict[str, str] | None = None
    ) -> None:
        """ps.VerifyPdbStatus: the four counts, disruptedPods, observedGeneration and the condition."""
        s = self.status()
        got = (s["disruptionsAllowed"], s["currentHealthy"], s["desiredHealthy"], s["expectedPods"])
        assert got == (allowed, healthy, desired, expected), s
        assert (s.get("disruptedPods") or {}) == (disrupted or {})
        assert s["observedGeneration"] == s["generation"]
        cond = next(c for c in s["conditions"] if c["type"] == "DisruptionAllowed")
        assert cond["status"] == ("True" if allowed > 0 else "False")
        assert cond["reason"] == ("SufficientPods" if allowed > 0 else "InsufficientPods")

    def events(self) -> list[tuple[str, str, str]]:
        entries = self.registry.store.entries(("", "events"), "default")
        return [(e.obj["type"], e.obj["reason"], e.obj["message"]) for e in entries]


def test_no_selector_matches_every_pod() -> None:
    """TestNoSelector: an empty selector selects all pods of the namespace."""
    w = World()
    w.pdb(selector={}, minAvailable=3)
    w.verify(0, 0, 3, 0)
    w.pod("yo-yo-yo", labels={})
    w.verify(0, 1, 3, 1)


def test_unavailable_counts_go_up_then_down() -> None:
    """TestUnavailable: counts follow the pods; a pod losing Ready is no longer healthy."""
    w = World()
    w.pdb(minAvailable=3)
    for i in range(4):
        w.verify(0, i, 3, i)
        w.pod(f"yo-yo-yo-{i}")
    w.verify(1, 4, 3, 4)
    w.set_ready("yo-yo-yo-0", False)
    w.verify(0, 3, 3, 4)


def test_integer_max_unavailable_never_allows_naked_pods() -> None:
    """TestIntegerMaxUnavailable: maxUnavailable with pods that have no controller: nothing to count against,
    disruptionsAllowed stays 0 (the fail-safe gangsched's victims meet), with an UnmanagedPods event."""
    w = World()
    w.pdb(maxUnavailable=1)
    assert w.status()["disruptionsAllowed"] == 0
    w.pod("naked")
    w.verify(0, 1, 0, 0)
    assert any(reason == "UnmanagedPods" and kind == "Warning" for kind, reason, _ in w.events())


def test_integer_max_unavailable_with_scaling() -> None:
    """TestIntegerMaxUnavailableWithScaling: the ReplicaSet's replicas are the expected count."""
    w = World()
    w.pdb(maxUnavailable=2)
    _, ref = w.workload("apps", "replicasets", "ReplicaSet", "foobar", 7)
    w.pod("pod", owner=ref)
    w.verify(0, 1, 5, 7)
    w.scale("apps", "replicasets", "foobar", 5)
    w.verify(0, 1, 3, 5)


def test_percentage_max_unavailable_with_scaling() -> None:
    """TestPercentageMaxUnavailableWithScaling: 30% of 7 rounds up to 3 unavailable; of 3, to 1."""
    w = World()
    w.pdb(maxUnavailable="30%")
    _, ref = w.workload("apps", "replicasets", "ReplicaSet", "foobar", 7)
    w.pod("pod", owner=ref)
    w.verify(0, 1, 4, 7)
    w.scale("apps", "replicasets", "foobar", 3)
    w.verify(0, 1, 2, 3)


@pytest.mark.parametrize("budget", [{"minAvailable": "28%"}, {"maxUnavailable": "28%"}], ids=["min", "max"])
def test_naked_pod_with_a_percentage(budget: dict[str, Any]) -> None:
    """TestNakedPod / TestStatusForUnmanagedPod / TestTotalUnmanagedPods: a percentage over a pod without a
    controller allows nothing, and it is not a sync failure (no SyncFailed condition)."""
    w = World()
    w.pdb(**budget)
    w.pod("unmanaged")
    s = w.status()
    assert s["disruptionsAllowed"] == 0 and s["expectedPods"] == 0
    assert all(c["reason"] != "SyncFailed" for c in s["conditions"])
    assert any(reason == "UnmanagedPods" for _, reason, _ in w.events())


@pytest.mark.parametrize(
    ("owner", "message"),
    [
        pytest.param(
            {"apiVersion": "apps.test.io/v1", "kind": "TestWorkload", "name": "fake-controller"},
            'no matches for kind "TestWorkload" in version "apps.test.io/v1"',
            id="unknown-kind",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"},
            "configmaps does not implement the scale subresource",
            id="no-scale-subresource",
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "gone"},
            'found no controllers for pod "naked"',
            id="controller-not-found",
        ),
    ],
)
def test_unsupported_controller_pod_fails_safe(owner: dict[str, Any], message: str) -> None:
    """TestUnsupportedControllerPod: a controller whose scale cannot be read fails the sync: the fail-safe
    writes disruptionsAllowed 0 with DisruptionAllowed=False/SyncFailed (disruption.go failSafe) and the
    CalculateExpectedPodCountFailed event; a Job-owned pod meets the same fate (batch Jobs have no scale)."""
    w = World()
    w.pdb(minAvailable="28%")
    w.pod("naked", owner=dict(owner, uid="b7329742-8daa-493a-8881-6ca07139172b", controller=True))
    s = w.status()
    assert s["disruptionsAllowed"] == 0
    cond = next(c for c in s["conditions"] if c["type"] == "DisruptionAllowed")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "SyncFailed", message)
    assert (
        "Warning",
        "CalculateExpectedPodCountFailed",
        f"Failed to calculate the number of expected pods: {message}",
    ) in w.events()


def test_replica_set_without_deployment() -> None:
    """TestReplicaSet: 20% of a ReplicaSet of 10."""
    w = World()
    w.pdb(minAvailable="20%")
    _, ref = w.workload("apps", "replicasets", "ReplicaSet", "foobar", 10)
    w.pod("pod", owner=ref)
    w.verify(0, 1, 2, 10)


def test_deployment_scale_through_its_replica_set() -> None:
    """TestDeploymentFinderFunction ("happy path"): a pod of a ReplicaSet owned by a Deployment counts the
    Deployment's replicas, not the ReplicaSet's."""
    w = World()
    w.pdb(maxUnavailable=1)
    _, dref = w.workload("apps", "deployments", "Deployment", "dep", 10)
    _, rsref = w.workload("apps", "replicasets", "ReplicaSet", "dep-abc", 5, owner=dref)
    w.pod("pod", owner=rsref)
    w.verify(0, 1, 9, 10)


def test_scale_resource() -> None:
    """TestScaleResource: a custom resource with the scale subresource (replicas 10, 4 pods, maxUnavailable 5)."""
    w = World()
    w.create(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        {
            "metadata": {"name": "customresources.custom.k8s.io"},
            "spec": {
                "group": "custom.k8s.io",
                "scope": "Namespaced",
                "names": {"plural": "customresources", "singular": "customresource", "kind": "CustomResource"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {
                            "status": {},
                            "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                        },
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }
                ],
            },
        },
    )
    cr = w.create("custom.k8s.io", "customresources", {"metadata": {"name": "cr"}, "spec": {"replicas": 10}})
    ref = {
        "apiVersion": "custom.k8s.io/v1",
        "kind": "CustomResource",
        "name": "cr",
        "uid": cr["metadata"]["uid"],
        "controller": True,
    }
    w.pdb(maxUnavailable=5)
    for i in range(4):
        w.pod(f"pod-{i}", owner=ref)
    w.verify(0 if 10 - 4 >= 5 else 5 - (10 - 4), 4, 5, 10)


def test_multiple_controllers() -> None:
    """TestMultipleControllers: no controller: nothing allowed; one RC of 1 with two healthy pods: 1% of 1."""
    w = World()
    w.pdb(minAvailable="1%")
    w.pod("pod-0")
    w.pod("pod-1")
    assert w.status()["disruptionsAllowed"] == 0
    _, ref = w.workload("", "replicationcontrollers", "ReplicationController", "rc-1", 1)
    for name in ("pod-0", "pod-1"):
        rtype = w.t("", "v1", "pods")
        obj = w.registry.get(rtype, "default", name).copy()
        obj["metadata"]["ownerReferences"] = [ref]
        w.registry.update(rtype, "default", name, obj, w.ctx)
    assert w.status()["disruptionsAllowed"] == 1


@pytest.mark.parametrize(
    ("group", "plural", "kind"),
    [("", "replicationcontrollers", "ReplicationController"), ("apps", "statefulsets", "StatefulSet")],
)
def test_replication_controller_and_stateful_set(group: str, plural: str, kind: str) -> None:
    """TestReplicationController / TestStatefulSetController: 34% of 3 rounds up to 2; a rogue pod with no
    controller then adds a healthy pod but no expected one."""
    labels = {"foo": "bar", "baz": "quux"}
    w = World()
    w.pdb(minAvailable="34%")
    _, ref = w.workload(group, plural, kind, "foobar", 3)
    w.verify(0, 0, 0, 0)
    for i in range(3):
        w.pod(f"foobar-{i}", labels=labels, owner=ref)
        if i < 2:
            w.verify(0, i + 1, 2, 3)
        else:
            w.verify(1, 3, 2, 3)
    if kind == "ReplicationController":
        w.pod("rogue")
        assert w.status()["disruptionsAllowed"] == 2


def test_update_disrupted_pods() -> None:
    """TestUpdateDisruptedPods: entries of pods being deleted, gone or older than DeletionTimeout (2 min) are
    dropped; a recent entry of a pod still there is kept and the pod not counted healthy."""
    w = World()
    w.pdb(minAvailable=1)
    w.pod("p1", finalizers=["test/hold"])
    w.pod("p2")
    w.pod("p3")
    w.registry.delete(w.t("", "v1", "pods"), "default", "p1", w.ctx)  # deletionTimestamp set (finalizer)
    rtype = w.t("policy", "v1", "poddisruptionbudgets")
    w.status()
    obj = w.registry.get(rtype, "default", "foobar").copy()
    obj["status"]["disruptedPods"] = {
        "p1": format_time(T0),
        "p2": format_time(T0 - datetime.timedelta(minutes=3)),
        "p3": format_time(T0 - datetime.timedelta(minutes=1)),
        "notthere": format_time(T0),
    }
    w.registry.update(rtype, "default", "foobar", obj, w.ctx, subresource="status")
    w.verify(0, 1, 1, 3, {"p3": format_time(T0 - datetime.timedelta(minutes=1))})
    w.now = T0 + datetime.timedelta(minutes=1, seconds=1)  # p3's entry expires: healthy again
    w.dc._mark(("default", "foobar"))
    w.verify(1, 2, 1, 3)


def test_keep_existing_pdb_condition_during_sync() -> None:
    """TestKeepExistingPDBConditionDuringSync: conditions of others are kept."""
    w = World()
    w.pdb(selector={}, minAvailable=3)
    rtype = w.t("policy", "v1", "poddisruptionbudgets")
    obj = w.registry.get(rtype, "default", "foobar").copy()
    obj["status"]["conditions"] = [
        {
            "type": "ExistingTestCondition",
            "status": "True",
            "reason": "Test",
            "message": "This is a test condition",
            "lastTransitionTime": format_time(T0),
        }
    ]
    w.registry.update(rtype, "default", "foobar", obj, w.ctx, subresource="status")
    w.verify(0, 0, 3, 0)
    assert {c["type"] for c in w.status()["conditions"]} == {"ExistingTestCondition", "DisruptionAllowed"}


def test_invalid_selector_fails_safe() -> None:
    """TestInvalidSelectors ("illegal operator"): validation refuses such a PDB (422); one that creeps in anyway
    (written to storage directly here) cannot list its pods: the fail-safe, disruptionsAllowed 0."""
    w = World()
    bad = {"matchExpressions": [{"key": "foo", "operator": "illegal", "values": ["bar"]}]}
    with pytest.raises(st.ApiError) as err:
        w.pdb(selector=bad, minAvailable=3)
    assert err.value.code == 422
    w.pdb(minAvailable=3)
    rtype = w.t("policy", "v1", "poddisruptionbudgets")
    entry = w.registry.get(rtype, "default", "foobar")
    obj = entry.copy()
    obj["spec"]["selector"] = bad
    w.registry.store.put(("policy", "poddisruptionbudgets"), obj, previous=entry)
    w.pod("p")
    s = w.status()
    assert (s["disruptionsAllowed"], s["currentHealthy"], s["expectedPods"]) == (0, 0, 0)
    assert next(c for c in s["conditions"] if c["type"] == "DisruptionAllowed")["reason"] == "SyncFailed"


def test_a_spec_change_is_observed() -> None:
    """observedGeneration follows metadata.generation (disruption.go updatePdbStatus)."""
    w = World()
    w.pdb(minAvailable=1)
    w.pod("a")
    w.pod("b")
    w.verify(1, 2, 1, 2)
    rtype = w.t("policy", "v1", "poddisruptionbudgets")
    obj = w.registry.get(rtype, "default", "foobar").copy()
    obj["spec"]["minAvailable"] = 2
    updated = w.registry.update(rtype, "default", "foobar", obj, w.ctx).obj
    assert updated["metadata"]["generation"] == 2 and updated["status"]["observedGeneration"] == 1
    w.verify(0, 2, 2, 2)


@pytest.mark.parametrize(
    ("status", "deleting", "passed", "want"),
    [
        pytest.param("True", False, 121, "False", id="stale pod disruption"),
        pytest.param("True", False, 119, "True", id="pod disruption in progress"),
        pytest.param("True", True, 121, "True", id="pod disruption actuated"),
        pytest.param("False", True, 121, "False", id="pod disruption cleared"),
    ],
)
def test_stale_pod_disruption(status: str, deleting: bool, passed: int, want: str) -> None:
    """TestStalePodDisruption: a DisruptionTarget=True condition on a pod not being deleted is reset to False
    once stalePodDisruptionTimeout (2 min) has passed."""
    w = World()
    w.pod("foo", finalizers=["test/hold"] if deleting else [])
    pods = w.t("", "v1", "pods")
    obj = w.registry.get(pods, "default", "foo").copy()
    obj["status"]["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": status,
            "reason": "EvictionByEvictionAPI",
            "lastTransitionTime": format_time(T0),
        }
    )
    w.registry.update(pods, "default", "foo", obj, w.ctx, subresource="status")
    if deleting:
        w.registry.delete(pods, "default", "foo", w.ctx)
    w.now = T0 + datetime.timedelta(seconds=passed)
    w.dc.sync_all()
    conds = w.registry.get(pods, "default", "foo").obj["status"]["conditions"]
    assert next(c for c in conds if c["type"] == "DisruptionTarget")["status"] == want


async def test_the_controller_runs_on_the_loop_debounced(kube: KubeClient, apiserver: Any) -> None:
    """Inside the ApiServer the status follows pod writes without any explicit sync, and a burst of writes
    costs far fewer syncs than writes (one per loop iteration at most)."""
    pods = "/api/v1/namespaces/default/pods"
    await kube.create(
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        {"metadata": {"name": "b"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": FOO_BAR}}},
    )
    before = apiserver.disruption.syncs
    for i in range(20):
        await kube.create(
            pods,
            {"metadata": {"name": f"p{i}", "labels": FOO_BAR}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        )
    for i in range(20):
        await kube.patch(
            f"{pods}/p{i}/status", {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        )
    pdb = await kube.get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/b")
    status = pdb["status"]
    assert (status["currentHealthy"], status["expectedPods"], status["disruptionsAllowed"]) == (20, 20, 19)
    assert status["observedGeneration"] == 1
    assert apiserver.disruption.syncs - before <= 2 * 40 + 2


async def test_kubectl_get_pdb_shows_the_computed_budget(kube: KubeClient, kubectl: Any) -> None:
    """What a user sees: `kubectl get pdb` prints the ALLOWED DISRUPTIONS the controller computed (and
    `kubectl describe`-style fields are in the status)."""
    pods = "/api/v1/namespaces/default/pods"
    await kube.create(
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        {"metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": FOO_BAR}}},
    )
    for i in range(3):
        await kube.create(
            pods,
            {"metadata": {"name": f"w{i}", "labels": FOO_BAR}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        )
        await kube.patch(
            f"{pods}/w{i}/status", {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        )
    result = await asyncio.to_thread(kubectl, "get", "pdb", "web", "--no-headers", check=True)
    out = result.stdout.split()
    assert out[:4] == ["web", "1", "N/A", "2"], out
