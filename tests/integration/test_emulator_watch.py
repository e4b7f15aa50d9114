"""Emulator list and watch over real HTTP: label/field selectors, limit/continue, watch from "0", resume from a
resourceVersion, 410 Expired, bookmarks, timeoutSeconds, selector transitions, slow-watcher overflow, and
kubernetes_asyncio's Watch."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.apiserver import ApiServer
from gangsched.sim.disruption import StoreTap
from gangsched.sim.request import RequestContext
from tests.builders import pod_manifest
from tests.integration.harness import append_all

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


async def seed_pods(kube: KubeClient) -> None:
    await kube.create("/api/v1/namespaces", {"metadata": {"name": "other"}})
    await kube.create(PODS, pod_manifest("a", labels={"app": "web", "tier": "front"}, image="i", typed=False))
    await kube.create(
        PODS,
        pod_manifest("b", labels={"app": "web", "tier": "back"}, image="i", typed=False, schedulerName="gangsched"),
    )
    await kube.create(PODS, pod_manifest("c", labels={"app": "db"}, image="i", typed=False))
    await kube.create(
        "/api/v1/namespaces/other/pods",
        pod_manifest("d", labels={"app": "web"}, image="i", typed=False, schedulerName="gangsched"),
    )
    await kube.create(f"{PODS}/a/binding", {"metadata": {"name": "a"}, "target": {"name": "node-1"}})


@pytest.mark.parametrize(
    ("path", "params", "expected"),
    [
        pytest.param(PODS, {"labelSelector": "app=web"}, ["a", "b"], id="eq"),
        pytest.param(PODS, {"labelSelector": "app==web"}, ["a", "b"], id="double-eq"),
        pytest.param(PODS, {"labelSelector": "app!=web"}, ["c"], id="neq"),
        pytest.param(PODS, {"labelSelector": "tier in (front,side)"}, ["a"], id="in"),
        pytest.param(PODS, {"labelSelector": "tier notin (front)"}, ["b", "c"], id="notin-includes-absent"),
        pytest.param(PODS, {"labelSelector": "tier"}, ["a", "b"], id="exists"),
        pytest.param(PODS, {"labelSelector": "!tier"}, ["c"], id="not-exists"),
        pytest.param(PODS, {"labelSelector": "app=web,tier=back"}, ["b"], id="and"),
        pytest.param("/api/v1/pods", {"labelSelector": "app=web"}, ["a", "b", "d"], id="cluster-wide"),
        pytest.param("/api/v1/pods", {"fieldSelector": "spec.schedulerName=gangsched"}, ["b", "d"], id="scheduler"),
        pytest.param("/api/v1/pods", {"fieldSelector": "metadata.namespace=other"}, ["d"], id="namespace"),
        pytest.param(PODS, {"fieldSelector": "metadata.name=c"}, ["c"], id="name"),
        pytest.param(PODS, {"fieldSelector": "spec.nodeName=node-1"}, ["a"], id="node"),
        pytest.param(PODS, {"fieldSelector": "spec.nodeName="}, ["b", "c"], id="unbound"),
        pytest.param(PODS, {"fieldSelector": "spec.nodeName!="}, ["a"], id="bound"),
        pytest.param(
            PODS, {"fieldSelector": "status.phase==Pending,metadata.name!=a"}, ["b", "c"], id="phase-and-name"
        ),
        pytest.param(PODS, {"fieldSelector": "status.phase=Running"}, [], id="no-match"),
    ],
)
async def test_list_selectors(kube: KubeClient, path: str, params: dict[str, str], expected: list[str]) -> None:
    await seed_pods(kube)
    result = await kube.get(path, params=params)
    assert result["kind"] == "PodList"
    assert sorted(p["metadata"]["name"] for p in result["items"]) == expected


async def test_limit_and_continue_pages_through_everything_once(kube: KubeClient) -> None:
    for i in range(7):
        await kube.create(CMS, {"metadata": {"name": f"cm-{i}"}})
    first = await kube.get(CMS, params={"limit": "3"})
    assert len(first["items"]) == 3 and first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 4
    await kube.create(CMS, {"metadata": {"name": "cm-0a"}})  # sorts before the next page's start: not seen
    names = [c["metadata"]["name"] for c in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        page = await kube.get(CMS, params={"limit": "3", "continue": token})
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [c["metadata"]["name"] for c in page["items"]]
        token = page["metadata"].get("continue")
    assert names == [f"cm-{i}" for i in range(7)]
    items, _ = await kube.list_all(CMS, page=2)
    assert len(items) == 8
    with pytest.raises(ApiError) as err:
        await kube.get(CMS, params={"limit": "3", "continue": "garbage!"})
    assert err.value.status == 400


async def watchers_registered(server: ApiServer, count: int = 1) -> None:
    """Poll (with a deadline) until the server has `count` live watchers, so later writes are streamed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while len([w for w in server.store.all_watchers() if not isinstance(w, StoreTap)]) < count:  # (not controllers')
        assert loop.time() < deadline, "the watch was never registered"
        await asyncio.sleep(0.005)


