"""List and watch consistency, as kube-apiserver's storage layer serves them.

Oracles:
- test/integration/apiserver/apiserver_test.go TestAPIListChunking: every page of a paginated list comes from the
  first page's snapshot (an object created between pages is not listed; the list's resourceVersion is the first
  page's); TestListOptions / testListOptionsCase: the resourceVersionMatch rules and messages, "The resourceVersion
  for the provided list is too old", "specifying resource version is not allowed when using continue";
- staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion/validation/validation.go ValidateListOptions;
- staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go: a continue token older than the compacted revision is
  410 Expired ("The provided continue parameter is too old ...") and the Status carries a token that continues
  inconsistently; watches from a compacted revision get 410 Gone (etcd compacts by time: the apiserver's
  --etcd-compaction-interval, 5 minutes by default).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.apiserver import ApiServer

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str, value: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"v": value}}


def names(result: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in result["items"]]


async def test_pages_of_a_list_come_from_the_first_pages_snapshot(kube: KubeClient) -> None:
    for name in ("test-0", "test-1", "test-2", "test-3"):
        await kube.create(CMS, cm(name))
    first = await kube.get(CMS, params={"limit": "1"})
    list_rv = first["metadata"]["resourceVersion"]
    await kube.create(CMS, cm("test-5"))  # created after the first page
    await kube.patch(f"{CMS}/test-2", {"data": {"v": "changed"}})  # modified after it
    await kube.delete(f"{CMS}/test-3")  # deleted after it
    seen = names(first)
    values = {}
    token = first["metadata"]["continue"]
    while token:
        page = await kube.get(CMS, params={"limit": "1", "continue": token})
        assert page["metadata"]["resourceVersion"] == list_rv
        seen += names(page)
        values.update({i["metadata"]["name"]: i["data"]["v"] for i in page["items"]})
        token = page["metadata"].get("continue")
    assert seen == ["test-0", "test-1", "test-2", "test-3"]
    assert values["test-2"] == "1"  # as it was at the list's resourceVersion


async def test_a_continue_token_older_than_the_history_expires_with_an_inconsistent_token(tmp_path: Any) -> None:
    server = ApiServer(history_limit=3)
    await server.start()
    try:
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "kc"))) as kube:
            for name in ("a", "b", "c"):
                await kube.create(CMS, cm(name))
            first = await kube.get(CMS, params={"limit": "1"})
            for i in range(5):  # more writes than the history holds: the first page's snapshot is compacted away
                await kube.patch(f"{CMS}/b", {"data": {"v": str(i)}})
            with pytest.raises(ApiError) as caught:
                await kube.get(CMS, params={"limit": "1", "continue": first["metadata"]["continue"]})
            assert (caught.value.status, caught.value.reason) == (410, "Expired")
            assert "too old to display a consistent list result" in caught.value.message
            raw = await _raw_get(kube, CMS, {"limit": "1", "continue": first["metadata"]["continue"]})
            inconsistent = raw["metadata"]["continue"]
            rest = await kube.get(CMS, params={"continue": inconsistent})
            assert names(rest) == ["b", "c"]
            assert rest["items"][0]["data"]["v"] == "4"  # continued from the current state
    finally:
        await server.stop()


async def _raw_get(kube: KubeClient, path: str, params: dict[str, str]) -> dict[str, Any]:
    """The Status body of a failing GET (the client raises on it; the body is what a pager reads)."""
    async with kube._session.get(path, params=params) as response:
        result: dict[str, Any] = await response.json()
        return result


@pytest.mark.looptime  # the watch's timeoutSeconds on virtual time
async def test_watch_history_is_bounded_by_time(tmp_path: Any) -> None:
    now = [1000.0]
    server = ApiServer(history_seconds=300.0)
    server.store.clock = lambda: now[0]
    await server.start()
    try:
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "kc"))) as kube:
            old = (await kube.create(CMS, cm("a")))["metadata"]["resourceVersion"]
            now[0] += 301.0  # the first write is older than the retained history once another write comes
            latest = (await kube.create(CMS, cm("b")))["metadata"]["resourceVersion"]
            with pytest.raises(ApiError) as caught:  # from before "a": its ADDED event is no longer retained
                async for _ in kube.watch(CMS, resource_version=str(int(old) - 1), timeout_seconds=1):
                    pass
            assert caught.value.status == 410
            seen = []
            async for kind, obj in kube.watch(CMS, resource_version=str(int(latest) - 1), timeout_seconds=1):
                if kind != "BOOKMARK":
                    seen.append((kind, obj["metadata"]["name"]))
            assert seen == [("ADDED", "b")]
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param(
            {"resourceVersionMatch": "Exact"},
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
            id="match-without-rv",
        ),
        pytest.param(
            {"resourceVersionMatch": "NotARealMatch"},
            'Unsupported value: "NotARealMatch": supported values: "Exact", "NotOlderThan", ""',
            id="unsupported",
        ),
        pytest.param(
            {"resourceVersion": "0", "resourceVersionMatch": "Exact"},
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
            id="exact-zero",
        ),
        pytest.param(
            {"resourceVersion": "1", "resourceVersionMatch": "Exact", "continue": "x"},
            "resourceVersionMatch is forbidden when continue is provided",
            id="match-with-continue",
        ),
    ],
)
async def test_list_options_validation(kube: KubeClient, params: dict[str, str], message: str) -> None:
    with pytest.raises(ApiError) as caught:
        await kube.get(CMS, params=params)
    assert caught.value.status == 422
    assert message in caught.value.message
    assert caught.value.message.startswith('ListOptions.meta.k8s.io "" is invalid: ')


@pytest.mark.looptime  # the 3 s wait for a too-large resourceVersion on virtual time
async def test_exact_lists_serve_that_resource_version_and_compacted_ones_are_too_old(tmp_path: Any) -> None:
    server = ApiServer(history_limit=4)
    await server.start()
    try:
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "kc"))) as kube:
            rv1 = (await kube.create(CMS, cm("a")))["metadata"]["resourceVersion"]
            await kube.create(CMS, cm("b"))
            exact = await kube.get(CMS, params={"resourceVersion": rv1, "resourceVersionMatch": "Exact"})
            assert (names(exact), exact["metadata"]["resourceVersion"]) == (["a"], rv1)
            legacy = await kube.get(CMS, params={"resourceVersion": rv1, "limit": "10"})  # limit + rv: legacy exact
            assert names(legacy) == ["a"]
            newer = await kube.get(CMS, params={"resourceVersion": rv1, "resourceVersionMatch": "NotOlderThan"})
            assert names(newer) == ["a", "b"]
            with pytest.raises(ApiError) as caught:
                await kube.get(CMS, params={"resourceVersion": str(10**6), "resourceVersionMatch": "NotOlderThan"})
            assert (caught.value.status, caught.value.reason) == (504, "Timeout")
            assert "Too large resource version" in caught.value.message
            for i in range(6):
                await kube.patch(f"{CMS}/b", {"data": {"v": str(i)}})
            with pytest.raises(ApiError) as caught:
                await kube.get(CMS, params={"resourceVersion": rv1, "resourceVersionMatch": "Exact"})
            assert caught.value.status == 410
            assert "The resourceVersion for the provided list is too old" in caught.value.message
            with pytest.raises(ApiError) as caught:
                await kube.get(CMS, params={"resourceVersion": rv1, "continue": "eyJydiI6MX0="})
            assert caught.value.status == 400
            assert "specifying resource version is not allowed when using continue" in caught.value.message
    finally:
        await server.stop()
