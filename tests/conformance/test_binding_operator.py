"""The operator's binder against the stricter pods/binding (issue 11 item 4): every Binding carries the pod's UID
as kube-scheduler's DefaultBinder does (pkg/scheduler/framework/plugins/defaultbinder/default_binder.go), and a 409
is reconciled from the pod's current state, as the real apiserver's refusals
(pkg/registry/core/pod/storage/storage.go, setPodNodeAndMetadata) mean it: a re-created or deleting pod is gone,
a gated pod waits for its gates, a pod bound by someone else is a conflict.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.k8s.binder import Binder
from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import running_cluster
from tests.builders import pod_manifest
from tests.integration.harness import create, eventually, on_replica, pod, pods, replica

PODS = "/api/v1/namespaces/default/pods"


async def test_a_pod_recreated_under_the_same_name_is_not_bound(kube: KubeClient) -> None:
    old = await kube.create(PODS, pod_manifest("p", image="i", typed=False))
    await kube.delete(f"{PODS}/p")
    new = await kube.create(PODS, pod_manifest("p", image="i", typed=False))
    [result] = await Binder(kube).bind_all([("default", "p", "n1", old["metadata"]["uid"])])
    assert result.outcome == "gone" and not result.ok, result
    assert new["metadata"]["uid"] in result.message
    assert (await kube.get(f"{PODS}/p"))["spec"].get("nodeName") is None
    [result] = await Binder(kube).bind_all([("default", "p", "n1", new["metadata"]["uid"])])
    assert result.outcome == "bound"


async def test_a_gated_pod_is_reported_gated(kube: KubeClient) -> None:
    created = await kube.create(
        PODS, pod_manifest("g", image="i", typed=False, schedulingGates=[{"name": "example.com/quota"}])
    )
    [result] = await Binder(kube).bind_all([("default", "g", "n1", created["metadata"]["uid"])])
    assert result.outcome == "gated" and not result.ok, result
    assert "non-empty .spec.schedulingGates" in result.message


@pytest.mark.parametrize("state", ["same-node", "other-node", "deleting"])
async def test_a_conflict_is_reconciled_from_the_pod(kube: KubeClient, state: str) -> None:
    created = await kube.create(
        PODS,
        pod_manifest("p", image="i", typed=False, finalizers=["example.com/hold"] if state == "deleting" else None),
    )
    uid = created["metadata"]["uid"]
    if state == "deleting":
        await kube.delete(f"{PODS}/p")
    else:
        node = "n1" if state == "same-node" else "n2"
        await kube.create(
            f"{PODS}/p/binding", {"metadata": {"name": "p", "uid": uid}, "target": {"kind": "Node", "name": node}}
        )
    binder = Binder(kube)
    [result] = await binder.bind_all([("default", "p", "n1", uid)])
    expected = {"same-node": "already-bound", "other-node": "conflict", "deleting": "gone"}[state]
    assert result.outcome == expected, result
    assert binder.errors == (1 if state == "other-node" else 0)


async def test_a_pod_in_a_terminating_namespace_is_gone(kube: KubeClient) -> None:
    await kube.create("/api/v1/namespaces", {"metadata": {"name": "team"}})
    created = await kube.create(
        "/api/v1/namespaces/team/pods", pod_manifest("p", image="i", typed=False, finalizers=["example.com/hold"])
    )
    await kube.delete("/api/v1/namespaces/team")
    [result] = await Binder(kube).bind_all([("team", "p", "n1", created["metadata"]["uid"])])
    assert result.outcome == "gone", result


async def test_the_operator_never_binds_a_gated_pod_and_binds_it_once_ungated() -> None:
    """A gated pod is never sent to pods/binding (the core skips gated pods, KEP-3521: the apiserver would refuse
    it with 409), and is bound once its gates are removed (the pod update wakes the scheduler)."""
    async with running_cluster(nodes=2, node_resources={"cpu": "8", "memory": "32Gi", "pods": "110"}) as cluster:
        k: KubeClient = cluster.client
        async with replica(cluster.kubeconfig) as op:
            gated = pod("gated", cpu="1")
            gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
            await create(k, gated)
            await create(k, pod("plain", cpu="1"))
            await eventually(lambda: _bound(k, "plain"), what="an ordinary pod bound meanwhile")
            assert not await _bound(k, "gated")
            assert on_replica(op, lambda: _bind_errors(op)) == 0  # never tried, so never refused
            await k.patch(f"{PODS}/gated", {"spec": {"schedulingGates": None}})
            await eventually(lambda: _bound(k, "gated"), what="the pod bound once ungated")


def _bind_errors(op: Any) -> float:
    value = op.metrics.bind_errors._value.get()
    return float(value)


async def _bound(k: KubeClient, name: str) -> bool:
    return bool((await pods(k)).get(name, {}).get("spec", {}).get("nodeName"))
