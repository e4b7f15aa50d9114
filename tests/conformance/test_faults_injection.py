"""Fault injection of the emulator (sim/faults.py), over real HTTP: each kind happens as configured, as the real
failure it imitates looks on the wire.

Where each fault comes from:
- 429: kube-apiserver's max-in-flight filter (staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go,
  `tooManyRequests`: `Retry-After: 1` and the text body "Too many requests, please try again later." written by
  http.Error, so text/plain, not a Status) and API Priority and Fairness, which rejects through the same function
  (filters/priority-and-fairness.go).
- 500: an internal error as a Status (apimachinery/pkg/api/errors `NewInternalError`: reason InternalError,
  "Internal error occurred: ...").
- 503 with HTML: not the apiserver but a load balancer or proxy in front of it (nginx's default error page);
  client-go's rest/request.go (`newUnstructuredResponseError`) exists because such non-Status bodies happen.
- 504: the timeout filter (filters/timeout.go `WithTimeoutForNonLongRunningRequests`: `NewTimeoutError("request did
  not complete within the allotted timeout", 0)`: 504, reason Timeout); the handler goes on running after the
  answer ("post-timeout activity"), so a write may be committed although the client saw 504 (`commit=true`).
- connection reset: an apiserver restarting or a proxy dropping connections: no answer at all.
- 410 on watch resume: etcd compaction (staging/src/k8s.io/apiserver/pkg/storage/etcd3/errors.go
  `interpretWatchError`: ErrCompacted -> `NewResourceExpired("The resourceVersion for the provided watch is too
  old.")`), sent as a watch ERROR event (etcd3/watcher.go `transformErrorToEvent`).
- continue expired: etcd3/errors.go `handleCompactedErrorForPaging`: 410 Expired with the `inconsistentContinue`
  message and a continue token in the Status's ListMeta to read the rest, inconsistently.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from gangsched.sim.apiserver import ApiServer
from gangsched.sim.faults import (
    INCONSISTENT_CONTINUE,
    TOO_MANY_REQUESTS,
    WATCH_EXPIRED,
    FaultSpecError,
    load_rules,
    parse_rule_spec,
)
from tests.builders import pod_manifest

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def http(apiserver: ApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    # a fresh connection per request: aiohttp retries an idempotent request once when a pooled connection was
    # dropped, which would hide a reset from the test
    async with aiohttp.ClientSession(apiserver.url, connector=aiohttp.TCPConnector(force_close=True)) as session:
        yield session


async def faults(http: aiohttp.ClientSession, rules: Any) -> dict[str, Any]:
    async with http.post("/sim/faults", data=orjson.dumps(rules)) as r:
        body = await r.json()
        assert r.status == 200, body
        return dict(body)


async def create(http: aiohttp.ClientSession, name: str) -> tuple[int, str, bytes, Any]:
    async with http.post(
        PODS,
        data=orjson.dumps(pod_manifest(name, container="main", image="registry.k8s.io/pause:3.9")),
        headers={"Content-Type": "application/json"},
    ) as r:
        return r.status, r.headers.get("Content-Type", ""), await r.read(), r.headers


async def exists(http: aiohttp.ClientSession, name: str) -> bool:
    async with http.get(f"{PODS}/{name}") as r:
        return r.status == 200


async def test_429_has_retry_after_and_the_max_in_flight_text_body_and_is_refused_before_the_handler(
    http: aiohttp.ClientSession,
) -> None:
    await faults(http, [{"kind": "http429", "verb": "create", "resource": "pods", "next": 1, "retry_after": 2}])
    status, ctype, body, headers = await create(http, "a")
    assert (status, headers["Retry-After"], body.decode()) == (429, "2", TOO_MANY_REQUESTS)
    assert ctype.startswith("text/plain")
    assert not await exists(http, "a")  # throttled: never reached storage
    assert (await create(http, "a"))[0] == 201  # "the next 1": only the first one


async def test_500_is_a_json_status_and_commit_loses_the_answer_of_a_write_that_happened(
    http: aiohttp.ClientSession,
) -> None:
    await faults(http, [{"kind": "http500", "verb": "create", "resource": "pods", "next": 2, "commit": True}])
    status, ctype, body, _ = await create(http, "a")
    doc = orjson.loads(body)
    assert (status, ctype, doc["kind"], doc["reason"], doc["code"]) == (
        500,
        "application/json",
        "Status",
        "InternalError",
        500,
    )
    assert doc["message"].startswith("Internal error occurred: ")
    assert await exists(http, "a")  # committed, the answer lost
    status, _, body, _ = await create(http, "a")  # the client's retry meets its own write
    assert status == 500  # the second of "next 2"
    assert (await create(http, "a"))[0] == 409


async def test_503_is_an_html_page_from_a_load_balancer(http: aiohttp.ClientSession) -> None:
    await faults(http, [{"kind": "http503", "verb": "list", "next": 1}])
    async with http.get(PODS) as r:
        text = await r.text()
        assert r.status == 503 and r.headers["Content-Type"].startswith("text/html")
        assert "<html>" in text and "503 Service Temporarily Unavailable" in text
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(text)
    async with http.get(PODS) as r:
        assert r.status == 200


async def test_502_every_fifth_answer_is_a_bad_gateway_page(http: aiohttp.ClientSession) -> None:
    """An nginx-style 502 Bad Gateway (text/html) on every fifth matching request, as a load balancer whose upstream
    apiserver dropped the connection answers; not a Kubernetes Status."""
    await faults(http, [{"kind": "http502", "verb": "list", "every": 5}])
    statuses = []
    for _ in range(10):
        async with http.get(PODS) as r:
            statuses.append(r.status)
            if r.status == 502:
                assert r.headers["Content-Type"].startswith("text/html") and "502 Bad Gateway" in await r.text()
    assert statuses.count(502) == 2 and statuses.count(200) == 8


async def test_504_comes_after_the_delay_with_the_timeout_filters_status(http: aiohttp.ClientSession) -> None:
    await faults(
        http,
        [
            {"kind": "http504", "verb": "create", "delay": 0.3, "next": 1},
            {"kind": "http504", "verb": "create", "delay": 0.1, "commit": True, "skip": 1, "next": 1},
        ],
    )
    t0 = time.monotonic()
    status, _, body, _ = await create(http, "a")
    assert time.monotonic() - t0 >= 0.3
    doc = orjson.loads(body)
    assert (status, doc["reason"], doc["message"]) == (
        504,
        "Timeout",
        "Timeout: request did not complete within the allotted timeout",
    )
    assert not await exists(http, "a")
    status, _, _, _ = await create(http, "b")  # the second rule: the handler ran, the answer is a 504
    assert status == 504 and await exists(http, "b")


async def test_a_reset_drops_the_connection_without_an_answer(http: aiohttp.ClientSession) -> None:
    await faults(
        http,
        [
            {"kind": "reset", "verb": "create", "next": 1},
            {"kind": "reset", "verb": "create", "commit": True, "skip": 1, "next": 1},
        ],
    )
    with pytest.raises(aiohttp.ClientError):
        await create(http, "a")
    assert not await exists(http, "a")
    with pytest.raises(aiohttp.ClientError):
        await create(http, "b")
    assert await exists(http, "b")  # carried out; only the answer was lost


async def test_latency_is_added_to_matching_requests_only(http: aiohttp.ClientSession) -> None:
    await faults(http, [{"kind": "latency", "verb": "get", "resource": "pods", "delay": 0.3}])
    await create(http, "a")
    t0 = time.monotonic()
    assert await exists(http, "a")
    assert time.monotonic() - t0 >= 0.3
    t0 = time.monotonic()
    async with http.get(PODS) as r:  # a list is not a get
        assert r.status == 200
    assert time.monotonic() - t0 < 0.3


async def test_a_stall_holds_every_request_watches_included_for_its_duration(
    http: aiohttp.ClientSession, apiserver: ApiServer
) -> None:
    async with aiohttp.ClientSession(apiserver.url) as watcher:
        async with watcher.get(PODS, params={"watch": "true", "resourceVersion": "0"}) as stream:
            await faults(http, [{"kind": "stall", "verb": "create", "seconds": 0.6, "next": 1}])
            t0 = time.monotonic()
            stall = asyncio.create_task(create(http, "a"))  # starts the stall and is held by it
            async with asyncio.timeout(5):  # the next request goes only once the stall has begun (no timed guess)
                while not apiserver.faults.stalled():  # noqa: ASYNC110 (the injector's state: no event to wait on)
                    await asyncio.sleep(0)  # the emulator runs on this loop: yield to it until the create started it
            async with http.get("/api/v1/nodes") as r:  # any other request is held too
                assert r.status == 200
            assert time.monotonic() - t0 >= 0.5
            assert (await stall)[0] == 201
            line = await asyncio.wait_for(stream.content.readline(), 5)
            assert orjson.loads(line)["type"] == "ADDED"
            assert time.monotonic() - t0 >= 0.5
    state = await (await http.get("/sim/faults")).json()
    assert state["injected"] == {"stall": 1}


async def watch_pods_into(http: aiohttp.ClientSession, seen: list[dict[str, Any]]) -> None:
    """Every event of a pods watch from resourceVersion 0, appended to seen as it arrives, until the stream ends."""
    async with http.get(PODS, params={"watch": "true", "resourceVersion": "0"}) as r:
        async for line in r.content:
            seen.append(orjson.loads(line))


async def test_a_watch_is_cut_after_n_events_or_t_seconds(http: aiohttp.ClientSession) -> None:
    for i in range(3):
        await create(http, f"p{i}")
    await faults(
        http,
        [
            {"kind": "watch-cut", "resource": "pods", "events": 2, "next": 1},
            {"kind": "watch-cut", "resource": "pods", "seconds": 0.3, "skip": 1, "next": 1},
        ],
    )
    seen: list[dict[str, Any]] = []
    with pytest.raises(aiohttp.ClientPayloadError):  # torn: no final chunk
        await watch_pods_into(http, seen)
    assert [e["object"]["metadata"]["name"] for e in seen] == ["p0", "p1"]
    t0 = time.monotonic()
    seen = []
    with pytest.raises(aiohttp.ClientPayloadError):
        await watch_pods_into(http, seen)
    assert [e["type"] for e in seen] == ["ADDED"] * 3 and 0.3 <= time.monotonic() - t0 < 3


async def test_a_resumed_watch_gets_410_expired_as_after_etcd_compaction(http: aiohttp.ClientSession) -> None:
    await create(http, "a")
    async with http.get(PODS) as r:
        rv = (await r.json())["metadata"]["resourceVersion"]
    await faults(http, [{"kind": "watch-gone", "resource": "pods"}])
    async with http.get(PODS, params={"watch": "true", "resourceVersion": "0", "timeoutSeconds": "1"}) as r:
        first = orjson.loads(await r.content.readline())
        assert first["type"] == "ADDED"  # a fresh watch ("0") is not a resume: not affected
    async with http.get(PODS, params={"watch": "true", "resourceVersion": rv}) as r:
        assert r.status == 200
        event = orjson.loads(await r.content.readline())
        assert await r.content.read() == b""  # the stream ends after the ERROR
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["code"], status["reason"], status["message"]) == (
        "Status",
        410,
        "Expired",
        WATCH_EXPIRED,
    )


async def test_a_continue_token_expires_with_an_inconsistent_continue_token_to_read_the_rest(
    http: aiohttp.ClientSession,
) -> None:
    for i in range(3):
        await create(http, f"p{i}")
    await faults(http, [{"kind": "continue-expired", "verb": "list", "next": 1}])
    async with http.get(PODS, params={"limit": "1"}) as r:  # no continue: not affected
        page = await r.json()
    token = page["metadata"]["continue"]
    async with http.get(PODS, params={"limit": "1", "continue": token}) as r:
        status = await r.json()
        assert r.status == 410
    assert (status["reason"], status["code"], status["message"]) == ("Expired", 410, INCONSISTENT_CONTINUE)
    assert "too old to display a consistent list result" in status["message"]
    names = []
    cont = status["metadata"]["continue"]
    while cont:
        async with http.get(PODS, params={"limit": "1", "continue": cont}) as r:
            page = await r.json()
        names += [p["metadata"]["name"] for p in page["items"]]
        cont = page["metadata"].get("continue")
    assert names == ["p1", "p2"]


async def test_every_nth_skip_limit_and_the_counts_by_kind(http: aiohttp.ClientSession) -> None:
    await faults(http, [{"kind": "http500", "verb": "get", "every": 3, "skip": 1, "limit": 2}])
    await create(http, "a")
    codes = []
    for _ in range(12):
        async with http.get(f"{PODS}/a") as r:
            codes.append(r.status)
    # the first matching request is let through (skip 1); then every 3rd fails, twice at most (limit 2)
    assert [i for i, c in enumerate(codes) if c == 500] == [3, 6]
    state = await (await http.get("/sim/faults")).json()
    assert state["injected"] == {"http500": 2} and state["total"] == 2
    assert state["rules"][0]["matched"] == 12 and state["rules"][0]["injected"] == 2
    async with http.delete("/sim/faults") as r:
        assert (await r.json())["rules"] == []


async def test_probabilities_are_deterministic_for_a_seed(http: aiohttp.ClientSession) -> None:
    await create(http, "a")

    async def pattern(seed: int) -> list[int]:
        await http.delete("/sim/faults")
        await faults(http, {"seed": seed, "rules": [{"kind": "http500", "verb": "get", "resource": "pods", "p": 0.5}]})
        out = []
        for _ in range(30):
            async with http.get(f"{PODS}/a") as r:
                out.append(r.status)
        return out

    first, again, other = await pattern(7), await pattern(7), await pattern(8)
    assert first == again and first != other
    assert 5 < first.count(500) < 25


async def test_rules_match_verbs_resources_subresources_and_user_agents(
    http: aiohttp.ClientSession, apiserver: ApiServer
) -> None:
    await create(http, "a")
    await faults(http, [{"kind": "http500", "verb": "update|patch", "resource": "pods/*", "agent": "kopf"}])
    patch = {"metadata": {"labels": {"x": "y"}}}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(
        f"{PODS}/a/status", data=orjson.dumps(patch), headers={**headers, "User-Agent": "kopf/1.37"}
    ) as r:
        assert r.status == 500
    async with http.patch(f"{PODS}/a", data=orjson.dumps(patch), headers={**headers, "User-Agent": "kopf/1.37"}) as r:
        assert r.status == 200  # "pods/*" is a subresource of pods, not pods
    async with http.patch(
        f"{PODS}/a/status", data=orjson.dumps(patch), headers={**headers, "User-Agent": "gangsched"}
    ) as r:
        assert r.status == 200  # another client


async def test_bad_rules_are_refused_naming_the_field_and_what_is_allowed(http: aiohttp.ClientSession) -> None:
    for rule, words in [
        ({"kind": "http418"}, "allowed kinds are"),
        ({"kind": "http500", "p": 2}, "between 0 and 1"),
        ({"kind": "http500", "verb": "poke"}, "allowed verbs are"),
        ({"kind": "latency", "commit": True}, "commit"),
        ({"kind": "http500", "every": 2, "p": 0.1}, "at most one of"),
        ({"kind": "http500", "bogus": 1}, "unknown"),
    ]:
        async with http.post("/sim/faults", data=orjson.dumps([rule])) as r:
            body = await r.json()
            assert r.status == 400 and words in body["message"], (rule, body)
    assert (await (await http.get("/sim/faults")).json())["rules"] == []


def test_cli_specs_and_files_parse_into_the_same_rules(tmp_path: Any) -> None:
    rule = parse_rule_spec("verb=create,resource=pods/binding,kind=http500,p=0.2,commit=true")
    assert (rule.kind, rule.verb, rule.resource, rule.p, rule.commit) == (
        "http500",
        "create",
        "pods/binding",
        0.2,
        True,
    )
    path = tmp_path / "faults.yaml"
    path.write_text("seed: 5\nrules:\n- {kind: http429, verb: create, every: 3, retryAfter: 2}\n")
    rules, seed = load_rules(["kind=watch-cut,events=10"], str(path))
    assert seed == 5 and [r.kind for r in rules] == ["http429", "watch-cut"] and rules[0].retry_after == 2
    with pytest.raises(FaultSpecError, match="'p': 'x' is not a number"):
        parse_rule_spec("kind=http500,p=x")
    with pytest.raises(FaultSpecError, match="not key=value"):
        parse_rule_spec("http500")
