"""scheduling.k8s.io/v1beta1 PodGroup as kube-apiserver 1.37 validates it, over HTTP (issue 25 item 1).

Sources (kubernetes/kubernetes):
- pkg/registry/scheduling/podgroup/declarative_validation_test.go TestDeclarativeValidate: the case names below are
  its names (the fields that survived into v1beta1: gang minCount, the basic|gang union, topology constraints,
  resource claims, priority).
- staging/src/k8s.io/api/scheduling/v1beta1/types.go PodGroupSpec, PodGroupSchedulingPolicy (`+k8s:unionMember`,
  basic `+k8s:immutable`, gang `+k8s:update=NoSet,NoUnset`), GangSchedulingPolicy.MinCount (`+k8s:required`,
  `+k8s:minimum=1`), PodGroupSchedulingConstraints.Topology (`+k8s:maxItems=1`), TopologyConstraint.Key
  (`+k8s:format=k8s-label-key`), PodGroupResourceClaim (k8s-short-name, union of the two sources), DisruptionMode
  (`+default={"single": {}}`), every other spec field `+k8s:immutable`.
- pkg/registry/scheduling/podgroup/strategy.go: PrepareForCreate clears status; PrepareForUpdate keeps the stored
  status; the status strategy keeps spec (metav1.ResetObjectMetaForStatus) and runs ValidatePodGroupStatusUpdate
  (pkg/apis/scheduling/validation/validation.go: metav1validation.ValidateConditions, resourceClaimStatuses names
  must match spec.resourceClaims).
- staging/src/k8s.io/apimachinery/pkg/api/validate update.go (NoSet: "field cannot be set once created", NoUnset:
  "field cannot be cleared once set") and immutable.go ("field is immutable").
"""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import pytest

from gangsched.sim.apiserver import ApiServer

PGS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"


async def call(server: ApiServer, method: str, path: str, body: Any = None, content_type: str | None = None) -> Any:
    headers = {"Content-Type": content_type} if content_type else None
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{server.url}{path}", json=body, headers=headers) as r,
    ):
        return r.status, await r.json()


def podgroup(name: str = "pg", **spec: Any) -> dict[str, Any]:
    """mkValidPodGroup: a gang of 1 unless the case says otherwise."""
    base: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 1}}}
    base.update(spec)
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name}, "spec": base}


def causes(body: dict[str, Any]) -> set[tuple[str, str]]:
    return {(c["field"], c["reason"]) for c in (body.get("details") or {}).get("causes") or []}


