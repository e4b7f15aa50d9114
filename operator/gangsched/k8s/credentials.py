"""Where the API server is and how to authenticate, with credentials that stay fresh. Contract:
- `await load_credentials(kubeconfig=None, *, context=None, environ=None)` -> Credentials: the kubeconfig path
  given (a list, like $KUBECONFIG), else $KUBECONFIG, else ~/.kube/config, else in-cluster; files merge as kubectl
  merges them. Honoured: server, TLS, proxy and client-certificate settings, the context's namespace, and one of
  `token`, `tokenFile`, `exec`, `auth-provider: oidc`, `username`/`password`; anything else is refused clearly.
- Tokens stay fresh (files re-read, exec and OIDC renewed before expiry); `await credentials.authorization()` is
  the header to send now; `await credentials.refresh(sent)` after a 401 renews once and says whether repeating can
  help; `await credentials.kopf_login()` gives Kopf the same source.
- `refuse_credentials_over_http(credentials, allow=False)` raises InsecureTransportError for credentials to an
  http:// server unless allowed, as client-go never sends them.
More: docs/modules.md#k8scredentialspy.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import binascii
import contextlib
import datetime as dt
import json
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import yaml

log = logging.getLogger(__name__)

Clock = Callable[[], float]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_PERIOD = 60.0  # client-go NewCachedFileTokenSource: re-read a token file every minute
TOKEN_LEEWAY = 10.0  # ... 10 s before that; and an expiring token is renewed this long before its expiry


class CredentialError(Exception):
    """The configuration cannot give credentials (bad kubeconfig, failing exec plugin, unreadable token)."""


@dataclass(frozen=True)
class ConnectionSettings:
    """Where the API server is and how to reach it (the transport); the token comes from `Credentials`."""

    server: str
    ca_path: str | None = None
    ca_data: str | None = None  # PEM
    verify: bool = True
    cert_path: str | None = None
    key_path: str | None = None
    token: str | None = None  # a static token, when that is all there is (tests, the emulator)
    default_namespace: str | None = None
    tls_server_name: str | None = None
    proxy_url: str | None = None


class AuthSource(Protocol):
    async def header(self) -> str | None:
        """The Authorization header value to use now."""

    def reset(self) -> None:
        """Forget the cached credential: the next header() obtains a new one."""

    @property
    def expiry(self) -> float | None:
        """When the cached credential must be renewed (epoch seconds), None: never."""


class StaticAuth:
    def __init__(self, value: str | None) -> None:
        self._value = value

    @property
    def empty(self) -> bool:
        return self._value is None

    async def header(self) -> str | None:
        return self._value

    def reset(self) -> None:
        pass

    @property
    def expiry(self) -> float | None:
        return None


class FileTokenSource:
    """A bearer token read from a file, re-read when the file changes and at least every `period` - `leeway`
    seconds (client-go transport.NewCachedFileTokenSource); a failed read keeps the last good token."""

    def __init__(
        self, path: str, *, period: float = TOKEN_PERIOD, leeway: float = TOKEN_LEEWAY, clock: Clock = time.time
    ) -> None:
        self.path = path
        self._period = period
        self._leeway = leeway
        self._clock = clock
        self._token: str | None = None
        self._read_at = 0.0
        self._stamp: tuple[int, int, int] | None = None
        self.reads = 0

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    async def header(self) -> str | None:
        token = self.token()
        return f"Bearer {token}" if token else None

    def token(self) -> str | None:
        now = self._clock()
        stamp = self._stat()
        fresh = now < self._read_at + self._period - self._leeway
        if self._token is not None and fresh and stamp == self._stamp:
            return self._token
        try:
            text = Path(self.path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            if self._token is None:
                raise CredentialError(f"cannot read the token file {self.path}: {exc.strerror}") from None
            log.error("cannot re-read the token file %s (%s); keeping the last token", self.path, exc.strerror)
            return self._token
        if not text:
            if self._token is None:
                raise CredentialError(f"the token file {self.path} is empty")
            log.error("the token file %s is empty; keeping the last token", self.path)
            return self._token
        self.reads += 1
        self._token, self._read_at, self._stamp = text, now, stamp
        return text

    def reset(self) -> None:
        self._read_at = float("-inf")

    @property
    def expiry(self) -> float | None:
        return self._read_at + self._period if self._token is not None else None


def _parse_time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class ExecTokenSource:
    """A client.authentication.k8s.io ExecCredential plugin (kubeconfig `users[].user.exec`), run when there is no
    cached token or it is within `leeway` of its expirationTimestamp (client-go plugin/pkg/client/auth/exec)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        base_dir: str = ".",
        leeway: float = TOKEN_LEEWAY,
        clock: Clock = time.time,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        command = config.get("command")
        if not isinstance(command, str) or not command:
            raise CredentialError("kubeconfig user.exec.command: must be a non-empty string")
        # a relative path with a separator is relative to the kubeconfig's directory (client-go ResolvePaths)
        if os.sep in command and not os.path.isabs(command):
            command = os.path.join(base_dir, command)
        self.command = command
        self.args = [str(a) for a in (config.get("args") or [])]
        self.api_version = str(config.get("apiVersion") or "client.authentication.k8s.io/v1")
        self.env = {str(e["name"]): str(e["value"]) for e in (config.get("env") or []) if isinstance(e, Mapping)}
        self._leeway = leeway
        self._clock = clock
        self._environ = environ
        self._token: str | None = None
        self._expiry: float | None = None
        self.cert_data: str | None = None
        self.key_data: str | None = None
        self.runs = 0
        self._lock = asyncio.Lock()

    def _valid(self) -> bool:
        return self._token is not None and (self._expiry is None or self._clock() < self._expiry - self._leeway)

    async def header(self) -> str | None:
        if not self._valid():
            async with self._lock:
                if not self._valid():
                    await self._run()
        return f"Bearer {self._token}" if self._token else None

    async def _run(self) -> None:
        env = dict(os.environ if self._environ is None else self._environ)
        env.update(self.env)
        info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
        env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await proc.communicate()
        except OSError as exc:
            raise CredentialError(f"exec plugin {self.command}: cannot run ({exc.strerror})") from None
        self.runs += 1
        if proc.returncode != 0:
            raise CredentialError(
                f"exec plugin {self.command}: exit code {proc.returncode}: {err.decode(errors='replace')[:200]}"
            )
        try:
            cred = json.loads(out)
        except ValueError:
            raise CredentialError(
                f"exec plugin {self.command}: output is not an ExecCredential (JSON): {out[:200]!r}"
            ) from None
        if (
            not isinstance(cred, dict)
            or cred.get("kind") != "ExecCredential"
            or cred.get("apiVersion") != self.api_version
        ):
            raise CredentialError(f"exec plugin {self.command}: expected an ExecCredential of {self.api_version}")
        status = cred.get("status") or {}
        token = status.get("token")
        if not token and not status.get("clientCertificateData"):
            raise CredentialError(f"exec plugin {self.command}: status has neither token nor clientCertificateData")
        self._token = str(token) if token else None
        stamp = status.get("expirationTimestamp")
        self._expiry = _parse_time(str(stamp)) if stamp else None
        self.cert_data = status.get("clientCertificateData")
        self.key_data = status.get("clientKeyData")

    def reset(self) -> None:
        self._token = None

    @property
    def expiry(self) -> float | None:
        return self._expiry


