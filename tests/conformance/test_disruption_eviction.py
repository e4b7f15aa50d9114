"""pods/eviction of the emulator against kube-apiserver's eviction REST handler and its table tests.

Ported from kubernetes/kubernetes pkg/registry/core/pod/storage/eviction_test.go (TestEviction,
TestEvictionIngorePDB, TestEvictionDryRun, TestEvictionPDBStatus); the behaviour is eviction.go's in the same
package (canIgnorePDB, checkAndDecrement, createTooManyRequestsError, getPodDisruptionBudgets). As upstream,
the table cases give each PDB a fixed status: they run on an emulator without the disruption controller and
write the status through the status subresource. The last tests run with the controller (the default).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.apiserver import ApiServer

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
A_TRUE = {"a": "true"}


@pytest.fixture
async def fixed(tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A client of an emulator whose PDB statuses are whatever the test writes (no disruption controller)."""
    server = ApiServer(disruption_controller=False)
    await server.start()
    client = await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "kubeconfig")))
    try:
        yield client
    finally:
        await client.close()
        await server.stop()


async def make_pdb(
    k: KubeClient, status: dict[str, Any], *, selector: dict[str, Any] | None = None, name: str = "foo", **spec: Any
) -> dict[str, Any]:
    pdb = await k.create(
        PDBS,
        {
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": A_TRUE} if selector is None else selector, **spec},
        },
    )
    full = {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
        "observedGeneration": pdb["metadata"]["generation"],
        **status,
    }
    result: dict[str, Any] = await k.patch(f"{PDBS}/{name}/status", {"status": full})
    return result


async def make_pod(
    k: KubeClient,
    name: str,
    *,
    phase: str | None = "Running",
    ready: bool | None = True,
    finalizers: list[str] | None = None,
) -> None:
    meta: dict[str, Any] = {"name": name, "labels": A_TRUE}
    if finalizers:
        meta["finalizers"] = finalizers
    await k.create(PODS, {"metadata": meta, "spec": {"nodeName": "foo", "containers": [{"name": "c", "image": "i"}]}})
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    if status:
        await k.patch(f"{PODS}/{name}/status", {"status": status})


def eviction(name: str, **options: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 0, **options},
    }


async def exists(k: KubeClient, name: str) -> bool:
    try:
        await k.get(f"{PODS}/{name}")
        return True
    except ApiError as exc:
        if exc.status != 404:
            raise
        return False


@pytest.mark.parametrize(
    ("allowed", "selector", "phase", "deleted"),
    [
        pytest.param(0, A_TRUE, "Running", False, id="matching pdbs with no disruptions allowed, pod running"),
        pytest.param(0, A_TRUE, "Pending", True, id="matching pdbs with no disruptions allowed, pod pending"),
        pytest.param(0, A_TRUE, "Succeeded", True, id="matching pdbs with no disruptions allowed, pod succeeded"),
        pytest.param(0, A_TRUE, "Failed", True, id="matching pdbs with no disruptions allowed, pod failed"),
        pytest.param(1, A_TRUE, "Running", True, id="matching pdbs with disruptions allowed"),
        pytest.param(0, {"b": "true"}, "Running", True, id="non-matching pdbs"),
    ],
)
async def test_eviction(fixed: KubeClient, allowed: int, selector: dict[str, str], phase: str, deleted: bool) -> None:
    """TestEviction: decided from status.disruptionsAllowed; pending and terminal pods bypass the budget."""
    await make_pdb(fixed, {"disruptionsAllowed": allowed}, selector={"matchLabels": selector})
    await make_pod(fixed, "t1", phase=phase)
    if deleted:
        result = await fixed.create(f"{PODS}/t1/eviction", eviction("t1"))
        assert result["status"] == "Success"
        assert not await exists(fixed, "t1")
    else:
        with pytest.raises(ApiError) as err:
            await fixed.create(f"{PODS}/t1/eviction", eviction("t1"))
        assert (err.value.status, err.value.reason) == (429, "TooManyRequests")
        assert await exists(fixed, "t1")


