"""scheduling.k8s.io/v1beta1 Workload, v1alpha3 CompositePodGroup and pod spec.schedulingGroup as kube-apiserver
1.37 serves them, and the two API profiles of the emulator (issue 25 item 1).

Sources (kubernetes/kubernetes):
- pkg/apis/scheduling/validation/validation_test.go TestValidateWorkload / TestValidateWorkloadUpdate: the case
  names below are its names; validation.go ValidateWorkloadSpec (validateWorkloadTemplateNamesUniqueness,
  validateWorkloadTemplatesDepth: WorkloadMaxTemplateDepth 4, validateWorkloadPriority,
  validateCompositePodGroupTemplateHasAtLeastOneChild).
- staging/src/k8s.io/api/scheduling/v1beta1/types.go WorkloadSpec: podGroupTemplates | compositePodGroupTemplates
  (`+k8s:unionMember`, `+k8s:maxItems=8`, `+k8s:update=NoAddItem,NoRemoveItem`), controllerRef `+k8s:immutable`.
- staging/src/k8s.io/api/scheduling/v1alpha3/types.go CompositePodGroupSpec: workloadRef `+k8s:required`,
  schedulingPolicy basic | gang{minGroupCount `+k8s:minimum=1`}, every field `+k8s:immutable`;
  pkg/registry/scheduling/compositepodgroup/strategy.go (status subresource).
- Pod spec.schedulingGroup (core/v1 PodSchedulingGroup, `+featureGate=GenericWorkload`): a union with one member
  (podGroupName, a DNS subdomain); pkg/apis/core/validation ValidatePodUpdate leaves it out of the mutable fields;
  pkg/api/pod/util.go dropDisabledPodFields drops it without GenericWorkload.
- pkg/features/kube_features.go: GenericWorkload, CompositePodGroup, TopologyAwareWorkloadScheduling default off in
  1.37, and beta APIs are off unless --runtime-config names them: a plain 1.37 serves none of this.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from gangsched.sim.apiserver import ApiServer
from gangsched.sim.features import resolve
from tests.builders import pod_manifest

WLS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads"
CPGS = "/apis/scheduling.k8s.io/v1alpha3/namespaces/default/compositepodgroups"
PODS = "/api/v1/namespaces/default/pods"


async def call(server: ApiServer, method: str, path: str, body: Any = None, content_type: str | None = None) -> Any:
    headers = {"Content-Type": content_type} if content_type else None
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{server.url}{path}", json=body, headers=headers) as r,
    ):
        try:
            return r.status, await r.json()
        except aiohttp.ContentTypeError:
            return r.status, {"text": await r.text()}


def causes(body: dict[str, Any]) -> set[tuple[str, str]]:
    return {(c["field"], c["reason"]) for c in (body.get("details") or {}).get("causes") or []}


def mk_workload(**spec: Any) -> dict[str, Any]:
    """mkWorkload: a basic and a gang template with a topology constraint, and a controllerRef."""
    base: dict[str, Any] = {
        "controllerRef": {"apiGroup": "group", "kind": "foo", "name": "baz"},
        "podGroupTemplates": [
            {
                "name": "group1",
                "schedulingPolicy": {"basic": {}},
                "schedulingConstraints": {"topology": [{"key": "foo"}]},
            },
            {
                "name": "group2",
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "foo"}]},
            },
        ],
    }
    base.update(spec)
    base = {k: v for k, v in base.items() if v is not None}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "workload"},
        "spec": base,
    }


def cpg(name: str, *children: dict[str, Any], leaves: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "schedulingPolicy": {"gang": {"minGroupCount": 1}}}
    if children:
        out["compositePodGroupTemplates"] = list(children)
    if leaves:
        out["podGroupTemplates"] = [{"name": n, "schedulingPolicy": {"gang": {"minCount": 1}}} for n in leaves]
    return out


WORKLOAD_CASES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("basic and gang policies", {}, set()),
    ("no controllerRef", {"controllerRef": None}, set()),
    (
        "composite pod group template has no children",
        {"podGroupTemplates": None, "compositePodGroupTemplates": [cpg("main")]},
        {("spec.compositePodGroupTemplates[0]", "FieldValueInvalid")},
    ),
    (
        "composite pod group template nested child has no children",
        {"podGroupTemplates": None, "compositePodGroupTemplates": [cpg("main", cpg("sub"))]},
        {("spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0]", "FieldValueInvalid")},
    ),
    (
        "duplicate names deep in tree",
        {"podGroupTemplates": None, "compositePodGroupTemplates": [cpg("main", cpg("main", leaves=("leaf",)))]},
        {("spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].name", "FieldValueDuplicate")},
    ),
    (
        "duplicate names in tree",
        {
            "podGroupTemplates": None,
            "compositePodGroupTemplates": [cpg("cpg1", cpg("cpg2", leaves=("group1",)), leaves=("group1",))],
        },
        {
            (
                "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].name",
                "FieldValueDuplicate",
            )
        },
    ),
    (
        "exceeds max tree height",
        {
            "podGroupTemplates": None,
            "compositePodGroupTemplates": [cpg("cpg1", cpg("cpg2", cpg("cpg3", cpg("cpg4", leaves=("leaf",)))))],
        },
        {("spec.compositePodGroupTemplates[0]", "FieldValueInvalid")},
    ),
    (
        "neither podGroupTemplates nor compositePodGroupTemplates",
        {"podGroupTemplates": None},
        {("spec", "FieldValueInvalid")},
    ),
    (
        "both podGroupTemplates and compositePodGroupTemplates",
        {"compositePodGroupTemplates": [cpg("main", leaves=("leaf",))]},
        {("spec", "FieldValueInvalid")},
    ),
    (
        "too many podGroupTemplates",
        {"podGroupTemplates": [{"name": f"g{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)]},
        {("spec.podGroupTemplates", "FieldValueTooMany")},
    ),
    (
        "multiple priority configurations",
        {
            "podGroupTemplates": [
                {"name": "a", "schedulingPolicy": {"basic": {}}, "priority": 1},
                {"name": "b", "schedulingPolicy": {"basic": {}}, "priority": 2},
            ]
        },
        {("spec", "FieldValueInvalid")},
    ),
    (
        "controllerRef kind with a slash",
        {"controllerRef": {"kind": "a/b", "name": "baz"}},
        {("spec.controllerRef.kind", "FieldValueInvalid")},
    ),
]


@pytest.mark.parametrize(("name", "spec", "expected"), WORKLOAD_CASES, ids=[c[0] for c in WORKLOAD_CASES])
async def test_validate_workload(apiserver: ApiServer, name: str, spec: dict[str, Any], expected: set[Any]) -> None:
    """TestValidateWorkload (validation_test.go) and WorkloadSpec's declarative tags, over HTTP."""
    status, body = await call(apiserver, "POST", WLS, mk_workload(**spec))
    if not expected:
        assert status == 201, body
        assert "status" not in body  # a Workload has no status
        return
    assert status == 422, body
    assert expected <= causes(body), body