async def collect(
    kube: KubeClient, path: str, *, rv: str, until: int, timeout: int = 5, **params: str
) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []

    async def run() -> None:
        async for event in kube.watch(path, resource_version=rv, timeout_seconds=timeout, params=params):
            if event[0] != "BOOKMARK":
                events.append(event)
            if len(events) >= until:
                return

    await asyncio.wait_for(run(), timeout + 5)
    return events


async def test_watch_from_zero_lists_then_streams(apiserver: ApiServer, kube: KubeClient) -> None:
    await kube.create(CMS, {"metadata": {"name": "a"}})
    task = asyncio.create_task(collect(kube, CMS, rv="0", until=4))
    await watchers_registered(apiserver)
    await kube.create(CMS, {"metadata": {"name": "b"}})
    await kube.patch(f"{CMS}/b", {"data": {"k": "v"}})
    await kube.delete(f"{CMS}/a")
    events_seen = await task
    assert [(t, o["metadata"]["name"]) for t, o in events_seen] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "b"),
        ("DELETED", "a"),
    ]
    rvs = [int(o["metadata"]["resourceVersion"]) for _, o in events_seen[1:]]
    assert rvs == sorted(rvs)


async def test_watch_resumes_after_resource_version(kube: KubeClient) -> None:
    a = await kube.create(CMS, {"metadata": {"name": "a"}})
    await kube.create(CMS, {"metadata": {"name": "b"}})
    await kube.patch(f"{CMS}/a", {"data": {"x": "1"}})
    events = await collect(kube, CMS, rv=a["metadata"]["resourceVersion"], until=2)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "b"), ("MODIFIED", "a")]


async def test_watch_too_old_resource_version_is_410_error_event(kubeconfig: Path) -> None:
    server = ApiServer(history_limit=3)
    await server.start()
    try:
        async with await KubeClient.connect(str(server.write_kubeconfig(kubeconfig.parent / "small"))) as kube:
            first = await kube.create(CMS, {"metadata": {"name": "a"}})
            for i in range(5):
                await kube.patch(f"{CMS}/a", {"data": {"i": str(i)}})
            with pytest.raises(ApiError) as err:
                await collect(kube, CMS, rv=first["metadata"]["resourceVersion"], until=1)
            assert err.value.status == 410 and err.value.reason == "Expired"
            assert "too old resource version" in err.value.message
            latest = (await kube.get(CMS))["metadata"]["resourceVersion"]
            await kube.patch(f"{CMS}/a", {"data": {"i": "last"}})
            events = await collect(kube, CMS, rv=latest, until=1)
            assert events[0][1]["data"] == {"i": "last"}
    finally:
        await server.stop()