async def test_eviction_bad_name_in_url(fixed: KubeClient) -> None:
    """TestEviction ("bad name in Url"): 400 with the real message."""
    await make_pdb(fixed, {"disruptionsAllowed": 1})
    await make_pod(fixed, "t7")
    with pytest.raises(ApiError) as err:
        await fixed.create(f"{PODS}/t7/eviction", eviction("t7bad-name"))
    assert (err.value.status, err.value.message) == (400, "name in URL does not match name in Eviction object")


async def test_refusal_body_names_the_budget(fixed: KubeClient) -> None:
    """checkAndDecrement: 429 TooManyRequests, cause reason DisruptionBudget, "needs N healthy pods and has M
    currently"; no Retry-After for an exhausted budget."""
    await make_pdb(fixed, {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2})
    await make_pod(fixed, "t1")
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{fixed.settings.server}{PODS}/t1/eviction", json=eviction("t1")) as resp:
            body = await resp.json()
            assert resp.status == 429 and "Retry-After" not in resp.headers
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget foo needs 2 healthy pods and has 2 currently"}
    ]


async def test_a_budget_being_processed_answers_429_with_retry_after(fixed: KubeClient) -> None:
    """createTooManyRequestsError: observedGeneration behind metadata.generation -> 429, Retry-After 10,
    "The disruption budget foo is still being processed by the server." (even with disruptions allowed)."""
    await make_pdb(fixed, {"disruptionsAllowed": 5, "observedGeneration": 0})
    await make_pod(fixed, "t1")
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{fixed.settings.server}{PODS}/t1/eviction", json=eviction("t1")) as resp:
            body = await resp.json()
            assert resp.status == 429 and resp.headers.get("Retry-After") == "10"
    assert body["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget foo is still being processed by the server."}
    ]
    assert body["details"]["retryAfterSeconds"] == 10
    assert await exists(fixed, "t1")