async def test_validate_workload_update(apiserver: ApiServer) -> None:
    """TestValidateWorkloadUpdate "no change"; NoAddItem / NoRemoveItem; controllerRef immutable; a template's
    gang minCount may change, its topology may not."""
    status, created = await call(apiserver, "POST", WLS, mk_workload())
    assert status == 201, created
    same = copy.deepcopy(created)
    status, body = await call(apiserver, "PUT", f"{WLS}/workload", same)
    assert status == 200, body
    scaled = copy.deepcopy(body)
    scaled["spec"]["podGroupTemplates"][1]["schedulingPolicy"]["gang"]["minCount"] = 5
    status, body = await call(apiserver, "PUT", f"{WLS}/workload", scaled)
    assert status == 200, body
    changes: tuple[tuple[Callable[[dict[str, Any]], Any], str], ...] = (
        (
            lambda s: s["podGroupTemplates"].append({"name": "g3", "schedulingPolicy": {"basic": {}}}),
            "spec.podGroupTemplates",
        ),
        (lambda s: s["podGroupTemplates"].pop(), "spec.podGroupTemplates"),
        (lambda s: s.update(controllerRef={"kind": "Job", "name": "other"}), "spec.controllerRef"),
        (
            lambda s: s["podGroupTemplates"][0].update(schedulingConstraints=None),
            "spec.podGroupTemplates[0].schedulingConstraints",
        ),
    )
    for change, expected in changes:
        new = copy.deepcopy(body)
        change(new["spec"])
        status, answer = await call(apiserver, "PUT", f"{WLS}/workload", new)
        assert status == 422, answer
        assert expected in {f for f, _ in causes(answer)}, answer


def mk_cpg(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "workloadRef": {"workloadName": "workload", "templateName": "main"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
    }
    base.update(spec)
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "root"},
        "spec": base,
    }


async def test_composite_pod_group(apiserver: ApiServer) -> None:
    """CompositePodGroupSpec's tags: minGroupCount >= 1, workloadRef required, the whole spec immutable; status
    conditions through /status."""
    status, body = await call(apiserver, "POST", CPGS, mk_cpg(schedulingPolicy={"gang": {"minGroupCount": 0}}))
    assert status == 422 and ("spec.schedulingPolicy.gang.minGroupCount", "FieldValueRequired") in causes(body), body
    no_ref = mk_cpg()
    del no_ref["spec"]["workloadRef"]
    status, body = await call(apiserver, "POST", CPGS, no_ref)
    assert status == 422 and ("spec.workloadRef", "FieldValueRequired") in causes(body), body
    status, created = await call(apiserver, "POST", CPGS, mk_cpg())
    assert status == 201, created
    patch = {"spec": {"schedulingPolicy": {"gang": {"minGroupCount": 3}}}}
    status, body = await call(apiserver, "PATCH", f"{CPGS}/root", patch, "application/merge-patch+json")
    assert status == 422 and ("spec.schedulingPolicy", "FieldValueInvalid") in causes(body), body
    condition = {
        "type": "CompositePodGroupInitiallyScheduled",
        "status": "True",
        "reason": "Scheduled",
        "lastTransitionTime": "2026-11-27T00:00:00Z",
    }
    status, body = await call(
        apiserver,
        "PATCH",
        f"{CPGS}/root/status",
        {"status": {"conditions": [condition]}},
        "application/merge-patch+json",
    )
    assert status == 200 and body["status"]["conditions"][0]["type"] == condition["type"], body


