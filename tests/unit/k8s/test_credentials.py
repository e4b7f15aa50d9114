"""Credentials that stay fresh, and kubeconfig read as kubectl reads it (k8s/credentials.py).

Mirrors client-go:
- k8s.io/client-go/transport/token_source.go `NewCachedFileTokenSource` / `cachingTokenSource`: a token file is
  re-read every minute (period 1 min, leeway 10 s), a failed read keeps the last token, `ResetTokenOlderThan`
  after a 401 forces a new read; (and, beyond client-go, a change of the file is picked up at once);
- k8s.io/client-go/plugin/pkg/client/auth/exec/exec.go: the ExecCredential plugin gets KUBERNETES_EXEC_INFO and
  the kubeconfig's env, its token is cached until `expirationTimestamp`, a failing plugin is a clear error;
- k8s.io/client-go/plugin/pkg/client/auth/oidc/oidc.go: an id-token is used until its `exp`, then refreshed with
  the refresh_token grant at the issuer's token endpoint (found by OpenID discovery);
- k8s.io/client-go/tools/clientcmd/loader.go `ClientConfigLoadingRules.Load`: with several files, the first to set
  a map key (cluster, user, context) wins and entries are never merged, the first `current-context` wins, missing
  files are skipped; relative paths resolve against the file that names them (`ResolvePaths`);
- k8s.io/client-go/rest/config.go `InClusterConfig`: KUBERNETES_SERVICE_HOST/PORT, the service account's token
  file (re-read) and CA.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from aiohttp import web

from gangsched.k8s.credentials import (
    CredentialError,
    ExecTokenSource,
    FileTokenSource,
    OidcTokenSource,
    credentials_from_kubeconfig,
    credentials_in_cluster,
    jwt_expiry,
    load_credentials,
)


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _write(path: Path, text: str) -> None:
    path.write_text(text)


# ------------------------------------------------------------------------------------------------ token file
def test_token_file_is_reread_every_minute_less_leeway(tmp_path: Path) -> None:
    """token_source.go: fileTokenSource period 1 min, cachingTokenSource leeway 10 s -> re-read after 50 s."""
    path = tmp_path / "token"
    _write(path, "one\n")
    clock = Clock()
    source = FileTokenSource(str(path), clock=clock)
    assert source.token() == "one"
    clock.now += 49
    assert source.token() == "one" and source.reads == 1
    clock.now += 2
    assert source.token() == "one" and source.reads == 2  # re-read although unchanged


def test_token_file_change_is_seen_at_once(tmp_path: Path) -> None:
    """A projected token rotated by the kubelet (the file is replaced) is used from the next request on."""
    path = tmp_path / "token"
    _write(path, "one")
    clock = Clock()
    source = FileTokenSource(str(path), clock=clock)
    assert source.token() == "one"
    replacement = tmp_path / "token.new"
    _write(replacement, "two-rotated")
    os.replace(replacement, path)  # as the kubelet's atomic writer swaps the file
    assert source.token() == "two-rotated"


def test_token_file_read_failure_keeps_the_last_token(tmp_path: Path) -> None:
    """cachingTokenSource.Token: "Unable to rotate token" -> the cached token is returned."""
    path = tmp_path / "token"
    _write(path, "one")
    clock = Clock()
    source = FileTokenSource(str(path), clock=clock)
    assert source.token() == "one"
    path.unlink()
    clock.now += 3600
    assert source.token() == "one"
    _write(path, "   ")
    assert source.token() == "one"  # empty: "read empty token from file" is an error, the last token stays


def test_token_file_missing_at_start_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match="cannot read the token file"):
        FileTokenSource(str(tmp_path / "nope")).token()


def test_token_file_reset_forces_a_read(tmp_path: Path) -> None:
    """ResetTokenOlderThan after a 401: the next Token() reads the file again."""
    path = tmp_path / "token"
    _write(path, "one")
    source = FileTokenSource(str(path), clock=Clock())
    source.token()
    source.reset()
    source.token()
    assert source.reads == 2


# ------------------------------------------------------------------------------------------------ exec plugin
def _plugin(tmp_path: Path, *, expires_in: float | None, exit_code: int = 0) -> Path:
    """A plugin that counts its runs, echoes an env var and KUBERNETES_EXEC_INFO, and sets an expiry."""
    script = tmp_path / "plugin.py"
    expiry = (
        ""
        if expires_in is None
        else (
            "import datetime; status['expirationTimestamp'] = (datetime.datetime(2023, 11, 14, 22, 13, 20, "
            "tzinfo=datetime.timezone.utc)"
            f" + datetime.timedelta(seconds={expires_in})).strftime('%Y-%m-%dT%H:%M:%SZ')\n"
        )
    )
    script.write_text(
        "import json, os, pathlib, sys\n"
        f"counter = pathlib.Path({str(tmp_path / 'runs')!r})\n"
        "n = int(counter.read_text()) + 1 if counter.exists() else 1\n"
        "counter.write_text(str(n))\n"
        f"pathlib.Path({str(tmp_path / 'info')!r}).write_text(os.environ.get('KUBERNETES_EXEC_INFO', ''))\n"
        "status = {'token': f\"{os.environ.get('PREFIX', 'tok')}-{n}\"}\n"
        + expiry
        + f"if {exit_code}:\n    print('no credentials for you', file=sys.stderr); sys.exit({exit_code})\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', 'status': "
        "status}))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


async def test_exec_plugin_token_is_cached_until_its_expiry(tmp_path: Path) -> None:
    """exec.go: the credential is reused until expirationTimestamp, then the plugin runs again."""
    plugin = _plugin(tmp_path, expires_in=300)
    clock = Clock(1_700_000_000.0)  # 2023-11-14T22:13:20Z, the plugin's base time
    source = ExecTokenSource(
        {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "env": [{"name": "PREFIX", "value": "abc"}],
        },
        clock=clock,
    )
    assert await source.header() == "Bearer abc-1"
    assert json.loads((tmp_path / "info").read_text()) == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    clock.now += 280
    assert await source.header() == "Bearer abc-1"
    clock.now += 15  # within the 10 s leeway of the expiry
    assert await source.header() == "Bearer abc-2"
    assert source.runs == 2
    source.reset()  # a 401
    assert await source.header() == "Bearer abc-3"


async def test_failing_exec_plugin_is_a_clear_error(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, expires_in=None, exit_code=3)
    source = ExecTokenSource({"command": sys.executable, "args": [str(plugin)]})
    with pytest.raises(CredentialError, match="exit code 3: no credentials for you"):
        await source.header()
    with pytest.raises(CredentialError, match="cannot run"):
        await ExecTokenSource({"command": str(tmp_path / "missing")}).header()


async def test_exec_plugin_relative_command_is_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    """clientcmd ResolvePaths: an exec command with a path separator is relative to the kubeconfig's directory."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    plugin = _plugin(tmp_path, expires_in=None)
    wrapper = bin_dir / "auth"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {plugin}\n")
    wrapper.chmod(0o755)
    kubeconfig = _kubeconfig(
        tmp_path / "conf" / "kubeconfig",
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "../bin/auth"}},
    )
    creds = credentials_from_kubeconfig([str(kubeconfig)])
    assert await creds.authorization() == "Bearer tok-1"


