"""Graceful pod deletion and what a pod update may change, against the emulator, as kube-apiserver v1.32 does it.

Mirrors pkg/registry/core/pod/strategy.go (CheckGracefulDelete), staging/src/k8s.io/apiserver/pkg/registry/rest/
delete.go (BeforeDelete: deletionTimestamp = now + grace, only a shorter grace period on a second delete,
preconditions), staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go (Delete,
updateForGracefulDeletionAndFinalizers, shouldDeleteDuringUpdate), the kubelet's final delete with grace 0 and
a UID precondition (pkg/kubelet/status/status_manager.go), pkg/apis/core/validation/validation.go
(ValidatePodUpdate) and apimachinery's ValidateObjectMetaUpdate ("no new finalizers can be added if the object
is being deleted"). The storage_test.go cases ported: TestDelete's TestDeleteGraceful (a scheduled pod with
grace 30 stays), TestIgnoreDeleteNotFound's grace-0 expectation (DeletionGracePeriodSeconds 0).
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from gangsched.sim.apiserver import ApiServer
from tests.conformance._binding_helpers import binding, call, eventually, pod

PODS = "/api/v1/namespaces/default/pods"


def _ts(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)


async def _bound_pod(server: ApiServer, name: str, **spec: Any) -> dict[str, Any]:
    status, created = await call(server, "POST", PODS, pod(name, **spec))
    assert status == 201, created
    status, answer = await call(server, "POST", f"{PODS}/{name}/binding", binding(name, "node-1"))
    assert status == 201, answer
    return created


async def _exists(server: ApiServer, name: str) -> dict[str, Any] | None:
    status, got = await call(server, "GET", f"{PODS}/{name}")
    return got if status == 200 else None


async def _gone(server: ApiServer, name: str) -> bool:
    return await _exists(server, name) is None


async def test_deleting_a_bound_pod_is_graceful(apiserver: ApiServer) -> None:
    """A bound, running pod keeps existing with deletionTimestamp = now + spec.terminationGracePeriodSeconds and
    deletionGracePeriodSeconds, until its kubelet stops it (after the pod's termination delay) and deletes it
    with grace 0."""
    await _bound_pod(
        apiserver, "p", annotations={"sim.gangsched.io/termination-delay": "300ms"}, terminationGracePeriodSeconds=45
    )
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    status, answer = await call(apiserver, "DELETE", f"{PODS}/p")
    assert status == 200 and answer["kind"] == "Pod", answer
    meta = answer["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 45
    assert 44 <= (_ts(meta["deletionTimestamp"]) - before).total_seconds() <= 47
    assert meta["generation"] == 2  # BeforeDelete bumps it on the first graceful deletion
    still = await _exists(apiserver, "p")
    assert still is not None and still["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
    await eventually(lambda: _gone(apiserver, "p"), what="the kubelet's final deletion")


async def test_delete_options_grace_period_and_shortening(apiserver: ApiServer) -> None:
    """DeleteOptions.gracePeriodSeconds wins over the spec; a second delete may only shorten it (the timestamp moves
    by the difference; a longer one changes nothing); grace 0 removes the pod at once."""
    await _bound_pod(apiserver, "p", annotations={"sim.gangsched.io/termination-delay": "1h"})
    _, first = await call(apiserver, "DELETE", f"{PODS}/p", {"gracePeriodSeconds": 100})
    assert first["metadata"]["deletionGracePeriodSeconds"] == 100
    _, longer = await call(apiserver, "DELETE", f"{PODS}/p", {"gracePeriodSeconds": 200})
    assert longer["metadata"]["deletionGracePeriodSeconds"] == 100
    assert longer["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    _, shorter = await call(apiserver, "DELETE", f"{PODS}/p", {"gracePeriodSeconds": 60})
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 60
    moved = _ts(first["metadata"]["deletionTimestamp"]) - _ts(shorter["metadata"]["deletionTimestamp"])
    assert moved == datetime.timedelta(seconds=40)
    status, last = await call(apiserver, "DELETE", f"{PODS}/p?gracePeriodSeconds=0")
    assert status == 200 and last["metadata"]["deletionGracePeriodSeconds"] == 0
    assert await _gone(apiserver, "p")


@pytest.mark.parametrize("case", ["unbound", "succeeded", "grace-zero"])
async def test_pods_removed_at_once(apiserver: ApiServer, case: str) -> None:
    """CheckGracefulDelete: no grace period for an unbound or terminal pod, or when 0 is asked for."""
    if case == "unbound":
        assert (await call(apiserver, "POST", PODS, pod("p")))[0] == 201
    else:
        await _bound_pod(apiserver, "p", annotations={"sim.gangsched.io/termination-delay": "1h"})
    if case == "succeeded":
        assert (
            await call(
                apiserver,
                "PATCH",
                f"{PODS}/p/status",
                {"status": {"phase": "Succeeded"}},
                content_type="application/merge-patch+json",
            )
        )[0] == 200
    body = {"gracePeriodSeconds": 0} if case == "grace-zero" else None
    status, answer = await call(apiserver, "DELETE", f"{PODS}/p", body)
    assert status == 200 and answer["metadata"]["deletionGracePeriodSeconds"] == 0
    assert await _gone(apiserver, "p")


@pytest.mark.looptime  # the kubelet's grace-period timer on virtual time
async def test_termination_delay_is_capped_by_the_grace_period(apiserver: ApiServer) -> None:
    """The kubelet never keeps a pod past its grace period: a pod asking for 1h of termination with a grace period
    of 1 s is gone within about a second."""
    await _bound_pod(
        apiserver, "p", annotations={"sim.gangsched.io/termination-delay": "1h"}, terminationGracePeriodSeconds=1
    )
    loop = asyncio.get_running_loop()
    status, _ = await call(apiserver, "DELETE", f"{PODS}/p")
    deleted = loop.time()
    assert status == 200
    assert await _exists(apiserver, "p") is not None
    await eventually(lambda: _gone(apiserver, "p"), timeout=5, what="the pod gone after its grace period")
    assert loop.time() - deleted <= 1.0 + 0.1  # (virtual time: the grace period, and one poll of eventually)


@pytest.mark.looptime  # the kubelet's grace-period timer on virtual time
async def test_a_shortened_grace_period_brings_the_end_forward(apiserver: ApiServer) -> None:
    """A second DELETE with a shorter grace period makes the kubelet finish the pod by the new deadline."""
    await _bound_pod(apiserver, "p", annotations={"sim.gangsched.io/termination-delay": "1h"})
    assert (await call(apiserver, "DELETE", f"{PODS}/p"))[1]["metadata"]["deletionGracePeriodSeconds"] == 30
    loop = asyncio.get_running_loop()
    assert (await call(apiserver, "DELETE", f"{PODS}/p", {"gracePeriodSeconds": 1}))[0] == 200
    shortened = loop.time()
    assert await _exists(apiserver, "p") is not None
    await eventually(lambda: _gone(apiserver, "p"), timeout=5, what="the pod gone by its shortened deadline")
    assert loop.time() - shortened <= 1.0 + 0.1  # (virtual time: the new deadline, and one poll of eventually)


async def test_finalizers_keep_a_terminated_pod_and_no_new_ones(apiserver: ApiServer) -> None:
    """A pod with a finalizer outlives its termination (deletionGracePeriodSeconds 0) until the finalizer goes;
    no new finalizer may be added to an object being deleted (422)."""
    await _bound_pod(apiserver, "p", finalizers=["example.com/a"])
    assert (await call(apiserver, "DELETE", f"{PODS}/p"))[0] == 200

    async def finished() -> bool:
        got = await _exists(apiserver, "p")
        return got is not None and got["metadata"]["deletionGracePeriodSeconds"] == 0

    await eventually(finished, what="the kubelet's final delete leaving the finalizer")
    status, answer = await call(
        apiserver,
        "PATCH",
        f"{PODS}/p",
        {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}},
        content_type="application/merge-patch+json",
    )
    assert status == 422 and answer["reason"] == "Invalid", answer
    assert (
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"example.com/b"}' in answer["message"]
    )
    status, _ = await call(
        apiserver, "PATCH", f"{PODS}/p", {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json"
    )
    assert status == 200
    assert await _gone(apiserver, "p")


async def test_delete_preconditions(apiserver: ApiServer) -> None:
    """BeforeDelete's precondition conflict (the kubelet's final delete carries the pod's UID)."""
    created = await _bound_pod(apiserver, "p")
    status, answer = await call(apiserver, "DELETE", f"{PODS}/p", {"preconditions": {"uid": "not-the-uid"}})
    assert status == 409, answer
    assert answer["message"] == (
        'Operation cannot be fulfilled on Pod "p": the UID in the precondition (not-the-uid) '
        f"does not match the UID in record ({created['metadata']['uid']}). "
        "The object might have been deleted and then recreated"
    )


# ValidatePodUpdate: (merge patch of the pod, allowed?)
UPDATE_CASES = [
    pytest.param({"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}, None, id="image"),
    pytest.param({"spec": {"activeDeadlineSeconds": 30}}, None, id="activeDeadlineSeconds-set"),
    pytest.param(
        {"spec": {"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}},
        None,
        id="tolerations-added",
    ),
    pytest.param(
        {"spec": {"tolerations": []}},
        "spec.tolerations: Forbidden: existing toleration can not be modified",
        id="tolerations-removed",
    ),
    pytest.param({"spec": {"schedulingGates": [{"name": "g1"}]}}, None, id="gate-removed"),
    pytest.param(
        {"spec": {"schedulingGates": [{"name": "g1"}, {"name": "g2"}, {"name": "g3"}]}},
        "spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g3'",
        id="gate-added",
    ),
    pytest.param({"metadata": {"labels": {"x": "y"}, "annotations": {"a": "b"}}}, None, id="labels-annotations"),
    pytest.param(
        {"spec": {"containers": [{"name": "c", "image": "busybox:1", "command": ["sleep"]}]}},
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`",
        id="command",
    ),
    pytest.param({"spec": {"nodeSelector": {"zone": "a"}}}, None, id="nodeSelector-added-while-gated"),
    pytest.param(
        {"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "i"}]}},
        "spec.containers: Forbidden: pod updates may not add or remove containers",
        id="container-added",
    ),
    pytest.param(
        {"spec": {"priorityClassName": "system-node-critical"}},
        "spec: Forbidden: pod updates may not change fields other than",
        id="priorityClassName",
    ),
]


@pytest.mark.parametrize(("patch", "error"), UPDATE_CASES)
async def test_pod_update_validation(apiserver: ApiServer, patch: dict[str, Any], error: str | None) -> None:
    spec = {"tolerations": [{"key": "a", "operator": "Exists"}], "schedulingGates": [{"name": "g1"}, {"name": "g2"}]}
    assert (await call(apiserver, "POST", PODS, pod("p", **spec)))[0] == 201
    status, answer = await call(
        apiserver, "PATCH", f"{PODS}/p", patch, content_type="application/strategic-merge-patch+json"
    )
    if error is None:
        assert status == 200, answer
    else:
        assert status == 422 and answer["reason"] == "Invalid", answer
        assert answer["message"].startswith('Pod "p" is invalid: ') and error in answer["message"], answer["message"]


async def test_node_selector_is_immutable_once_ungated(apiserver: ApiServer) -> None:
    """ValidatePodUpdate: nodeSelector additions are allowed only while the stored pod has scheduling gates."""
    assert (await call(apiserver, "POST", PODS, pod("p", schedulingGates=[{"name": "g"}])))[0] == 201
    status, _ = await call(
        apiserver,
        "PATCH",
        f"{PODS}/p",
        {"spec": {"schedulingGates": None, "nodeSelector": {"a": "1"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 200
    status, answer = await call(
        apiserver,
        "PATCH",
        f"{PODS}/p",
        {"spec": {"nodeSelector": {"a": "1", "b": "2"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 422 and "pod updates may not change fields other than" in answer["message"], answer


async def test_put_without_node_name_is_forbidden(apiserver: ApiServer) -> None:
    """spec.nodeName is set by pods/binding only: a PUT that drops it (or changes it) is a forbidden spec change;
    defaulted fields left out of the PUT are defaulted again (not a change)."""
    await _bound_pod(apiserver, "p")
    _, current = await call(apiserver, "GET", f"{PODS}/p")
    body = dict(current)
    body["spec"] = {k: v for k, v in current["spec"].items() if k not in ("nodeName",)}
    status, answer = await call(apiserver, "PUT", f"{PODS}/p", body)
    assert status == 422 and "pod updates may not change fields other than" in answer["message"], answer
    body["spec"] = {k: v for k, v in current["spec"].items() if k not in ("dnsPolicy", "restartPolicy", "priority")}
    status, answer = await call(apiserver, "PUT", f"{PODS}/p", body)
    assert status == 200, answer
