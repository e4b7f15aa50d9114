"""KubeClient against a tiny real HTTP server that answers the way broken infrastructure does.

A load balancer's HTML 502, a service mesh's plain-text 503 with Retry-After, an empty 500, JSON cut short, a
401 until the token is renewed, a watch stream that turns into garbage: each must become an ApiError with the
status and an excerpt of the body (never a JSONDecodeError), and transient ones must be retried under the retry
policy (k8s/retry.py) on an injected clock, so no test sleeps for real.

Mirrors client-go:
- k8s.io/client-go/rest/request.go `transformResponse` / `newUnstructuredResponseError`: a body that is not a
  Status becomes an error carrying the HTTP status and (a bounded excerpt of) the body;
- k8s.io/client-go/rest/with_retry.go `checkWait` / `retryAfterSeconds`: 429 and 5xx answers are retried after
  the Retry-After seconds; other 4xx are not;
- k8s.io/client-go/transport/token_source.go `tokenSourceTransport.RoundTrip`: a 401 resets the cached token so
  the next request gets a fresh one (here: and the request is sent once more);
- k8s.io/client-go/rest/watch/decoder.go: a watch frame that does not decode ends the watch with an error;
- k8s.io/client-go/util/flowcontrol/throttle.go: requests are throttled by the client's token bucket.
"""

from __future__ import annotations

import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from gangsched.k8s.client import ApiError, ConnectionSettings, KubeClient
from gangsched.k8s.credentials import credentials_from_kubeconfig
from gangsched.k8s.retry import RetryPolicy
from tests.integration.harness import append_all
from tests.integration.stub_server import OK, FakeTime, Script, json_answer, server, text
from tests.tools import need_tool

__all__ = ["server"]  # a fixture
HTML_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n"
    "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)
STATUS_404 = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "NotFound",
    "code": 404,
    "message": 'pods "p" not found',
}


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
async def client(server: tuple[Script, str], fake_time: FakeTime) -> AsyncIterator[KubeClient]:
    async with KubeClient(
        ConnectionSettings(server=server[1]), clock=fake_time.clock, sleep=fake_time.sleep, rand=lambda: 1.0, qps=None
    ) as kube:
        yield kube


async def test_html_502_from_a_load_balancer_is_an_api_error_with_an_excerpt(
    server: tuple[Script, str], client: KubeClient
) -> None:
    """request.go newUnstructuredResponseError: status + body excerpt, not a decode error; retried (5xx), then given
    up."""
    script, _ = server
    script.answers = [text(502, HTML_502, "text/html")]
    with pytest.raises(ApiError) as info:
        await client.get("/api/v1/namespaces/default/pods/p", retry=RetryPolicy(max_attempts=3))
    err = info.value
    assert (err.status, err.reason) == (502, "Bad Gateway")
    assert "502 Bad Gateway" in err.message and "nginx" in err.message and len(err.message) <= 210
    assert len(script.seen) == 3
    assert client.requests == {("GET", "502"): 3}


async def test_plain_text_503_with_retry_after_is_retried_after_that_many_seconds(
    server: tuple[Script, str], client: KubeClient, fake_time: FakeTime
) -> None:
    """with_retry.go checkWait + Before(): a 503 with Retry-After: 2 is retried after 2 s."""
    script, _ = server
    script.answers = [
        text(
            503,
            "upstream connect error or disconnect/reset before headers. reset reason: overflow",
            **{"Retry-After": "2"},
        ),
        OK,
    ]
    assert (await client.get("/api/v1/namespaces/default/pods/p"))["metadata"]["name"] == "p"
    assert fake_time.sleeps == [2.0]
    assert client.requests == {("GET", "503"): 1, ("GET", "200"): 1}


async def test_429_status_with_retry_after_seconds_in_details(
    server: tuple[Script, str], client: KubeClient, fake_time: FakeTime
) -> None:
    """API Priority and Fairness rejects with 429, a Status whose details.retryAfterSeconds and Retry-After agree."""
    script, _ = server
    status = {
        "kind": "Status",
        "status": "Failure",
        "reason": "TooManyRequests",
        "code": 429,
        "message": "Too many requests, please try again later.",
        "details": {"retryAfterSeconds": 1},
    }
    script.answers = [json_answer(429, status), OK]
    await client.patch("/api/v1/namespaces/default/pods/p", {"metadata": {}})
    assert fake_time.sleeps == [1.0]