GANG0 = {"gang": {"minCount": 0}}
CASES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("valid", {}, set()),
    ("valid with basic policy", {"schedulingPolicy": {"basic": {}}}, set()),
    (
        "gang minCount zero",
        {"schedulingPolicy": GANG0},
        {("spec.schedulingPolicy.gang.minCount", "FieldValueRequired")},
    ),
    (
        "gang minCount negative",
        {"schedulingPolicy": {"gang": {"minCount": -1}}},
        {("spec.schedulingPolicy.gang.minCount", "FieldValueInvalid")},
    ),
    ("policy with neither basic nor gang", {"schedulingPolicy": {}}, {("spec.schedulingPolicy", "FieldValueInvalid")}),
    (
        "policy with both basic and gang",
        {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}},
        {("spec.schedulingPolicy", "FieldValueInvalid")},
    ),
    ("valid with schedulingConstraints", {"schedulingConstraints": {"topology": [{"key": "foo"}]}}, set()),
    (
        "schedulingConstraints with multiple topology constraints",
        {"schedulingConstraints": {"topology": [{"key": "foo"}, {"key": "bar"}]}},
        {("spec.schedulingConstraints.topology", "FieldValueTooMany")},
    ),
    ("valid with empty schedulingConstraints", {"schedulingConstraints": {}}, set()),
    (
        "topologyConstraint with empty topology key",
        {"schedulingConstraints": {"topology": [{"key": ""}]}},
        {("spec.schedulingConstraints.topology[0].key", "FieldValueRequired")},
    ),
    (
        "valid with topology key with DNS prefix",
        {"schedulingConstraints": {"topology": [{"key": "example.com/Foo"}]}},
        set(),
    ),
    (
        "valid with topology key with prefix with max length",
        {"schedulingConstraints": {"topology": [{"key": "a" * 253 + "/" + "b" * 63}]}},
        set(),
    ),
    (
        "with topology key with prefix exceending max prefix length",
        {"schedulingConstraints": {"topology": [{"key": "a" * 254 + "/foo"}]}},
        {("spec.schedulingConstraints.topology[0].key", "FieldValueInvalid")},
    ),
    (
        "with topology key with prefix exceending max name length",
        {"schedulingConstraints": {"topology": [{"key": "foo/" + "b" * 64}]}},
        {("spec.schedulingConstraints.topology[0].key", "FieldValueInvalid")},
    ),
    (
        "with topology key without prefix exceeding max length",
        {"schedulingConstraints": {"topology": [{"key": "b" * 64}]}},
        {("spec.schedulingConstraints.topology[0].key", "FieldValueInvalid")},
    ),
    (
        "with topology key with invalid characters",
        {"schedulingConstraints": {"topology": [{"key": "Example.com/Foo"}]}},
        {("spec.schedulingConstraints.topology[0].key", "FieldValueInvalid")},
    ),
    ("too high priority", {"priority": 1_000_000_001}, {("spec.priority", "FieldValueInvalid")}),
    ("valid negative priority", {"priority": -2147483648}, set()),
    (
        "invalid priority class name",
        {"priorityClassName": "high/priority"},
        {("spec.priorityClassName", "FieldValueInvalid")},
    ),
    (
        "ok resourceClaimName reference",
        {"resourceClaims": [{"name": "claim", "resourceClaimName": "resource-claim"}]},
        set(),
    ),
    (
        "ok resourceClaimTemplateName reference",
        {"resourceClaims": [{"name": "claim", "resourceClaimTemplateName": "resource-claim-template"}]},
        set(),
    ),
    (
        "claim name with path",
        {"resourceClaims": [{"name": "my/claim", "resourceClaimName": "resource-claim"}]},
        {("spec.resourceClaims[0].name", "FieldValueInvalid")},
    ),
    (
        "duplicate claim entries",
        {
            "resourceClaims": [
                {"name": "my-claim", "resourceClaimName": "resource-claim-1"},
                {"name": "my-claim", "resourceClaimName": "resource-claim-2"},
            ]
        },
        {("spec.resourceClaims[1]", "FieldValueDuplicate")},
    ),
    (
        "resource claim source empty",
        {"resourceClaims": [{"name": "my-claim"}]},
        {("spec.resourceClaims[0]", "FieldValueInvalid")},
    ),
    (
        "resource claim reference and template",
        {"resourceClaims": [{"name": "my-claim", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]},
        {("spec.resourceClaims[0]", "FieldValueInvalid")},
    ),
    (
        "disruption mode with both single and all",
        {"disruptionMode": {"single": {}, "all": {}}},
        {("spec.disruptionMode", "FieldValueInvalid")},
    ),
    (
        "invalid preemption policy",
        {"preemptionPolicy": "Sometimes"},
        {("spec.preemptionPolicy", "FieldValueNotSupported")},
    ),
    (
        "parent without workloadRef",
        {"parentCompositePodGroupName": "root"},
        {("spec.workloadRef", "FieldValueRequired")},
    ),
    (
        "workloadRef invalid template name",
        {"workloadRef": {"workloadName": "w", "templateName": "temp/late"}},
        {("spec.workloadRef.templateName", "FieldValueInvalid")},
    ),
]