async def test_two_budgets_are_an_internal_error(fixed: KubeClient) -> None:
    """More than one PDB selects the pod: 500, whatever their budgets."""
    await make_pdb(fixed, {"disruptionsAllowed": 3}, name="one")
    await make_pdb(fixed, {"disruptionsAllowed": 3}, name="two")
    await make_pod(fixed, "t1")
    with pytest.raises(ApiError) as err:
        await fixed.create(f"{PODS}/t1/eviction", eviction("t1"))
    assert err.value.status == 500
    assert (
        err.value.message
        == "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )


async def test_an_empty_selector_protects_nothing_at_eviction(fixed: KubeClient) -> None:
    """getPodDisruptionBudgets: "If a PDB with a nil or empty selector creeps in, it should match nothing"."""
    await make_pdb(fixed, {"disruptionsAllowed": 0}, selector={})
    await make_pod(fixed, "t1")
    await fixed.create(f"{PODS}/t1/eviction", eviction("t1"))
    assert not await exists(fixed, "t1")


@pytest.mark.parametrize(
    ("status", "ready", "policy", "deleted"),
    [
        pytest.param(
            {"currentHealthy": 2, "desiredHealthy": 2},
            True,
            None,
            False,
            id="no disruptions allowed, pod running, pod healthy, unhealthy pod not ours",
        ),
        pytest.param(
            {"currentHealthy": 2, "desiredHealthy": 2},
            False,
            None,
            True,
            id="no disruptions allowed, pod running, pod unhealthy, unhealthy pod ours",
        ),
        pytest.param(
            {"currentHealthy": 1, "desiredHealthy": 2},
            False,
            None,
            False,
            id="IfHealthyBudget: an unhealthy pod of a disrupted application is kept",
        ),
        pytest.param(
            {"currentHealthy": 1, "desiredHealthy": 2},
            False,
            "AlwaysAllow",
            True,
            id="AlwaysAllow: an unhealthy pod goes whatever the budget",
        ),
        pytest.param(
            {"currentHealthy": 1, "desiredHealthy": 2}, False, "IfHealthyBudget", False, id="IfHealthyBudget explicit"
        ),
    ],
)
async def test_eviction_ignore_pdb_for_unhealthy_pods(
    fixed: KubeClient, status: dict[str, int], ready: bool, policy: str | None, deleted: bool
) -> None:
    """TestEvictionIngorePDB (t7, t8) and unhealthyPodEvictionPolicy (KEP-3017, GA in 1.31)."""
    spec: dict[str, Any] = {"unhealthyPodEvictionPolicy": policy} if policy else {}
    before = await make_pdb(fixed, {"disruptionsAllowed": 0, **status}, **spec)
    await make_pod(fixed, "t8", ready=ready)
    if deleted:
        await fixed.create(f"{PODS}/t8/eviction", eviction("t8"))
        assert not await exists(fixed, "t8")
        after = await fixed.get(f"{PDBS}/foo")
        assert after["status"] == before["status"]  # the budget is not touched for an unhealthy pod
    else:
        with pytest.raises(ApiError) as err:
            await fixed.create(f"{PODS}/t8/eviction", eviction("t8"))
        assert err.value.status == 429


async def test_a_terminating_pod_bypasses_the_budget_and_keeps_its_grace(fixed: KubeClient) -> None:
    """TestEvictionIngorePDB ("pod terminating"): a pod being deleted is deleted again without the budget; the
    Eviction's DeleteOptions (gracePeriodSeconds 300) are passed on to the delete."""
    await make_pdb(fixed, {"disruptionsAllowed": 0})
    await make_pod(fixed, "t6", finalizers=["test.gangsched.io/hold"])
    await fixed.delete(f"{PODS}/t6")
    await fixed.create(f"{PODS}/t6/eviction", eviction("t6", gracePeriodSeconds=300))
    assert await exists(fixed, "t6")  # the finalizer holds it


async def test_eviction_dry_run(fixed: KubeClient) -> None:
    """TestEvictionDryRun: dryRun (in the request or the Eviction's options) deletes nothing and takes nothing
    from the budget."""
    before = await make_pdb(fixed, {"disruptionsAllowed": 1})
    await make_pod(fixed, "t1")
    await fixed.create(f"{PODS}/t1/eviction", eviction("t1", dryRun=["All"]))
    await fixed.request("POST", f"{PODS}/t1/eviction", params={"dryRun": "All"}, body=eviction("t1"))
    assert await exists(fixed, "t1")
    assert (await fixed.get(f"{PDBS}/foo"))["status"] == before["status"]


@pytest.mark.parametrize(("allowed", "reason"), [(1, "InsufficientPods"), (3, "SufficientPods")])
async def test_eviction_pdb_status(fixed: KubeClient, allowed: int, reason: str) -> None:
    """TestEvictionPDBStatus: a successful eviction decrements disruptionsAllowed, records the pod in
    disruptedPods, and the DisruptionAllowed reason changes only when the budget reaches 0. The evicted pod
    gets the DisruptionTarget condition (EvictionByEvictionAPI) before it is deleted."""
    await make_pdb(
        fixed,
        {
            "disruptionsAllowed": allowed,
            "conditions": [
                {
                    "type": "DisruptionAllowed",
                    "status": "True",
                    "reason": "SufficientPods",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    )
    await make_pod(fixed, "foo-1", finalizers=["test.gangsched.io/hold"])
    await make_pod(fixed, "foo-2")
    await fixed.create(
        f"{PODS}/foo-1/eviction",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "foo-1"}, "deleteOptions": {}},
    )
    pdb = await fixed.get(f"{PDBS}/foo")
    assert pdb["status"]["disruptionsAllowed"] == allowed - 1
    assert list(pdb["status"]["disruptedPods"]) == ["foo-1"]
    cond = next(c for c in pdb["status"]["conditions"] if c["type"] == "DisruptionAllowed")
    assert cond["reason"] == reason
    pod = await fixed.get(f"{PODS}/foo-1")
    assert pod["metadata"]["deletionTimestamp"]
    target = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )


# ---------------------------------------------------------------- with the disruption controller


async def test_with_the_controller_bare_pods_under_max_unavailable_are_protected(kube: KubeClient) -> None:
    """The whole chain: the controller's fail-safe for pods without a controller (expectedPods 0) makes the
    Eviction API refuse, with the status it computed in the message."""
    await kube.create(
        PDBS, {"metadata": {"name": "b"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": A_TRUE}}}
    )
    for i in range(3):
        await make_pod(kube, f"p{i}")
    with pytest.raises(ApiError) as err:
        await kube.create(f"{PODS}/p0/eviction", eviction("p0"))
    assert err.value.status == 429
    pdb = await kube.get(f"{PDBS}/b")
    assert (pdb["status"]["expectedPods"], pdb["status"]["currentHealthy"], pdb["status"]["disruptionsAllowed"]) == (
        0,
        3,
        0,
    )


async def test_with_the_controller_the_budget_is_spent_then_restored(kube: KubeClient) -> None:
    """minAvailable 2 of 4: two evictions succeed (each decrements the budget at once, before the controller
    recomputes), the third is refused; disruptedPods empties once the pods are gone."""
    await kube.create(
        PDBS, {"metadata": {"name": "b"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": A_TRUE}}}
    )
    for i in range(4):
        await make_pod(kube, f"p{i}")
    await kube.create(f"{PODS}/p0/eviction", eviction("p0"))
    await kube.create(f"{PODS}/p1/eviction", eviction("p1"))
    with pytest.raises(ApiError) as err:
        await kube.create(f"{PODS}/p2/eviction", eviction("p2"))
    assert err.value.status == 429
    pdb = await kube.get(f"{PDBS}/b")
    assert (pdb["status"]["currentHealthy"], pdb["status"]["disruptionsAllowed"]) == (2, 0)
    assert not pdb["status"].get("disruptedPods")


@pytest.mark.parametrize(
    ("spec", "field", "detail"),
    [
        ({"minAvailable": 1, "maxUnavailable": 1}, "spec", "minAvailable and maxUnavailable cannot be both set"),
        ({"minAvailable": -1}, "spec.minAvailable", "Invalid value: -1: must be greater than or equal to 0"),
        (
            {"maxUnavailable": "10"},
            "spec.maxUnavailable",
            "a valid percent string must be a numeric string followed by an ending '%'",
        ),
        ({"minAvailable": "101%"}, "spec.minAvailable", 'Invalid value: "101%": must not be greater than 100%'),
        (
            {"minAvailable": 1, "unhealthyPodEvictionPolicy": "Sometimes"},
            "spec.unhealthyPodEvictionPolicy",
            'Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"',
        ),
        (
            {"minAvailable": 1, "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
            "spec.selector.matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {
                "minAvailable": 1,
                "selector": {"matchExpressions": [{"key": "a", "operator": "illegal", "values": ["b"]}]},
            },
            "spec.selector.matchExpressions[0].operator",
            'Invalid value: "illegal": not a valid selector operator',
        ),
    ],
    ids=["both", "negative", "not-a-percent", "over-100", "policy", "in-without-values", "operator"],
)
async def test_pdb_validation(kube: KubeClient, spec: dict[str, Any], field: str, detail: str) -> None:
    """pkg/apis/policy/validation/validation.go ValidatePodDisruptionBudgetSpec (with apps validation's
    ValidatePositiveIntOrPercent and IsNotMoreThan100Percent): 422, on create and on update."""
    body = {"metadata": {"name": "v"}, "spec": {"selector": {"matchLabels": A_TRUE}, **spec}}
    with pytest.raises(ApiError) as err:
        await kube.create(PDBS, body)
    assert err.value.status == 422 and f"{field}: " in err.value.message and detail in err.value.message
    await kube.create(
        PDBS, {"metadata": {"name": "v"}, "spec": {"selector": {"matchLabels": A_TRUE}, "minAvailable": 1}}
    )
    with pytest.raises(ApiError) as err:
        await kube.patch(f"{PDBS}/v", {"spec": {"maxUnavailable": None, "minAvailable": None, **spec}})
    assert err.value.status == 422 and detail in err.value.message
