"""`gangsched run` as a hardened install runs it: credentials never go to a plain-http server unless allowed, and
/metrics and the probes listen on the address they are told to.

Oracle: client-go's tools/clientcmd/client_config.go (`DirectClientConfig.ClientConfig`: "only try to read the auth
information if we are secure", gated on `rest.IsConfigTransportTLS`): kubectl never puts a kubeconfig's token on
an http:// connection. gangsched refuses instead of silently dropping it (a scheduler without its identity would
only meet 401/403s): one line on stderr naming the server and the way out, a non-zero exit, and not a single request
sent. `--allow-insecure-http` sends it anyway (a test cluster behind a trusted proxy); a kubeconfig without
credentials (the emulator's `--no-auth` mode) is served over http as before.

`--metrics-bind-address` / `--probes-bind-address` (config metricsBindAddress / probesBindAddress, default
0.0.0.0, as kube-scheduler's `--bind-address`): bound to 127.0.0.1 they answer there and refuse connections
to another loopback address (127.0.0.2), which a 0.0.0.0 listener would accept.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from gangsched.sim.apiserver import ApiServer
from tests.e2e.processes import free_port

pytestmark = pytest.mark.e2e

TOKEN = "s3cr3t-operator-token"


@pytest.fixture
async def plain_http() -> AsyncIterator[ApiServer]:
    server = ApiServer(auth=False)  # what `gangsched sim serve --no-auth` serves: http, no authentication
    await server.start(host="127.0.0.1", port=0)
    server.requests.enabled = True
    try:
        yield server
    finally:
        await server.stop()


async def _gangsched_run(
    kubeconfig: Path, tmp_path: Path, *extra: str, ports: tuple[int, int] | None = None
) -> asyncio.subprocess.Process:
    metrics, probes = ports or (free_port(), free_port())
    config = tmp_path / "config.yaml"
    config.write_text(f"namespace: default\nmetricsPort: {metrics}\nprobesPort: {probes}\n")
    return await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "gangsched", "run", "--kubeconfig", str(kubeconfig), "--config", str(config)),
        *extra,
        env=dict(os.environ, GANGSCHED_LOG_LEVEL="INFO"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _runs(proc: asyncio.subprocess.Process, server: ApiServer, probes: int) -> None:
    """The process talks to the API (it lists pods) and keeps running until ready; then SIGTERM ends it cleanly.
    (Ready first: a SIGTERM during Kopf's start-up waits out Kopf's 5 s for the tasks it started, kopf/_core/reactor
    running.py run_tasks; that path is tests/e2e/test_shutdown_stall.py's, not this test's.)"""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not any(e.path == "/api/v1/pods" for e in server.requests.entries):
        assert proc.returncode is None, (await proc.communicate())[1].decode()
        assert loop.time() < deadline, "the operator never listed pods"
        await asyncio.sleep(0.05)
    while await _get(f"http://127.0.0.1:{probes}/readyz") != 200:
        assert proc.returncode is None, (await proc.communicate())[1].decode()
        assert loop.time() < deadline, "the operator never answered ready"
        await asyncio.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), timeout=30) == 0


async def test_a_token_is_never_sent_over_plain_http(plain_http: ApiServer, tmp_path: Path) -> None:
    kubeconfig = plain_http.write_kubeconfig(tmp_path / "kubeconfig", token=TOKEN)
    assert plain_http.url.startswith("http://")
    proc = await _gangsched_run(kubeconfig, tmp_path)
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=30)
    lines = stderr.decode().strip().splitlines()
    assert proc.returncode == 2, (stdout, stderr)
    assert len(lines) == 1, lines
    assert plain_http.url in lines[0] and "--allow-insecure-http" in lines[0] and "https://" in lines[0]
    assert TOKEN not in lines[0]
    assert plain_http.requests.entries == []  # nothing was sent at all


async def test_allow_insecure_http_sends_it_and_no_credentials_need_no_flag(
    plain_http: ApiServer, tmp_path: Path
) -> None:
    with_token = plain_http.write_kubeconfig(tmp_path / "with-token", token=TOKEN)
    ports = (free_port(), free_port())
    await _runs(await _gangsched_run(with_token, tmp_path, "--allow-insecure-http", ports=ports), plain_http, ports[1])
    plain_http.requests.entries.clear()
    without = plain_http.write_kubeconfig(tmp_path / "no-auth")  # as `gangsched sim serve --no-auth` writes it
    ports = (free_port(), free_port())
    await _runs(await _gangsched_run(without, tmp_path, ports=ports), plain_http, ports[1])


async def _get(url: str) -> int | None:
    """The HTTP status, or None when the connection is refused."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as r:
            return r.status
    except aiohttp.ClientConnectionError:
        return None


async def test_metrics_and_probes_listen_on_the_bind_address(plain_http: ApiServer, tmp_path: Path) -> None:
    kubeconfig = plain_http.write_kubeconfig(tmp_path / "no-auth")
    metrics, probes = free_port(), free_port()
    loopback = ("--metrics-bind-address", "127.0.0.1", "--probes-bind-address", "127.0.0.1")
    proc = await _gangsched_run(kubeconfig, tmp_path, *loopback, ports=(metrics, probes))
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while await _get(f"http://127.0.0.1:{probes}/readyz") != 200:
            assert proc.returncode is None and loop.time() < deadline, "the probes never answered ready"
            await asyncio.sleep(0.1)
        assert await _get(f"http://127.0.0.1:{metrics}/metrics") == 200
        assert await _get(f"http://127.0.0.2:{probes}/readyz") is None
        assert await _get(f"http://127.0.0.2:{metrics}/metrics") is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0