@pytest.mark.parametrize(("name", "spec", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_declarative_validate(apiserver: ApiServer, name: str, spec: dict[str, Any], expected: set[Any]) -> None:
    """TestDeclarativeValidate (pkg/registry/scheduling/podgroup/declarative_validation_test.go), over HTTP."""
    status, body = await call(apiserver, "POST", PGS, podgroup(**spec))
    if not expected:
        assert status == 201, body
        return
    assert status == 422, body
    assert body["reason"] == "Invalid" and body["message"].startswith('PodGroup.scheduling.k8s.io "pg" is invalid')
    assert expected <= causes(body), body


async def test_create_defaults_disruption_mode_and_drops_status(apiserver: ApiServer) -> None:
    """`+default={"single": {}}` on disruptionMode; PrepareForCreate clears status."""
    body = podgroup()
    body["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]}
    status, created = await call(apiserver, "POST", PGS, body)
    assert status == 201, created
    assert created["spec"]["disruptionMode"] == {"single": {}}
    assert "status" not in created or not created["status"]


async def test_unknown_field_is_a_strict_decoding_error(apiserver: ApiServer) -> None:
    """The typed decoder of a built-in kind (create.go transformDecodeError), as for every built-in."""
    body = podgroup()
    body["spec"]["minMember"] = 3  # the CRD's field, not the native one
    status, answer = await call(apiserver, "POST", f"{PGS}?fieldValidation=Strict", body)
    assert status == 400, answer
    assert 'strict decoding error: unknown field "spec.minMember"' in answer["message"]


async def _create(server: ApiServer, **spec: Any) -> dict[str, Any]:
    status, created = await call(server, "POST", PGS, podgroup(**spec))
    assert status == 201, created
    return dict(created)


UPDATES: list[tuple[str, dict[str, Any], dict[str, Any], set[tuple[str, str]]]] = [
    ("gang minCount may change", {}, {"schedulingPolicy": {"gang": {"minCount": 4}}}, set()),
    (
        "gang to basic",
        {},
        {"schedulingPolicy": {"basic": {}}},
        {("spec.schedulingPolicy.gang", "FieldValueInvalid"), ("spec.schedulingPolicy.basic", "FieldValueInvalid")},
    ),
    (
        "basic to gang",
        {"schedulingPolicy": {"basic": {}}},
        {"schedulingPolicy": {"gang": {"minCount": 2}}},
        {("spec.schedulingPolicy.gang", "FieldValueInvalid"), ("spec.schedulingPolicy.basic", "FieldValueInvalid")},
    ),
    (
        "topology immutable",
        {},
        {"schedulingConstraints": {"topology": [{"key": "rack"}]}},
        {("spec.schedulingConstraints", "FieldValueInvalid")},
    ),
    ("disruptionMode immutable", {}, {"disruptionMode": {"all": {}}}, {("spec.disruptionMode", "FieldValueInvalid")}),
    ("priority immutable", {"priority": 5}, {"priority": 6}, {("spec.priority", "FieldValueInvalid")}),
    (
        "workloadRef immutable",
        {"workloadRef": {"workloadName": "w", "templateName": "t"}},
        {"workloadRef": {"workloadName": "w", "templateName": "u"}},
        {("spec.workloadRef", "FieldValueInvalid")},
    ),
]


@pytest.mark.parametrize(("name", "old", "change", "expected"), UPDATES, ids=[u[0] for u in UPDATES])
async def test_update_immutability(
    apiserver: ApiServer, name: str, old: dict[str, Any], change: dict[str, Any], expected: set[Any]
) -> None:
    """Every spec field `+k8s:immutable` but gang.minCount ("mutable to support workload scaling")."""
    created = await _create(apiserver, **old)
    new = copy.deepcopy(created)
    new["spec"].update(change)
    status, body = await call(apiserver, "PUT", f"{PGS}/pg", new)
    if not expected:
        assert status == 200, body
        assert body["spec"]["schedulingPolicy"] == change["schedulingPolicy"]
        assert body["metadata"]["generation"] == 2
        return
    assert status == 422, body
    assert expected <= causes(body), body


async def test_status_subresource(apiserver: ApiServer) -> None:
    """Status written through /status only (spec kept), conditions validated (ValidateConditions), the main
    resource keeps the stored status (PrepareForUpdate)."""
    await _create(apiserver)
    condition = {
        "type": "PodGroupInitiallyScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes are available",
        "lastTransitionTime": "2026-11-27T00:00:00Z",
    }
    patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": 9}}}, "status": {"conditions": [condition]}}
    status, body = await call(apiserver, "PATCH", f"{PGS}/pg/status", patch, "application/merge-patch+json")
    assert status == 200, body
    assert body["status"]["conditions"][0]["reason"] == "Unschedulable"
    assert body["spec"]["schedulingPolicy"]["gang"]["minCount"] == 1  # spec ignored on /status
    status, body = await call(
        apiserver, "PATCH", f"{PGS}/pg", {"status": {"conditions": []}}, "application/merge-patch+json"
    )
    assert status == 200 and body["status"]["conditions"][0]["type"] == "PodGroupInitiallyScheduled"
    bad = {"status": {"conditions": [dict(condition, status="Maybe", reason="")]}}
    status, body = await call(apiserver, "PATCH", f"{PGS}/pg/status", bad, "application/merge-patch+json")
    assert status == 422, body
    assert {
        ("status.conditions[0].status", "FieldValueNotSupported"),
        ("status.conditions[0].reason", "FieldValueRequired"),
    } <= causes(body)


async def test_resource_claim_statuses_must_name_a_claim(apiserver: ApiServer) -> None:
    """validatePodGroupResourceClaimStatuses: "must match the name of an entry in `spec.resourceClaims`"."""
    await _create(apiserver, resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": "t"}])
    ok = {"status": {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "pg-gpus-x7"}]}}
    status, body = await call(apiserver, "PATCH", f"{PGS}/pg/status", ok, "application/merge-patch+json")
    assert status == 200, body
    bad = {"status": {"resourceClaimStatuses": [{"name": "other"}]}}
    status, body = await call(apiserver, "PATCH", f"{PGS}/pg/status", bad, "application/merge-patch+json")
    assert status == 422 and ("status.resourceClaimStatuses[0].name", "FieldValueInvalid") in causes(body), body