async def test_empty_500_and_truncated_json_are_api_errors(server: tuple[Script, str], client: KubeClient) -> None:
    script, _ = server
    script.answers = [text(500, "")]
    with pytest.raises(ApiError) as info:
        await client.get("/x", retry=RetryPolicy(max_attempts=1))
    assert (info.value.status, info.value.reason, info.value.message) == (500, "Internal Server Error", "(empty body)")
    script.answers = [text(200, '{"kind": "Pod", "metadata": {"na', "application/json")]
    with pytest.raises(ApiError) as info:
        await client.get("/x", retry=RetryPolicy(max_attempts=1))
    assert (info.value.status, info.value.reason) == (200, "InvalidResponse")
    assert '{"kind": "Pod", "metadata": {"na' in info.value.message


async def test_truncated_json_is_retried_then_succeeds(server: tuple[Script, str], client: KubeClient) -> None:
    script, _ = server
    script.answers = [text(200, '{"kind": "Po', "application/json"), OK]
    assert (await client.get("/x"))["kind"] == "Pod"
    assert len(script.seen) == 2


async def test_status_404_is_final_and_keeps_the_status_reason(server: tuple[Script, str], client: KubeClient) -> None:
    """with_retry.go: a 4xx other than 429 is not retried."""
    script, _ = server
    script.answers = [json_answer(404, STATUS_404)]
    with pytest.raises(ApiError) as info:
        await client.delete("/api/v1/namespaces/default/pods/p")
    assert (info.value.status, info.value.reason, info.value.message) == (404, "NotFound", 'pods "p" not found')
    assert len(script.seen) == 1


async def test_no_answer_is_status_0_and_retried(fake_time: FakeTime) -> None:
    """Connection refused: the ApiError has status 0 (no HTTP answer) and is retried within the policy's bounds."""
    async with KubeClient(
        ConnectionSettings(server="http://127.0.0.1:9"),
        clock=fake_time.clock,
        sleep=fake_time.sleep,
        qps=None,
        retry=RetryPolicy(max_attempts=3),
    ) as kube:
        with pytest.raises(ApiError) as info:
            await kube.get("/version")
    assert (info.value.status, info.value.reason) == (0, "ConnectionError")
    assert kube.requests == {("GET", "error"): 3}
    assert len(fake_time.sleeps) == 2


def _exec_plugin(tmp_path: Path) -> Path:
    """An exec credential plugin that hands out token-1, token-2, ... one per run (it counts its runs in a file)."""
    script = tmp_path / "plugin.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"counter = pathlib.Path({str(tmp_path / 'runs')!r})\n"
        "n = int(counter.read_text()) + 1 if counter.exists() else 1\n"
        "counter.write_text(str(n))\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
        " 'status': {'token': f'token-{n}'}}))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def _kubeconfig(tmp_path: Path, server: str, user: dict[str, Any]) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(orjson.dumps(doc).decode())
    return str(path)


async def test_401_refreshes_the_exec_credential_once_and_retries(
    server: tuple[Script, str], fake_time: FakeTime, tmp_path: Path
) -> None:
    """token_source.go: a 401 resets the token; the exec plugin runs again and the request goes out once more."""
    script, url = server
    plugin = _exec_plugin(tmp_path)
    path = _kubeconfig(
        tmp_path,
        url,
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(plugin)]}},
    )

    async def only_token_2(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != "Bearer token-2":
            return web.Response(
                status=401, text='{"kind":"Status","reason":"Unauthorized","code":401,"message":"Unauthorized"}'
            )
        return await OK(request)

    script.answers = [only_token_2]
    async with KubeClient(
        credentials_from_kubeconfig([path]), clock=fake_time.clock, sleep=fake_time.sleep, qps=None
    ) as kube:
        assert (await kube.get("/api/v1/namespaces/default/pods/p"))["kind"] == "Pod"
        assert script.auth == ["Bearer token-1", "Bearer token-2"]
        assert (tmp_path / "runs").read_text() == "2"
        await kube.get("/api/v1/namespaces/default/pods/p")  # the new token is kept
        assert script.auth[-1] == "Bearer token-2" and (tmp_path / "runs").read_text() == "2"


async def test_401_with_a_token_that_cannot_change_is_raised_after_one_attempt(
    server: tuple[Script, str], client: KubeClient
) -> None:
    script, _ = server
    script.answers = [text(401, "Unauthorized")]
    with pytest.raises(ApiError) as info:
        await client.get("/x")
    assert info.value.status == 401
    assert len(script.seen) == 1  # a static token: refreshing cannot help, and 401 is not retried


async def test_401_refreshes_at_most_once_per_request(
    server: tuple[Script, str], fake_time: FakeTime, tmp_path: Path
) -> None:
    script, url = server
    plugin = _exec_plugin(tmp_path)
    path = _kubeconfig(
        tmp_path,
        url,
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(plugin)]}},
    )
    script.answers = [text(401, "Unauthorized")]
    async with KubeClient(
        credentials_from_kubeconfig([path]), clock=fake_time.clock, sleep=fake_time.sleep, qps=None
    ) as kube:
        with pytest.raises(ApiError) as info:
            await kube.get("/x")
    assert info.value.status == 401
    assert script.auth == ["Bearer token-1", "Bearer token-2"]