async def test_pod_scheduling_group(apiserver: ApiServer) -> None:
    """spec.schedulingGroup: kept on create; podGroupName a DNS subdomain; `{}` names no member of the union;
    immutable (ValidatePodUpdate: not among the fields an update may change)."""
    status, body = await call(
        apiserver, "POST", PODS, pod_manifest("p", image="pause", schedulingGroup={"podGroupName": "train"})
    )
    assert status == 201 and body["spec"]["schedulingGroup"] == {"podGroupName": "train"}, body
    status, body = await call(
        apiserver, "POST", PODS, pod_manifest("q", image="pause", schedulingGroup={"podGroupName": "Train_1"})
    )
    assert status == 422 and ("spec.schedulingGroup.podGroupName", "FieldValueInvalid") in causes(body), body
    status, body = await call(apiserver, "POST", PODS, pod_manifest("r", image="pause", schedulingGroup={}))
    assert status == 422 and ("spec.schedulingGroup", "FieldValueInvalid") in causes(body), body
    for change in ({"podGroupName": "other"}, None):
        patch = {"spec": {"schedulingGroup": change}}
        status, body = await call(apiserver, "PATCH", f"{PODS}/p", patch, "application/merge-patch+json")
        assert status == 422 and "pod updates may not change fields" in body["message"], body
    status, body = await call(apiserver, "POST", PODS, pod_manifest("s", image="pause"))
    assert status == 201
    patch = {"spec": {"schedulingGroup": {"podGroupName": "late"}}}
    status, body = await call(apiserver, "PATCH", f"{PODS}/s", patch, "application/merge-patch+json")
    assert status == 422 and "pod updates may not change fields" in body["message"], body


async def test_discovery_and_version(apiserver: ApiServer) -> None:
    """/version is a 1.37 server; /apis lists scheduling.k8s.io v1 (preferred), v1beta1 and v1alpha3; the
    OpenAPI v3 index has their group-version documents."""
    status, version = await call(apiserver, "GET", "/version")
    assert status == 200 and version["minor"] == "37" and version["gitVersion"].startswith("v1.37.0")
    status, groups = await call(apiserver, "GET", "/apis")
    scheduling = next(g for g in groups["groups"] if g["name"] == "scheduling.k8s.io")
    assert [v["version"] for v in scheduling["versions"]] == ["v1", "v1beta1", "v1alpha3"]
    assert scheduling["preferredVersion"]["version"] == "v1"
    status, resources = await call(apiserver, "GET", "/apis/scheduling.k8s.io/v1beta1")
    assert {r["name"] for r in resources["resources"]} == {"workloads", "podgroups", "podgroups/status"}
    status, index = await call(apiserver, "GET", "/openapi/v3")
    assert {"apis/scheduling.k8s.io/v1beta1", "apis/scheduling.k8s.io/v1alpha3"} <= set(index["paths"])


@pytest.fixture
async def plain() -> AsyncIterator[ApiServer]:
    server = ApiServer(history_limit=100, gates=resolve("plain-1.37"))
    await server.start(host="127.0.0.1", port=0)
    try:
        yield server
    finally:
        await server.stop()


async def test_plain_profile_serves_none_of_it(plain: ApiServer) -> None:
    """A kube-apiserver 1.37 with default gates: no scheduling.k8s.io beta/alpha versions, and a pod's
    schedulingGroup is dropped on create (dropDisabledPodFields), not rejected."""
    status, groups = await call(plain, "GET", "/apis")
    scheduling = next(g for g in groups["groups"] if g["name"] == "scheduling.k8s.io")
    assert [v["version"] for v in scheduling["versions"]] == ["v1"]
    status, _ = await call(plain, "GET", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups")
    assert status == 404
    status, body = await call(
        plain, "POST", PODS, pod_manifest("p", image="pause", schedulingGroup={"podGroupName": "train"})
    )
    assert status == 201 and "schedulingGroup" not in body["spec"], body


async def test_feature_gates_override_a_profile() -> None:
    """--feature-gates on top of a profile, in kube-apiserver's `Name=bool` form."""
    gates = resolve("full", "CompositePodGroup=false")
    assert gates.enabled("GenericWorkload") and not gates.enabled("CompositePodGroup")
    assert resolve("plain-1.37", "GenericWorkload=true").enabled("GenericWorkload")
    with pytest.raises(ValueError, match="unrecognized feature gate: Nope"):
        resolve("full", "Nope=true")
    server = ApiServer(gates=gates)
    assert server.registry.resolve("scheduling.k8s.io", "v1alpha3", "compositepodgroups") is None
    assert server.registry.resolve("scheduling.k8s.io", "v1beta1", "podgroups") is not None