def jwt_expiry(token: str) -> float | None:
    """The `exp` claim of a JWT (seconds since the epoch), None when it has none or is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) else None


class OidcTokenSource:
    """`auth-provider: oidc` (client-go plugin/pkg/client/auth/oidc): the id-token until its JWT exp (minus leeway),
    then a new one from the issuer's token endpoint (OpenID discovery, then the refresh_token grant with the
    client's id and secret). The refreshed tokens are kept in memory (kubectl also writes them back to the file)."""

    def __init__(
        self, config: Mapping[str, Any], *, base_dir: str = ".", leeway: float = TOKEN_LEEWAY, clock: Clock = time.time
    ) -> None:
        self._config = dict(config)
        for key in ("idp-issuer-url", "client-id"):
            if not self._config.get(key):
                raise CredentialError(f"kubeconfig auth-provider oidc: config.{key} is required")
        self._ca = _file(self._config, "idp-certificate-authority", base_dir)
        if self._config.get("idp-certificate-authority-data"):
            self._ca = _data_file(
                str(self._config["idp-certificate-authority-data"]), "auth-provider oidc idp-certificate-authority-data"
            )
        self._leeway = leeway
        self._clock = clock
        self._forced = False
        self._lock = asyncio.Lock()

    def _valid(self) -> bool:
        token = self._config.get("id-token")
        if not token or self._forced:
            return False
        exp = jwt_expiry(str(token))
        return exp is None or self._clock() < exp - self._leeway

    async def header(self) -> str | None:
        if not self._valid():
            async with self._lock:
                if not self._valid():
                    await self._refresh()
        return f"Bearer {self._config['id-token']}"

    async def _refresh(self) -> None:
        refresh_token = self._config.get("refresh-token")
        if not refresh_token:
            raise CredentialError(
                "kubeconfig auth-provider oidc: the id-token is missing or expired and there is no refresh-token"
            )
        issuer = str(self._config["idp-issuer-url"]).rstrip("/")
        ssl_ctx: ssl.SSLContext | bool = ssl.create_default_context(cafile=self._ca) if self._ca else True
        basic = base64.b64encode(
            f"{self._config['client-id']}:{self._config.get('client-secret') or ''}".encode()
        ).decode()
        try:
            async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=ssl_ctx), timeout=aiohttp.ClientTimeout(total=30)
            ) as http:
                async with http.get(f"{issuer}/.well-known/openid-configuration") as resp:
                    resp.raise_for_status()
                    endpoint = (await resp.json(content_type=None))["token_endpoint"]
                form = {"grant_type": "refresh_token", "refresh_token": str(refresh_token)}
                async with http.post(endpoint, data=form, headers={"Authorization": f"Basic {basic}"}) as resp:
                    resp.raise_for_status()
                    answer = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, KeyError, ValueError) as exc:
            raise CredentialError(f"oidc: refreshing the id-token at {issuer} failed: {exc!r}") from None
        if not isinstance(answer, dict) or not answer.get("id_token"):
            raise CredentialError(f"oidc: the token endpoint of {issuer} returned no id_token")
        self._config["id-token"] = str(answer["id_token"])
        if answer.get("refresh_token"):
            self._config["refresh-token"] = str(answer["refresh_token"])
        self._forced = False

    def reset(self) -> None:
        self._forced = True

    @property
    def expiry(self) -> float | None:
        token = self._config.get("id-token")
        return jwt_expiry(str(token)) if token else None


