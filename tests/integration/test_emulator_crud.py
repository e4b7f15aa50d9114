"""Emulator CRUD semantics over real HTTP: uid/generation/resourceVersion, optimistic concurrency, Status bodies,
generateName, namespaces, dryRun, pod admission (defaults, priority from PriorityClass), with the project's
KubeClient and with kubernetes_asyncio (unmodified)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.rest import ApiException

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.apiserver import ApiServer
from tests.builders import pod_manifest

PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"


async def raw(
    server: ApiServer, method: str, path: str, body: Any = None, **headers: str
) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session:
        data = orjson.dumps(body) if body is not None else None
        async with session.request(method, server.url + path, data=data, headers=headers or None) as resp:
            return resp.status, orjson.loads(await resp.read())


async def test_create_sets_identity_generation_and_global_resource_version(kube: KubeClient) -> None:
    a = await kube.create(CMS, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    b = await kube.create(CMS, {"metadata": {"name": "b"}})
    assert a["metadata"]["uid"] and a["metadata"]["uid"] != b["metadata"]["uid"]
    assert a["metadata"]["creationTimestamp"].endswith("Z")
    assert a["metadata"]["generation"] == 1
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    assert a["kind"] == "ConfigMap" and a["apiVersion"] == "v1"
    got = await kube.get(f"{CMS}/a")
    assert got == a


async def test_generation_bumps_on_spec_change_only(kube: KubeClient) -> None:
    created = await kube.create(PODS, pod_manifest("p", typed=False))
    labelled = await kube.patch(f"{PODS}/p", {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 1
    assert int(labelled["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    changed = await kube.patch(f"{PODS}/p", {"spec": {"activeDeadlineSeconds": 30}})
    assert changed["metadata"]["generation"] == 2


async def test_noop_update_keeps_resource_version(kube: KubeClient) -> None:
    created = await kube.create(CMS, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    same = await kube.patch(f"{CMS}/a", {"data": {"k": "v"}})
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_stale_resource_version_is_409_conflict(kube: KubeClient) -> None:
    created = await kube.create(CMS, {"metadata": {"name": "a"}, "data": {"k": "1"}})
    first = dict(created, data={"k": "2"})
    await kube.replace(f"{CMS}/a", first)
    stale = dict(created, data={"k": "3"})
    with pytest.raises(ApiError) as err:
        await kube.replace(f"{CMS}/a", stale)
    assert err.value.status == 409 and err.value.reason == "Conflict"
    assert "the object has been modified" in err.value.message
    with pytest.raises(ApiError) as err:
        await kube.patch(
            f"{CMS}/a", {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"k": "4"}}
        )
    assert err.value.status == 409
    assert (await kube.get(f"{CMS}/a"))["data"] == {"k": "2"}


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason", "needle"),
    [
        pytest.param(
            "GET", f"{CMS}/missing", None, 404, "NotFound", 'configmaps "missing" not found', id="get-missing"
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/nope/configmaps",
            {"metadata": {"name": "a"}},
            404,
            "NotFound",
            'namespaces "nope" not found',
            id="namespace-missing",
        ),
        pytest.param("POST", CMS, {"metadata": {"name": "Bad_Name"}}, 422, "Invalid", "metadata.name", id="bad-name"),
        pytest.param("POST", CMS, {"metadata": {}}, 422, "Invalid", "name or generateName is required", id="no-name"),
        pytest.param(
            "POST",
            PODS,
            {"metadata": {"name": "p"}, "spec": {"containers": []}},
            422,
            "Invalid",
            "spec.containers",
            id="pod-without-containers",
        ),
        pytest.param("POST", CMS, [1, 2], 400, "BadRequest", "JSON object", id="not-an-object"),
        pytest.param(
            "POST", CMS, {"kind": "Pod", "metadata": {"name": "a"}}, 400, "BadRequest", "kind", id="wrong-kind"
        ),
        pytest.param(
            "GET", "/api/v1/namespaces/default/nothings", None, 404, "NotFound", "could not find", id="unknown-resource"
        ),
        pytest.param(
            "GET", f"{CMS}?labelSelector=a%20in%20(", None, 400, "BadRequest", "labelSelector", id="bad-selector"
        ),
    ],
)
async def test_errors_are_kubernetes_status_bodies(
    apiserver: ApiServer, method: str, path: str, body: Any, code: int, reason: str, needle: str
) -> None:
    status, doc = await raw(
        apiserver, method, path, body, **({"Content-Type": "application/json"} if body is not None else {})
    )
    assert status == code
    assert doc["kind"] == "Status" and doc["apiVersion"] == "v1" and doc["status"] == "Failure"
    assert doc["code"] == code and doc["reason"] == reason
    assert needle in doc["message"]


async def test_already_exists_names_the_object(apiserver: ApiServer, kube: KubeClient) -> None:
    await kube.create(CMS, {"metadata": {"name": "a"}})
    status, doc = await raw(apiserver, "POST", CMS, {"metadata": {"name": "a"}}, **{"Content-Type": "application/json"})
    assert (status, doc["reason"]) == (409, "AlreadyExists")
    assert doc["details"] == {"name": "a", "group": "", "kind": "configmaps"}


async def test_generate_name(kube: KubeClient) -> None:
    a = await kube.create(CMS, {"metadata": {"generateName": "job-"}})
    b = await kube.create(CMS, {"metadata": {"generateName": "job-"}})
    assert a["metadata"]["name"].startswith("job-") and len(a["metadata"]["name"]) == len("job-") + 5
    assert a["metadata"]["name"] != b["metadata"]["name"]


async def test_dry_run_does_not_store(kube: KubeClient) -> None:
    created = await kube.create(CMS, {"metadata": {"name": "a"}}, params={"dryRun": "All"})
    assert created["metadata"]["name"] == "a"
    with pytest.raises(ApiError) as err:
        await kube.get(f"{CMS}/a")
    assert err.value.status == 404


async def test_initial_namespaces_exist_and_namespace_deletion_removes_content(kube: KubeClient) -> None:
    names = {ns["metadata"]["name"] for ns in (await kube.get("/api/v1/namespaces"))["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
    await kube.create("/api/v1/namespaces", {"metadata": {"name": "team"}})
    await kube.create("/api/v1/namespaces/team/configmaps", {"metadata": {"name": "c"}})
    await kube.delete("/api/v1/namespaces/team")
    with pytest.raises(ApiError) as err:
        await kube.get("/api/v1/namespaces/team/configmaps/c")
    assert err.value.status == 404


@pytest.mark.parametrize(
    ("classes", "pod_spec", "priority", "class_name", "policy"),
    [
        pytest.param([], {}, 0, None, "PreemptLowerPriority", id="no-class"),
        pytest.param(
            [("high", 1000, False, None)],
            {"priorityClassName": "high"},
            1000,
            "high",
            "PreemptLowerPriority",
            id="named-class",
        ),
        pytest.param([("dflt", 7, True, "Never")], {}, 7, "dflt", "Never", id="global-default"),
        pytest.param([("low", 5, False, "Never")], {"priorityClassName": "low"}, 5, "low", "Never", id="class-policy"),
        pytest.param(
            [],
            {"priorityClassName": "system-node-critical"},
            2000001000,
            "system-node-critical",
            "PreemptLowerPriority",
            id="system-class",
        ),
    ],
)
async def test_pod_priority_from_priority_class(
    kube: KubeClient,
    classes: list[tuple[str, int, bool, str | None]],
    pod_spec: dict[str, Any],
    priority: int,
    class_name: str | None,
    policy: str,
) -> None:
    for name, value, default, preemption in classes:
        body: dict[str, Any] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
        if preemption:
            body["preemptionPolicy"] = preemption
        await kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", body)
    created = await kube.create(PODS, pod_manifest("p", typed=False, **pod_spec))
    spec = created["spec"]
    assert spec["priority"] == priority
    assert spec.get("priorityClassName") == class_name
    assert spec["preemptionPolicy"] == policy
    assert spec["schedulerName"] == "default-scheduler"
    assert created["status"]["phase"] == "Pending"


async def test_pod_with_unknown_priority_class_is_forbidden(kube: KubeClient) -> None:
    with pytest.raises(ApiError) as err:
        await kube.create(PODS, pod_manifest("p", typed=False, priorityClassName="nope"))
    assert err.value.status == 403 and err.value.reason == "Forbidden"
    assert "no PriorityClass with name nope was found" in err.value.message


async def test_kubernetes_asyncio_crud(kubeconfig: Path) -> None:
    cfg = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    async with k8s.ApiClient(cfg) as api_client:
        core = k8s.CoreV1Api(api_client)
        created = await core.create_namespaced_config_map(
            "default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="cm", labels={"a": "b"}), data={"x": "1"})
        )
        assert created.metadata.uid and created.data == {"x": "1"}
        listed = await core.list_namespaced_config_map("default", label_selector="a=b")
        assert [c.metadata.name for c in listed.items] == ["cm"]
        created.data = {"x": "2"}
        replaced = await core.replace_namespaced_config_map("cm", "default", created)
        assert replaced.data == {"x": "2"}
        with pytest.raises(ApiException) as err:
            await core.replace_namespaced_config_map("cm", "default", created)  # stale resourceVersion
        assert err.value.status == 409
        patched = await core.patch_namespaced_config_map("cm", "default", {"data": {"y": "3"}})
        assert patched.data == {"x": "2", "y": "3"}
        await core.delete_namespaced_config_map("cm", "default")
        with pytest.raises(ApiException) as err:
            await core.read_namespaced_config_map("cm", "default")
        assert err.value.status == 404
        p = await core.create_namespaced_pod(
            "default",
            k8s.V1Pod(
                metadata=k8s.V1ObjectMeta(name="p"),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="i")]),
            ),
        )
        assert p.spec.scheduler_name == "default-scheduler" and p.status.phase == "Pending"
