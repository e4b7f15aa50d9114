"""Built-in bodies are decoded as the real kube-apiserver decodes them (Kubernetes v1.32 schemas as data).

Sources: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go (transformDecodeError: a decode error is
400 `<Kind> in version "<v>" cannot be handled as a <Kind>: <error>`; strict decoding errors with
fieldValidation=Strict, warnings with Warn), sigs.k8s.io/json (case-sensitive decoding, strict unknown-field
paths such as `spec.containers[0].foo`), Go's encoding/json UnmarshalTypeError text,
staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/micro_time.go (MicroTime parses RFC3339Micro:
"2006-01-02T15:04:05.000000Z07:00"), pkg/apis/coordination/validation/validation.go (ValidateLeaseSpec),
staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go (ErrFormatWrong).
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from gangsched.sim.apiserver import ApiServer

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
PODS = "/api/v1/namespaces/default/pods"
MICRO = "2026-01-02T03:04:05.123456Z"


def _lease(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": spec}


async def _post(
    server: ApiServer, path: str, body: Any, *, params: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], Any]:
    async with aiohttp.ClientSession() as session, session.post(f"{server.url}{path}", json=body, params=params) as r:
        return r.status, await r.json(), r.headers


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"leaseDurationSeconds": "15"},
            "json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32",
            id="string-for-int32",
        ),
        pytest.param(
            {"leaseDurationSeconds": 3_000_000_000},
            "json: cannot unmarshal number 3000000000 into Go "
            "struct field LeaseSpec.spec.leaseDurationSeconds of type int32",
            id="int32-overflow",
        ),
        pytest.param(
            {"leaseDurationSeconds": 1.5},
            "json: cannot unmarshal number 1.5 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32",
            id="fraction",
        ),
        pytest.param(
            {"holderIdentity": 7},
            "json: cannot unmarshal number into Go struct field LeaseSpec.spec.holderIdentity of type string",
            id="number-for-string",
        ),
        pytest.param(
            {"renewTime": "2026-01-02T03:04:05Z"},
            'parsing time "2026-01-02T03:04:05Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
            id="microtime-no-fraction",
        ),
        pytest.param(
            {"acquireTime": "2026-01-02T03:04:05.123Z"}, 'cannot parse ".123Z" as ".000000"', id="microtime-millis"
        ),
    ],
)
async def test_lease_type_errors_are_400(apiserver: ApiServer, spec: dict[str, Any], message: str) -> None:
    status, body, _ = await _post(apiserver, LEASES, _lease(**spec))
    assert status == 400, body
    assert body["reason"] == "BadRequest"
    assert body["message"].startswith('Lease in version "v1" cannot be handled as a Lease: ')
    assert message in body["message"]


async def test_lease_with_microtime_and_nulls_is_accepted(apiserver: ApiServer) -> None:
    status, body, _ = await _post(
        apiserver,
        LEASES,
        _lease(holderIdentity="a", leaseDurationSeconds=15, renewTime=MICRO, acquireTime=MICRO, leaseTransitions=None),
    )
    assert status == 201, body
    assert body["spec"]["renewTime"] == MICRO


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param(
            {"leaseDurationSeconds": 0},
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            id="duration-zero",
        ),
        pytest.param(
            {"leaseTransitions": -1},
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            id="transitions-negative",
        ),
        pytest.param({"preferredHolder": "b"}, "spec.preferredHolder: Forbidden", id="preferred-without-strategy"),
        pytest.param({"strategy": "Newest"}, 'spec.strategy.strategy: Unsupported value: "Newest"', id="strategy"),
    ],
)
async def test_lease_validation_is_422(apiserver: ApiServer, spec: dict[str, Any], field: str) -> None:
    """ValidateLeaseSpec."""
    status, body, _ = await _post(apiserver, LEASES, _lease(**spec))
    assert status == 422, body
    assert field in body["message"]


@pytest.mark.parametrize(
    ("validation", "status", "warned"),
    [
        pytest.param("Strict", 400, False, id="strict"),
        pytest.param("Warn", 201, True, id="warn"),
        pytest.param("Ignore", 201, False, id="ignore"),
    ],
)
async def test_unknown_fields_by_field_validation(
    apiserver: ApiServer, validation: str, status: int, warned: bool
) -> None:
    """create.go: strict decoding errors are 400 under Strict, Warning headers under Warn, dropped under Ignore."""
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolice": "x"}], "bogus": 1},
    }
    got, body, headers = await _post(apiserver, PODS, pod, params={"fieldValidation": validation})
    assert got == status, body
    if status == 400:
        assert body["message"] == (
            'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
            'unknown field "spec.containers[0].imagePullPolice", unknown field "spec.bogus"'
        )
        return
    assert "bogus" not in body["spec"] and "imagePullPolice" not in body["spec"]["containers"][0]
    warning = headers.get("Warning", "")
    assert ('unknown field \\"spec.bogus\\"' in warning) is warned


@pytest.mark.parametrize(
    ("container", "message"),
    [
        pytest.param(
            {"name": "c", "image": "i", "ports": [{"containerPort": "80"}]},
            "json: cannot unmarshal string "
            "into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32",
            id="port",
        ),
        pytest.param(
            {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1x"}}},
            "quantities must match the regular expression",
            id="quantity",
        ),
        pytest.param(
            {"name": "c", "image": "i", "args": "run"},
            "json: cannot unmarshal string into Go struct field Container.spec.containers.args of type []string",
            id="string-for-list",
        ),
    ],
)
async def test_pod_type_errors_are_400(apiserver: ApiServer, container: dict[str, Any], message: str) -> None:
    status, body, _ = await _post(apiserver, PODS, {"metadata": {"name": "p"}, "spec": {"containers": [container]}})
    assert status == 400, body
    assert message in body["message"]


async def test_required_fields_of_the_schema_are_422(apiserver: ApiServer) -> None:
    """The definitions mark io.k8s.api.core.v1.Container `name` required (ValidateContainers: Required value)."""
    status, body, _ = await _post(
        apiserver,
        "/api/v1/namespaces/default/services",
        {"metadata": {"name": "s"}, "spec": {"ports": [{"name": "http"}]}},
    )
    assert status == 422, body
    assert "spec.ports[0].port: Required value" in body["message"]


async def test_patch_result_is_decoded_too(apiserver: ApiServer) -> None:
    """patch.go decodes the patched object: a merge patch that breaks a type is a 400."""
    status, body, _ = await _post(apiserver, LEASES, _lease(leaseDurationSeconds=15))
    assert status == 201, body
    async with (
        aiohttp.ClientSession() as session,
        session.patch(
            f"{apiserver.url}{LEASES}/l",
            data=b'{"spec":{"leaseDurationSeconds":"x"}}',
            headers={"Content-Type": "application/merge-patch+json"},
        ) as resp,
    ):
        assert resp.status == 400, await resp.text()


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/api/v1/resourcequotas", "ResourceQuotaList"),
        ("/api/v1/persistentvolumes", "PersistentVolumeList"),
        ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaimList"),
        ("/apis/storage.k8s.io/v1/storageclasses", "StorageClassList"),
        ("/apis/apps/v1/deployments", "DeploymentList"),
        ("/apis/batch/v1/jobs", "JobList"),
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", "ClusterRoleList"),
        ("/apis/rbac.authorization.k8s.io/v1/rolebindings", "RoleBindingList"),
        ("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "FlowSchemaList"),
        ("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", "PriorityLevelConfigurationList"),
    ],
)
async def test_typed_builtin_kinds_are_served(apiserver: ApiServer, path: str, kind: str) -> None:
    async with aiohttp.ClientSession() as session, session.get(f"{apiserver.url}{path}") as resp:
        body = await resp.json()
    assert resp.status == 200 and body["kind"] == kind


async def test_openapi_v3_carries_the_real_schemas(apiserver: ApiServer) -> None:
    """The served v3 document of coordination.k8s.io/v1 holds the real LeaseSpec (int32, MicroTime refs)."""
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{apiserver.url}/openapi/v3") as resp:
            root = await resp.json()
        url = root["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"]
        async with session.get(f"{apiserver.url}{url}") as resp:
            doc = await resp.json()
    schemas = doc["components"]["schemas"]
    spec = schemas["io.k8s.api.coordination.v1.LeaseSpec"]["properties"]
    assert spec["leaseDurationSeconds"] == {**spec["leaseDurationSeconds"], "type": "integer", "format": "int32"}
    assert spec["renewTime"]["$ref"] == "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas


async def test_status_is_not_held_to_the_required_markers(apiserver: ApiServer) -> None:
    """ValidatePodStatusUpdate (pkg/apis/core/validation/validation.go) does not require ContainerStatus.imageID,
    though the definition marks it +required; a status without it is accepted."""
    status, pod, _ = await _post(
        apiserver, PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    assert status == 201, pod
    pod["status"] = {
        "phase": "Running",
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "i"}],
    }
    async with aiohttp.ClientSession() as session, session.put(f"{apiserver.url}{PODS}/p/status", json=pod) as resp:
        assert resp.status == 200, await resp.text()