class Credentials:
    """Connection settings plus an auth source; see the module docstring."""

    def __init__(self, settings: ConnectionSettings, auth: AuthSource | None = None) -> None:
        self.settings = settings
        self.auth: AuthSource = (
            auth if auth is not None else StaticAuth(f"Bearer {settings.token}" if settings.token else None)
        )
        self._refresh_lock = asyncio.Lock()

    async def authorization(self) -> str | None:
        return await self.auth.header()

    async def refresh(self, sent: str | None) -> bool:
        """After a 401 for a request sent with header `sent`: obtain new credentials (once for all the requests
        that failed with the same header); True if the header to use now differs from `sent`."""
        async with self._refresh_lock:
            current = await self.auth.header()
            if current != sent:
                return True  # refreshed meanwhile (by another request's 401, or the file changed)
            self.auth.reset()
            try:
                current = await self.auth.header()
            except CredentialError as exc:
                log.error("refreshing credentials after 401 Unauthorized failed: %s", exc)
                return False
            return current != sent

    async def kopf_login(self) -> dict[str, Any]:
        """Keyword arguments of kopf.ConnectionInfo, from the same source and as fresh as the client's."""
        s = self.settings
        header = await self.authorization()
        scheme, _, secret = (header or "").partition(" ")
        expiry = self.auth.expiry
        info: dict[str, Any] = {
            "server": s.server,
            "ca_path": s.ca_path,
            "ca_data": s.ca_data if not s.ca_path else None,
            "insecure": not s.verify,
            "certificate_path": s.cert_path,
            "private_key_path": s.key_path,
            "default_namespace": s.default_namespace,
            "proxy_url": s.proxy_url,
            "expiration": dt.datetime.fromtimestamp(expiry - TOKEN_LEEWAY, dt.UTC) if expiry is not None else None,
        }
        if scheme == "Basic":
            user, _, password = base64.b64decode(secret).decode().partition(":")
            info.update(username=user, password=password)
        elif header:
            info.update(scheme=scheme, token=secret)
        return info