async def _stream(lines: list[bytes], request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    await response.prepare(request)
    for line in lines:
        await response.write(line)
    await response.write_eof()
    return response


async def test_a_watch_line_that_is_not_json_ends_the_watch_with_an_api_error(
    server: tuple[Script, str], client: KubeClient
) -> None:
    """watch/decoder.go: an undecodable frame ends the watch with an error (the caller relists)."""
    script, _ = server
    good = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "5"}}}) + b"\n"

    async def garbage(request: web.Request) -> web.StreamResponse:
        return await _stream([good, b"<html><body>502 Bad Gateway</body></html>\n"], request)

    script.answers = [garbage]
    seen: list[tuple[str, dict[str, Any]]] = []
    with pytest.raises(ApiError) as info:
        await append_all(client.watch("/api/v1/pods", resource_version="1"), seen)
    assert [f"{kind} {obj['metadata']['name']}" for kind, obj in seen] == ["ADDED a"]
    assert info.value.reason == "InvalidResponse" and "502 Bad Gateway" in info.value.message


async def test_a_watch_cut_inside_an_event_is_an_api_error(server: tuple[Script, str], client: KubeClient) -> None:
    script, _ = server

    async def cut(request: web.Request) -> web.StreamResponse:
        return await _stream([b'{"type": "ADDED", "object": {"metad'], request)

    script.answers = [cut]
    with pytest.raises(ApiError) as info:
        async for _ in client.watch("/api/v1/pods", resource_version="1"):
            pass
    assert info.value.reason == "InvalidResponse"


async def test_a_watch_refused_with_html_is_an_api_error(server: tuple[Script, str], client: KubeClient) -> None:
    script, _ = server
    script.answers = [text(503, "<html>Service Unavailable</html>", "text/html", **{"Retry-After": "3"})]
    with pytest.raises(ApiError) as info:
        async for _ in client.watch("/api/v1/pods", resource_version="1"):
            pass
    assert (info.value.status, info.value.retry_after) == (503, 3.0)
    assert "Service Unavailable" in info.value.message
    assert client.requests == {("WATCH", "503"): 1}


async def test_requests_are_throttled_by_the_token_bucket(server: tuple[Script, str], fake_time: FakeTime) -> None:
    """flowcontrol throttle.go: the first `burst` requests go at once, then one per 1/qps seconds."""
    script, url = server
    script.answers = [OK]
    async with KubeClient(
        ConnectionSettings(server=url), clock=fake_time.clock, sleep=fake_time.sleep, qps=5, burst=3
    ) as kube:
        for _ in range(6):
            await kube.get("/x")
        assert fake_time.sleeps == pytest.approx([0.2, 0.2, 0.2])
        assert kube.limiter is not None and kube.limiter.throttled == 3
        assert kube.requests == {("GET", "200"): 6}


async def test_retries_are_throttled_too(server: tuple[Script, str], fake_time: FakeTime) -> None:
    """with_retry.go Before(): a retry also waits for the client-side rate limiter."""
    script, url = server
    script.answers = [text(503, "busy"), text(503, "busy"), OK]
    async with KubeClient(
        ConnectionSettings(server=url), clock=fake_time.clock, sleep=fake_time.sleep, rand=lambda: 0.0, qps=1, burst=1
    ) as kube:
        await kube.get("/x")
        assert kube.limiter is not None and kube.limiter.throttled == 2


# ------------------------------------------------------------------------------------------- transport settings
def _openssl(*args: str, cwd: Path) -> None:
    import subprocess

    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _pki(tmp_path: Path) -> Path:
    """A CA, a server certificate for DNS name kube.internal only, and a client certificate (CN=gangsched)."""
    need_tool("openssl")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=test-ca", cwd=tmp_path
    )
    (tmp_path / "san.ext").write_text("subjectAltName=DNS:kube.internal\n")
    for name, cn, ext in (("server", "kube.internal", ["-extfile", "san.ext"]), ("client", "gangsched", [])):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=tmp_path)
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "1",
            *ext,
            cwd=tmp_path,
        )
    return tmp_path


