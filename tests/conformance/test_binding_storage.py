"""pods/binding against the emulator, as kube-apiserver answers it (1.37, with the exceptions named here).

Mirrors kubernetes/kubernetes pkg/registry/core/pod/storage/storage.go (BindingREST.Create, assignPod,
setPodNodeAndMetadata) and ports the table-driven cases of its storage_test.go: TestEtcdCreateBinding,
TestEtcdCreateBindingWithUIDAndResourceVersion, TestEtcdCreateWithSchedulingGates, TestEtcdCreateWithConflict,
TestEtcdCreateBindingNoPod, TestEtcdCreateWithContainersNotFound (annotations; labels would come with
PodTopologyLabelsAdmission, not modelled: still 1.32's answer), TestEtcdCreateClearsNominatedNodeName (feature gate
on, as in 1.37). The invalid-target answer is still modelled as 1.32's 500 (ValidatePodBinding's aggregate error is
not a Status; kubernetes issue #139488, fixed by #139581; not checked against 1.37 here).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.sim.apiserver import ApiServer
from tests.conformance._binding_helpers import binding, call, pod

PODS = "/api/v1/namespaces/default/pods"


async def _new_pod(server: ApiServer, name: str = "foo", **spec: Any) -> dict[str, Any]:
    status, created = await call(server, "POST", PODS, pod(name, **spec))
    assert status == 201, created
    return created


async def _node_of(server: ApiServer, name: str = "foo") -> str | None:
    status, got = await call(server, "GET", f"{PODS}/{name}")
    assert status == 200, got
    node: str | None = got["spec"].get("nodeName")
    return node


# TestEtcdCreateBinding: (target, name in URL differs, expected HTTP code)
CREATE_BINDING_CASES = [
    pytest.param({}, False, 500, "target.name: Required value", id="noName"),
    pytest.param({}, True, 400, "name in URL does not match name in Binding object", id="badNameInURL"),
    pytest.param(
        {"name": "machine1", "kind": "unknown"},
        False,
        500,
        'target.kind: Unsupported value: "unknown": supported values: "Node", "<empty>"',
        id="badKind",
    ),
    pytest.param({"name": "machine2"}, False, 201, None, id="emptyKind"),
    pytest.param({"name": "machine3", "kind": "Node"}, False, 201, None, id="kindNode"),
]


@pytest.mark.parametrize(("target", "bad_name", "code", "message"), CREATE_BINDING_CASES)
async def test_create_binding(
    apiserver: ApiServer, target: dict[str, Any], bad_name: bool, code: int, message: str | None
) -> None:
    await _new_pod(apiserver)
    url_name = "foobadnameinurl" if bad_name else "foo"  # the name check comes before the pod is read
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "foo"}, "target": target}
    status, answer = await call(apiserver, "POST", f"{PODS}/{url_name}/binding", body)
    assert status == code, answer
    if message is None:
        assert answer["status"] == "Success" and answer["code"] == 201
        assert await _node_of(apiserver) == target["name"]
    else:
        assert answer["message"] == message
        assert await _node_of(apiserver) is None


def _uid(pod: dict[str, Any], how: str) -> str:
    uid: str = pod["metadata"]["uid"]
    return {"origin": uid, "empty": "", "changed": uid + "-changed"}[how]


def _rv(pod: dict[str, Any], how: str) -> str:
    rv: str = pod["metadata"]["resourceVersion"]
    return {"origin": rv, "empty": "", "changed": rv + "-changed"}[how]


@pytest.mark.parametrize("uid_how", ["origin", "empty", "changed"])
@pytest.mark.parametrize("rv_how", ["origin", "empty", "changed"])
async def test_create_binding_with_uid_and_resource_version(apiserver: ApiServer, uid_how: str, rv_how: str) -> None:
    """TestEtcdCreateBindingWithUIDAndResourceVersion: both are preconditions; a mismatch is a 409 Conflict on
    "pods" carrying the storage layer's precondition message, and the pod stays unbound."""
    created = await _new_pod(apiserver)
    meta = {"uid": _uid(created, uid_how), "resourceVersion": _rv(created, rv_how)}
    status, answer = await call(apiserver, "POST", f"{PODS}/foo/binding", binding("foo", **meta))
    if "changed" in (uid_how, rv_how):
        assert status == 409 and answer["reason"] == "Conflict", answer
        assert answer["message"].startswith(
            'Operation cannot be fulfilled on pods "foo": StorageError: invalid object, Code: 4'
        )
        if uid_how == "changed":
            assert (
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                f"{created['metadata']['uid']}" in answer["message"]
            )
        else:
            assert "Precondition failed: ResourceVersion in precondition: " in answer["message"]
        assert answer["details"] == {"name": "foo", "group": "", "kind": "pods"}
        assert await _node_of(apiserver) is None
    else:
        assert status == 201, answer
        assert await _node_of(apiserver) == "machine"