# ------------------------------------------------------------------------------------------------ OIDC
def _jwt(exp: float, n: int = 0) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'iss': 'test', 'exp': int(exp), 'n': n})}.sig"


@pytest.fixture
async def idp() -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A minimal OpenID provider: discovery and a token endpoint for the refresh_token grant."""
    grants: list[dict[str, str]] = []
    app = web.Application()
    base: list[str] = []

    async def discovery(_: web.Request) -> web.Response:
        return web.json_response({"issuer": base[0], "token_endpoint": f"{base[0]}/token"})

    async def token(request: web.Request) -> web.Response:
        form = dict(await request.post())
        grants.append(
            {**{k: str(v) for k, v in form.items()}, "authorization": request.headers.get("Authorization", "")}
        )
        return web.json_response(
            {"id_token": _jwt(time.time() + 3600, len(grants)), "refresh_token": f"refresh-{len(grants) + 1}"}
        )

    app.router.add_get("/.well-known/openid-configuration", discovery)
    app.router.add_post("/token", token)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base.append(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}")  # type: ignore[union-attr]
    try:
        yield base[0], grants
    finally:
        await runner.cleanup()


async def test_oidc_id_token_is_used_until_exp_then_refreshed(idp: tuple[str, list[dict[str, str]]]) -> None:
    """oidc.go: a valid id-token is used as is; an expired one is replaced through the refresh_token grant
    (client id and secret as HTTP basic auth); the new refresh-token replaces the old one."""
    issuer, grants = idp
    clock = Clock(time.time())
    first = _jwt(clock.now + 120)
    source = OidcTokenSource(
        {
            "idp-issuer-url": issuer,
            "client-id": "kubectl",
            "client-secret": "s3cret",
            "id-token": first,
            "refresh-token": "refresh-1",
        },
        clock=clock,
    )
    assert await source.header() == f"Bearer {first}"
    assert jwt_expiry(first) == int(clock.now + 120)
    assert grants == []
    clock.now += 115  # within the leeway
    second = await source.header()
    assert second != f"Bearer {first}"
    assert grants[0]["grant_type"] == "refresh_token" and grants[0]["refresh_token"] == "refresh-1"
    assert grants[0]["authorization"] == "Basic " + base64.b64encode(b"kubectl:s3cret").decode()
    source.reset()  # a 401: refresh even though exp has not come
    assert await source.header() not in (second, None)
    assert grants[1]["refresh_token"] == "refresh-2"


async def test_oidc_without_refresh_token_is_a_clear_error() -> None:
    source = OidcTokenSource({"idp-issuer-url": "http://127.0.0.1:9", "client-id": "x", "id-token": _jwt(0)})
    with pytest.raises(CredentialError, match="no refresh-token"):
        await source.header()


# ------------------------------------------------------------------------------------------------ kubeconfig
def _kubeconfig(
    path: Path,
    user: dict[str, Any],
    *,
    cluster: dict[str, Any] | None = None,
    current: str | None = "c",
    names: tuple[str, str, str] = ("k", "u", "c"),
    namespace: str | None = None,
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    k, u, c = names
    context: dict[str, Any] = {"cluster": k, "user": u}
    if namespace:
        context["namespace"] = namespace
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": k, "cluster": cluster or {"server": "https://k.example:6443"}}],
        "users": [{"name": u, "user": user}],
        "contexts": [{"name": c, "context": context}],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def test_kubeconfig_list_first_file_wins(tmp_path: Path) -> None:
    """clientcmd loader.go: the first file to set current-context wins; the first to define a name wins (not
    merged); missing files in the list are skipped."""
    a = _kubeconfig(
        tmp_path / "a",
        {"token": "from-a"},
        cluster={"server": "https://a.example"},
        current="c-b",
        names=("shared", "ua", "c-a"),
    )
    b = _kubeconfig(
        tmp_path / "b",
        {"token": "from-b"},
        cluster={"server": "https://b.example", "tls-server-name": "ignored"},
        current="c-a",
        names=("shared", "ub", "c-b"),
        namespace="team-b",
    )
    creds = credentials_from_kubeconfig([str(tmp_path / "missing"), str(a), str(b)])
    # current-context c-b (a's, the first set), which names cluster "shared" (a's definition) and user ub (b's)
    assert creds.settings.server == "https://a.example"
    assert creds.settings.tls_server_name is None  # a's cluster entry is taken whole, nothing from b's
    assert creds.settings.default_namespace == "team-b"


async def test_load_credentials_reads_the_kubeconfig_env_list(tmp_path: Path) -> None:
    a = _kubeconfig(tmp_path / "a", {"token": "tok-a"}, current=None, names=("k", "u", "c"))
    b = _kubeconfig(tmp_path / "b", {"token": "tok-b"}, current="c", names=("k2", "u2", "c"))
    creds = await load_credentials(environ={"KUBECONFIG": os.pathsep.join([str(a), str(b)])})
    assert await creds.authorization() == "Bearer tok-a"  # context "c" is a's: b's same-named one is ignored


def test_kubeconfig_cluster_settings_are_honoured(tmp_path: Path) -> None:
    """tls-server-name, proxy-url, CA data, insecure-skip-tls-verify, client certificate data and files."""
    ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "client.crt").write_text("CERT")
    cfg = _kubeconfig(
        tmp_path / "kc",
        {"client-certificate": "certs/client.crt", "client-key-data": base64.b64encode(b"KEY").decode()},
        cluster={
            "server": "https://10.0.0.1:6443/",
            "tls-server-name": "kubernetes.default",
            "proxy-url": "http://proxy.example:3128",
            "certificate-authority-data": base64.b64encode(ca_pem.encode()).decode(),
        },
    )
    (tmp_path / "kc").rename(tmp_path / "config")
    s = credentials_from_kubeconfig([str(tmp_path / "config")]).settings
    assert cfg.name == "kc"
    assert s.server == "https://10.0.0.1:6443"
    assert (s.tls_server_name, s.proxy_url, s.ca_data, s.verify) == (
        "kubernetes.default",
        "http://proxy.example:3128",
        ca_pem,
        True,
    )
    assert s.cert_path == str(tmp_path / "certs" / "client.crt")  # relative to the kubeconfig's directory
    assert s.key_path is not None and Path(s.key_path).read_bytes() == b"KEY"


@pytest.mark.parametrize(
    ("user", "cluster", "match"),
    [
        ({"auth-provider": {"name": "gcp"}}, None, "auth-provider 'gcp' is not supported"),
        ({}, {"server": "k.example:6443"}, "must be an http"),
        ({}, {"server": "https://k", "proxy-url": "socks5://p:1080"}, "only http:// and https:// proxies"),
        ({}, {"server": "https://k", "certificate-authority-data": "%%%"}, "not valid base64"),
    ],
)
def test_kubeconfig_errors_name_the_field(
    tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any] | None, match: str
) -> None:
    path = _kubeconfig(tmp_path / "kc", user, cluster=cluster)
    with pytest.raises(CredentialError, match=match):
        credentials_from_kubeconfig([str(path)])


def test_kubeconfig_without_current_context_or_files(tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match="no current-context"):
        credentials_from_kubeconfig([str(_kubeconfig(tmp_path / "kc", {}, current=None))])
    with pytest.raises(CredentialError, match="no kubeconfig file found"):
        credentials_from_kubeconfig([str(tmp_path / "nope")])


async def test_kubeconfig_token_file_and_basic_auth(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("file-token")
    creds = credentials_from_kubeconfig([str(_kubeconfig(tmp_path / "kc", {"tokenFile": "tok"}))])
    assert await creds.authorization() == "Bearer file-token"
    assert isinstance(creds.auth, FileTokenSource)
    creds = credentials_from_kubeconfig([str(_kubeconfig(tmp_path / "kc2", {"username": "ann", "password": "pw"}))])
    assert await creds.authorization() == "Basic " + base64.b64encode(b"ann:pw").decode()
    info = await creds.kopf_login()
    assert (info["username"], info["password"]) == ("ann", "pw")


# ------------------------------------------------------------------------------------------------ in-cluster
async def test_in_cluster_token_rotates(tmp_path: Path) -> None:
    """rest.InClusterConfig: host and port from the environment, the token file re-read (NewCachedFileTokenSource)."""
    (tmp_path / "token").write_text("sa-1")
    (tmp_path / "namespace").write_text("gangsched-system")
    (tmp_path / "ca.crt").write_text("CA")
    clock = Clock()
    creds = credentials_in_cluster(
        environ={"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"},
        account_dir=str(tmp_path),
        clock=clock,
    )
    assert creds.settings.server == "https://[fd00::1]:443"
    assert creds.settings.default_namespace == "gangsched-system"
    assert creds.settings.ca_path == str(tmp_path / "ca.crt")
    assert await creds.authorization() == "Bearer sa-1"
    (tmp_path / "token").write_text("sa-2-rotated")
    assert await creds.authorization() == "Bearer sa-2-rotated"


def test_not_in_cluster_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match="KUBERNETES_SERVICE_HOST"):
        credentials_in_cluster(environ={}, account_dir=str(tmp_path))


async def test_refresh_after_401_happens_once_for_requests_that_failed_together(tmp_path: Path) -> None:
    """Many requests rejected with the same token cause one refresh, not one each (one plugin run)."""
    plugin = _plugin(tmp_path, expires_in=None)
    creds = credentials_from_kubeconfig(
        [
            str(
                _kubeconfig(
                    tmp_path / "kc",
                    {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": sys.executable,
                            "args": [str(plugin)],
                        }
                    },
                )
            )
        ]
    )
    sent = await creds.authorization()
    assert all([await creds.refresh(sent) for _ in range(5)])
    assert await creds.authorization() == "Bearer tok-2"
    assert (tmp_path / "runs").read_text() == "2"


async def test_kopf_gets_the_same_fresh_credentials(tmp_path: Path) -> None:
    """The Kopf login handler builds kopf.ConnectionInfo from the same source, with an expiration, so Kopf logs in
    again before the token goes stale (kopf's Vault expires ConnectionInfo at `expiration`)."""
    (tmp_path / "token").write_text("sa-1")
    clock = Clock(time.time())
    creds = credentials_in_cluster(
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
        account_dir=str(tmp_path),
        clock=clock,
    )
    info = kopf.ConnectionInfo(**await creds.kopf_login())
    assert (info.server, info.scheme, info.token) == ("https://10.0.0.1:443", "Bearer", "sa-1")
    assert info.expiration is not None and info.expiration.timestamp() == pytest.approx(clock.now + 50)
    (tmp_path / "token").write_text("sa-2")
    assert kopf.ConnectionInfo(**await creds.kopf_login()).token == "sa-2"