@pytest.mark.looptime  # the server's timeoutSeconds and bookmark timer on virtual time
async def test_bookmarks_and_timeout(kube: KubeClient) -> None:
    created = await kube.create(CMS, {"metadata": {"name": "a"}})
    kinds: list[str] = []
    bookmark_rvs: list[str] = []
    async for kind, obj in kube.watch(CMS, resource_version=created["metadata"]["resourceVersion"], timeout_seconds=1):
        kinds.append(kind)
        if kind == "BOOKMARK":
            bookmark_rvs.append(obj["metadata"]["resourceVersion"])
            assert obj["kind"] == "ConfigMap"
    # the stream ended by itself (timeoutSeconds) and its last event is a bookmark
    assert kinds and kinds[-1] == "BOOKMARK"
    assert int(bookmark_rvs[-1]) >= int(created["metadata"]["resourceVersion"])


async def test_watch_selector_transitions(apiserver: ApiServer, kube: KubeClient) -> None:
    await kube.create(CMS, {"metadata": {"name": "a", "labels": {"team": "x"}}})
    task = asyncio.create_task(collect(kube, CMS, rv="0", until=3, labelSelector="team=x"))
    await watchers_registered(apiserver)
    await kube.create(CMS, {"metadata": {"name": "other", "labels": {"team": "y"}}})
    await kube.patch(f"{CMS}/a", {"metadata": {"labels": {"team": "y"}}})  # leaves the selection
    await kube.patch(f"{CMS}/other", {"metadata": {"labels": {"team": "x"}}})  # enters it
    events = await task
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "other")]


async def test_namespaced_watch_ignores_other_namespaces(apiserver: ApiServer, kube: KubeClient) -> None:
    await kube.create("/api/v1/namespaces", {"metadata": {"name": "other"}})
    task = asyncio.create_task(collect(kube, CMS, rv="0", until=1))
    await watchers_registered(apiserver)
    await kube.create("/api/v1/namespaces/other/configmaps", {"metadata": {"name": "elsewhere"}})
    await kube.create(CMS, {"metadata": {"name": "here"}})
    events = await task
    assert [o["metadata"]["name"] for _, o in events] == ["here"]


async def test_slow_watcher_overflow_is_closed_with_410(kubeconfig: Path) -> None:
    server = ApiServer(watch_queue_limit=5)
    await server.start()
    try:
        async with await KubeClient.connect(str(server.write_kubeconfig(kubeconfig.parent / "q"))) as kube:
            rv = (await kube.get(CMS))["metadata"]["resourceVersion"]
            stream = kube.watch(CMS, resource_version=rv, timeout_seconds=10)
            first = asyncio.ensure_future(stream.__anext__())
            # once the watcher is registered, write more than its queue holds in one event-loop step
            await watchers_registered(server)
            cm_type = server.registry.types[("", "v1", "configmaps")]
            for i in range(20):
                server.registry.create(cm_type, "default", {"metadata": {"name": f"c{i}"}}, RequestContext())
            seen = [await first]
            with pytest.raises(ApiError) as err:
                await append_all(stream, seen)
            assert err.value.status == 410
            assert len(seen) == 5
    finally:
        await server.stop()


async def test_kubernetes_asyncio_watch(kubeconfig: Path, kube: KubeClient) -> None:
    cfg = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    await kube.create(CMS, {"metadata": {"name": "a"}})
    async with k8s.ApiClient(cfg) as api_client:
        core = k8s.CoreV1Api(api_client)
        listed = await core.list_namespaced_config_map("default")
        w = k8s_watch.Watch()
        seen: list[tuple[str, str]] = []

        async def writer() -> None:
            await kube.create(CMS, {"metadata": {"name": "b"}})
            await kube.delete(f"{CMS}/a")

        task = asyncio.create_task(writer())
        async with w.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=5,
        ) as stream:
            async for event in stream:
                seen.append((event["type"], event["object"].metadata.name))
                if len(seen) == 2:
                    break
        await task
        assert seen == [("ADDED", "b"), ("DELETED", "a")]