async def test_tls_server_name_ca_data_and_client_certificate(tmp_path: Path) -> None:
    """kubeconfig `tls-server-name` (client-go rest.TLSClientConfig.ServerName): the server's certificate is checked
    against that name, not the address dialled; `certificate-authority-data` and `client-certificate-data` /
    `client-key-data` are used from memory (written to private files for the TLS library)."""
    import base64
    import ssl

    pki = _pki(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki / "ca.crt"))
    server_ctx.load_cert_chain(str(pki / "server.crt"), str(pki / "server.key"))
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    peers: list[str] = []

    async def whoami(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        peers.append(dict(x[0] for x in peer["subject"])["commonName"] if peer else "")
        return web.json_response({"kind": "Status", "status": "Success"})

    app = web.Application()
    app.router.add_get("/version", whoami)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    try:
        cluster = {
            "server": f"https://127.0.0.1:{port}",
            "certificate-authority-data": b64("ca.crt"),
            "tls-server-name": "kube.internal",
        }
        user = {"client-certificate-data": b64("client.crt"), "client-key-data": b64("client.key")}
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "clusters": [{"name": "k", "cluster": cluster}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        }
        (tmp_path / "kubeconfig").write_text(orjson.dumps(doc).decode())
        async with KubeClient(credentials_from_kubeconfig([str(tmp_path / "kubeconfig")]), qps=None) as kube:
            assert (await kube.get("/version"))["status"] == "Success"
        assert peers == ["gangsched"]
        del cluster["tls-server-name"]  # 127.0.0.1 is not a name the certificate holds
        (tmp_path / "kubeconfig").write_text(orjson.dumps(doc).decode())
        async with KubeClient(
            credentials_from_kubeconfig([str(tmp_path / "kubeconfig")]), qps=None, retry=RetryPolicy(max_attempts=1)
        ) as kube:
            with pytest.raises(ApiError) as info:
                await kube.get("/version")
        assert info.value.status == 0 and "certificate" in info.value.message.lower()
    finally:
        await runner.cleanup()


async def test_proxy_url_is_used(server: tuple[Script, str], tmp_path: Path) -> None:
    """kubeconfig `proxy-url` (client-go rest.Config.Proxy): requests go to the proxy, which forwards them (here the
    scripted server plays the proxy; the cluster's own address does not resolve)."""
    script, url = server
    script.answers = [OK]
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://apiserver.invalid:8080", "proxy-url": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    (tmp_path / "kubeconfig").write_text(orjson.dumps(doc).decode())
    async with KubeClient(credentials_from_kubeconfig([str(tmp_path / "kubeconfig")]), qps=None) as kube:
        await kube.get("/api/v1/namespaces/default/pods/p")
    assert str(script.seen[0].url) == "http://apiserver.invalid:8080/api/v1/namespaces/default/pods/p"
    assert script.auth == ["Bearer t"]


async def test_lease_requests_are_not_throttled(server: tuple[Script, str], fake_time: FakeTime) -> None:
    """kube-scheduler gives leader election a client of its own (cmd/kube-scheduler/app/options/options.go
    createClients: a separate leader-election client config), so a renewal never queues behind a burst of
    bindings in the rate limiter; here Lease paths bypass the bucket."""
    script, url = server
    script.answers = [OK]
    async with KubeClient(
        ConnectionSettings(server=url), clock=fake_time.clock, sleep=fake_time.sleep, qps=1, burst=1
    ) as kube:
        for _ in range(3):
            await kube.get("/api/v1/namespaces/default/pods/p")
        for _ in range(5):
            await kube.replace("/apis/coordination.k8s.io/v1/namespaces/gangsched-system/leases/gangsched", {})
        assert fake_time.sleeps == pytest.approx([1.0, 1.0])  # only the pod reads waited


async def test_request_counts_are_exported_by_verb_and_code(server: tuple[Script, str], client: KubeClient) -> None:
    """The client counts every request by verb and HTTP code (client-go's rest_client_requests_total{method,code});
    runtime/metrics.py exports the counter as gangsched_api_requests_total."""
    from gangsched.runtime.metrics import Metrics

    script, _ = server
    script.answers = [OK, json_answer(404, STATUS_404), OK]
    metrics = Metrics()
    metrics.export_requests(client.requests)
    await client.get("/x")
    with pytest.raises(ApiError):
        await client.patch("/x", {})
    await client.patch("/x", {})
    text_ = metrics.render().decode()
    assert 'gangsched_api_requests_total{code="200",verb="GET"} 1.0' in text_
    assert 'gangsched_api_requests_total{code="404",verb="PATCH"} 1.0' in text_
    assert 'gangsched_api_requests_total{code="200",verb="PATCH"} 1.0' in text_