class InsecureTransportError(CredentialError):
    """Credentials would go to a plain-http server (see the module docstring)."""


def sends_credentials(credentials: Credentials) -> bool:
    """Whether requests carry an Authorization header (a client certificate is never sent over http)."""
    auth = credentials.auth
    return not (isinstance(auth, StaticAuth) and auth.empty)


def refuse_credentials_over_http(credentials: Credentials, *, allow: bool = False) -> None:
    server = credentials.settings.server
    if not server.lower().startswith("http://") or not sends_credentials(credentials):
        return
    if allow:
        log.warning("sending credentials to %s over plain http (--allow-insecure-http)", server)
        return
    raise InsecureTransportError(
        f"refusing to send the kubeconfig's credentials to {server} over plain http (kubectl never sends them "
        f"there either): use an https:// server, or pass --allow-insecure-http to send them anyway"
    )


# ------------------------------------------------------------------------------------------------ kubeconfig
def _named(section: Any, what: str, path: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for item in section or []:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise CredentialError(f"kubeconfig {path}: every entry of {what} needs a name")
        out.append((item["name"], dict(item)))
    return out


def merge_kubeconfigs(paths: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The merged kubeconfig of `paths` (kubectl's rules: first definition of a name wins, first current-context
    wins, missing files skipped) and, per "clusters/NAME" and "users/NAME", the directory of the file that defined
    it (for relative paths)."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "current-context": ""}
    origin: dict[str, str] = {}
    seen: set[str] = set()
    loaded = 0
    for path in paths:
        if not path or not os.path.exists(path):
            continue
        try:
            doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CredentialError(f"kubeconfig {path}: cannot be read as YAML ({exc})") from None
        if not isinstance(doc, Mapping):
            raise CredentialError(f"kubeconfig {path}: must be a YAML mapping")
        loaded += 1
        base = os.path.dirname(os.path.abspath(path))
        for section in ("clusters", "users", "contexts"):
            for name, item in _named(doc.get(section), section, path):
                key = f"{section}/{name}"
                if key not in seen:
                    seen.add(key)
                    origin[key] = base
                    merged[section].append(item)
        if not merged["current-context"] and doc.get("current-context"):
            merged["current-context"] = str(doc["current-context"])
    if not loaded:
        raise CredentialError(f"no kubeconfig file found among {os.pathsep.join(paths)!r}")
    return merged, origin


def _find(merged: dict[str, Any], section: str, name: str) -> dict[str, Any] | None:
    for item in merged[section]:
        if item["name"] == name:
            return dict(item.get(section[:-1]) or {})
    return None


_TEMP_FILES: list[str] = []


def _cleanup() -> None:
    for path in _TEMP_FILES:
        with contextlib.suppress(OSError):
            os.unlink(path)


atexit.register(_cleanup)


def _data_file(b64: str, what: str) -> str:
    """Write base64 `-data` to a private temporary file (ssl loads client certificates from files only)."""
    try:
        content = base64.b64decode(b64, validate=True)
    except (ValueError, binascii.Error):
        raise CredentialError(f"kubeconfig {what}: not valid base64") from None
    fd, path = tempfile.mkstemp(prefix="gangsched-", suffix=".pem")
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    _TEMP_FILES.append(path)
    return path


def _file(entry: Mapping[str, Any], key: str, base: str) -> str | None:
    value = entry.get(key)
    if not value:
        return None
    path = os.path.expanduser(str(value))
    return path if os.path.isabs(path) else os.path.join(base, path)


def credentials_from_kubeconfig(
    paths: list[str],
    *,
    context: str | None = None,
    clock: Clock = time.time,
    environ: Mapping[str, str] | None = None,
) -> Credentials:
    merged, origin = merge_kubeconfigs(paths)
    ctx_name = context or merged["current-context"]
    if not ctx_name:
        raise CredentialError("kubeconfig: no current-context set and no context given")
    ctx = _find(merged, "contexts", ctx_name)
    if ctx is None:
        raise CredentialError(f"kubeconfig: context {ctx_name!r} is not defined")
    cluster_name = str(ctx.get("cluster") or "")
    cluster = _find(merged, "clusters", cluster_name)
    if cluster is None:
        raise CredentialError(f"kubeconfig context {ctx_name!r}: cluster {cluster_name!r} is not defined")
    user_name = str(ctx.get("user") or "")
    user = _find(merged, "users", user_name) if user_name else {}
    if user is None:
        raise CredentialError(f"kubeconfig context {ctx_name!r}: user {user_name!r} is not defined")
    cbase = origin.get(f"clusters/{cluster_name}", ".")
    ubase = origin.get(f"users/{user_name}", ".")
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("http://", "https://")):
        raise CredentialError(f"kubeconfig cluster {cluster_name!r}: server {server!r} must be an http(s):// URL")
    proxy = cluster.get("proxy-url")
    if proxy and not str(proxy).startswith(("http://", "https://")):
        raise CredentialError(
            f"kubeconfig cluster {cluster_name!r}: proxy-url {proxy!r}: only http:// and https:// proxies are supported"
        )
    ca_data = None
    if cluster.get("certificate-authority-data"):
        try:
            ca_data = base64.b64decode(str(cluster["certificate-authority-data"]), validate=True).decode()
        except (ValueError, binascii.Error):
            raise CredentialError(
                f"kubeconfig cluster {cluster_name!r}: certificate-authority-data is not valid base64"
            ) from None
    cert_path = _file(user, "client-certificate", ubase)
    key_path = _file(user, "client-key", ubase)
    if user.get("client-certificate-data"):
        cert_path = _data_file(str(user["client-certificate-data"]), f"user {user_name!r} client-certificate-data")
    if user.get("client-key-data"):
        key_path = _data_file(str(user["client-key-data"]), f"user {user_name!r} client-key-data")
    settings = ConnectionSettings(
        server=server,
        ca_path=None if ca_data else _file(cluster, "certificate-authority", cbase),
        ca_data=ca_data,
        verify=not bool(cluster.get("insecure-skip-tls-verify")),
        cert_path=cert_path,
        key_path=key_path,
        default_namespace=str(ctx["namespace"]) if ctx.get("namespace") else None,
        tls_server_name=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
        proxy_url=str(proxy) if proxy else None,
    )
    auth: AuthSource
    provider = user.get("auth-provider")
    if provider:
        name = (provider or {}).get("name")
        if name != "oidc":
            raise CredentialError(
                f"kubeconfig user {user_name!r}: auth-provider {name!r} is not supported (only oidc; use an exec "
                "plugin)"
            )
        auth = OidcTokenSource(provider.get("config") or {}, base_dir=ubase, clock=clock)
    elif user.get("exec"):
        auth = ExecTokenSource(user["exec"], base_dir=ubase, clock=clock, environ=environ)
    elif user.get("token"):
        auth = StaticAuth(f"Bearer {user['token']}")
    elif user.get("tokenFile"):
        auth = FileTokenSource(_file(user, "tokenFile", ubase) or "", clock=clock)
    elif user.get("username") and user.get("password"):
        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
        auth = StaticAuth(f"Basic {basic}")
    else:
        auth = StaticAuth(None)
    return Credentials(settings, auth)


def credentials_in_cluster(
    *,
    environ: Mapping[str, str] | None = None,
    account_dir: str = SERVICE_ACCOUNT_DIR,
    clock: Clock = time.time,
) -> Credentials:
    """The pod's service account (client-go rest.InClusterConfig): server from KUBERNETES_SERVICE_HOST/PORT, the
    projected token file re-read as it rotates, the cluster CA, the pod's namespace."""
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise CredentialError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT are unset, and no kubeconfig was found")
    if ":" in host:
        host = f"[{host}]"
    token = FileTokenSource(os.path.join(account_dir, "token"), clock=clock)
    token.token()  # fail now, clearly, if there is no token
    ns_file = Path(account_dir, "namespace")
    namespace = ns_file.read_text().strip() if ns_file.exists() else None
    ca = os.path.join(account_dir, "ca.crt")
    settings = ConnectionSettings(
        server=f"https://{host}:{port}", ca_path=ca if os.path.exists(ca) else None, default_namespace=namespace
    )
    return Credentials(settings, token)


def kubeconfig_paths(kubeconfig: str | None, environ: Mapping[str, str]) -> list[str]:
    if kubeconfig:
        return [os.path.expanduser(p) for p in kubeconfig.split(os.pathsep) if p]
    if environ.get("KUBECONFIG"):
        return [os.path.expanduser(p) for p in environ["KUBECONFIG"].split(os.pathsep) if p]
    return [os.path.expanduser("~/.kube/config")]


async def load_credentials(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    clock: Clock = time.time,
) -> Credentials:
    env = os.environ if environ is None else environ
    paths = kubeconfig_paths(kubeconfig, env)
    if any(os.path.exists(p) for p in paths):
        creds = credentials_from_kubeconfig(paths, context=context, clock=clock, environ=env)
        auth = creds.auth
        if isinstance(auth, ExecTokenSource):  # a plugin may hand out a client certificate instead of a token
            await auth.header()
            if auth.cert_data and auth.key_data:
                creds.settings = replace(
                    creds.settings, cert_path=_pem_file(auth.cert_data), key_path=_pem_file(auth.key_data)
                )
        return creds
    if kubeconfig:
        raise CredentialError(f"--kubeconfig {kubeconfig}: no such file")
    return credentials_in_cluster(environ=env, clock=clock)


def _pem_file(pem: str) -> str:
    fd, path = tempfile.mkstemp(prefix="gangsched-", suffix=".pem")
    with os.fdopen(fd, "w") as f:
        f.write(pem)
    _TEMP_FILES.append(path)
    return path


__all__ = [
    "AuthSource",
    "ConnectionSettings",
    "CredentialError",
    "Credentials",
    "ExecTokenSource",
    "FileTokenSource",
    "InsecureTransportError",
    "OidcTokenSource",
    "StaticAuth",
    "credentials_from_kubeconfig",
    "credentials_in_cluster",
    "jwt_expiry",
    "load_credentials",
    "merge_kubeconfigs",
    "refuse_credentials_over_http",
    "sends_credentials",
]