@pytest.mark.parametrize(
    ("gates", "error"),
    [
        pytest.param(
            [{"name": "foo"}, {"name": "bar"}],
            'Operation cannot be fulfilled on pods/binding "foo": pod foo has non-empty .spec.schedulingGates',
            id="pod with non-nil schedulingGates",
        ),
        pytest.param(None, None, id="pod with nil schedulingGates"),
    ],
)
async def test_create_with_scheduling_gates(
    apiserver: ApiServer, gates: list[dict[str, str]] | None, error: str | None
) -> None:
    """TestEtcdCreateWithSchedulingGates (Kueue relies on a gated pod never being bound)."""
    spec: dict[str, Any] = {"schedulingGates": gates} if gates else {}
    await _new_pod(apiserver, **spec)
    status, answer = await call(apiserver, "POST", f"{PODS}/foo/binding", binding("foo"))
    if error is None:
        assert status == 201, answer
    else:
        assert status == 409 and answer["reason"] == "Conflict" and answer["message"] == error, answer
        assert answer["details"]["kind"] == "pods/binding"
        assert await _node_of(apiserver) is None


async def test_binding_conflicts_no_pod_and_deleting(apiserver: ApiServer) -> None:
    """TestEtcdCreateWithConflict, TestEtcdCreateBindingNoPod, and setPodNodeAndMetadata's deletionTimestamp
    check (a pod with a finalizer stays, being deleted)."""
    status, answer = await call(apiserver, "POST", f"{PODS}/foo/binding", binding("foo"))
    assert status == 404 and answer["message"] == 'pods "foo" not found'
    await _new_pod(apiserver)
    assert (await call(apiserver, "POST", f"{PODS}/foo/binding", binding("foo")))[0] == 201
    status, answer = await call(apiserver, "POST", f"{PODS}/foo/binding", binding("foo", "other"))
    assert status == 409
    assert (
        answer["message"]
        == 'Operation cannot be fulfilled on pods/binding "foo": pod foo is already assigned to node "machine"'
    )
    await _new_pod(apiserver, "held", finalizers=["example.com/hold"])
    status, _ = await call(apiserver, "DELETE", f"{PODS}/held")
    assert status == 200
    status, answer = await call(apiserver, "POST", f"{PODS}/held/binding", binding("held"))
    assert status == 409
    assert answer["message"] == (
        'Operation cannot be fulfilled on pods/binding "held": pod held is being deleted, cannot be assigned to a host'
    )


async def test_binding_copies_annotations_not_labels(apiserver: ApiServer) -> None:
    """TestEtcdCreateWithContainersNotFound: the Binding's annotations are merged into the pod's; its labels are
    copied only with PodTopologyLabelsAdmission (1.33+), so not in 1.32."""
    await _new_pod(apiserver, annotations={"keep": "me", "annotation1": "old"})
    body = binding("foo", annotations={"annotation1": "value1"}, labels={"label1": "label-value1"})
    assert (await call(apiserver, "POST", f"{PODS}/foo/binding", body))[0] == 201
    _, got = await call(apiserver, "GET", f"{PODS}/foo")
    assert got["metadata"]["annotations"] == {"keep": "me", "annotation1": "value1"}
    assert "label1" not in (got["metadata"].get("labels") or {})


async def test_binding_clears_nominated_node_name(apiserver: ApiServer) -> None:
    """TestEtcdCreateClearsNominatedNodeName with ClearingNominatedNodeNameAfterBinding on (pkg/registry/core/pod/
    storage/storage.go setPodNodeAndMetadata; the gate is beta and on by default in kube-apiserver since 1.35,
    kubernetes#135103, so a 1.37 server clears it; under 1.32 the gate did not exist and the name was kept);
    PodScheduled becomes True in place (podutil.UpdatePodCondition)."""
    await _new_pod(apiserver)
    status, _ = await call(
        apiserver,
        "PATCH",
        f"{PODS}/foo/status",
        {
            "status": {
                "nominatedNodeName": "nominated-node",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"},
                    {"type": "Example", "status": "True"},
                ],
            }
        },
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 200
    assert (await call(apiserver, "POST", f"{PODS}/foo/binding", binding("foo")))[0] == 201
    _, got = await call(apiserver, "GET", f"{PODS}/foo")
    assert "nominatedNodeName" not in got["status"]
    first = got["status"]["conditions"][0]
    assert first["type"] == "PodScheduled" and first["status"] == "True" and "reason" not in first


async def test_binding_in_a_terminating_namespace_is_forbidden(apiserver: ApiServer) -> None:
    """NamespaceLifecycle admission (apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go) refuses every
    create in a terminating namespace, a pods/binding create included."""
    assert (await call(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}}))[0] == 201
    path = "/api/v1/namespaces/team/pods"
    assert (await call(apiserver, "POST", path, pod("foo", finalizers=["example.com/hold"])))[0] == 201
    assert (await call(apiserver, "DELETE", "/api/v1/namespaces/team"))[0] == 200
    status, answer = await call(apiserver, "POST", f"{path}/foo/binding", binding("foo"))
    assert status == 403 and answer["reason"] == "Forbidden", answer
    assert answer["message"] == (
        'pods "foo" is forbidden: unable to create new content in namespace team because it is being terminated'
    )
