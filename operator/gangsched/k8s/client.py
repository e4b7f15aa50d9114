"""The operator's HTTP client for the Kubernetes API: raw JSON over aiohttp, parsed with orjson.

Contract:
- Connection settings (server, TLS material, bearer token) come from kubernetes_asyncio's own kubeconfig and
  in-cluster loaders, so the operator connects the way kubectl and the library do.
- Requests and watches are made here, without kubernetes_asyncio's model (de)serialization, which costs about
  1 ms per pod: bodies are dicts in, dicts out.
- A non-2xx answer raises ApiError carrying the HTTP status and the Kubernetes `Status` reason and message.
- `watch()` yields (type, object) pairs from one watch request; it ends when the server closes the stream. A watch
  ERROR event is raised as ApiError (410 Gone included), so callers relist.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import Configuration

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    """A Kubernetes API call that did not succeed."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def transient(self) -> bool:
        """Worth retrying: throttling, server errors and timeouts."""
        return self.status in (429, 500, 502, 503, 504) or self.status == 0


def resource_path(
    *,
    group: str,
    version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """The REST path of a collection, an object or a subresource."""
    base = f"/api/{version}" if group in ("", "core") else f"/apis/{group}/{version}"
    if namespace is not None:
        base += f"/namespaces/{quote(namespace)}"
    base += f"/{plural}"
    if name is not None:
        base += f"/{quote(name)}"
        if subresource:
            base += f"/{subresource}"
    return base


@dataclass(frozen=True)
class ConnectionSettings:
    """Where the API server is and how to authenticate, independent of any client library."""

    server: str
    ca_path: str | None = None
    verify: bool = True
    cert_path: str | None = None
    key_path: str | None = None
    token: str | None = None
    default_namespace: str | None = None


async def load_connection(kubeconfig: str | None = None) -> ConnectionSettings:
    """Read connection settings: the given kubeconfig, else $KUBECONFIG or ~/.kube/config, else in-cluster."""
    cfg = Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    namespace: str | None = None
    if os.path.exists(path):
        loader = await k8s_config.load_kube_config(config_file=path, client_configuration=cfg, persist_config=False)
        context = loader.current_context or {}
        namespace = (context.get("context") or {}).get("namespace") if isinstance(context, Mapping) else None
    else:
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        ns_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
        if os.path.exists(ns_file):
            with open(ns_file) as f:
                namespace = f.read().strip()
    token = None
    auth = await cfg.auth_settings()
    if "BearerToken" in auth:
        token = str(auth["BearerToken"]["value"]).removeprefix("Bearer ").strip()
    return ConnectionSettings(
        server=str(cfg.host or "").rstrip("/"),
        ca_path=cfg.ssl_ca_cert,
        verify=bool(cfg.verify_ssl),
        cert_path=cfg.cert_file,
        key_path=cfg.key_file,
        token=token,
        default_namespace=namespace,
    )


def _before_send_trace() -> aiohttp.TraceConfig:
    """Calls a request's `before_send` hook when its connection is acquired (reused or new; aiohttp releases it if
    the hook raises) and again right before its body is written (aiohttp sends the buffered headers with the first
    body chunk, in a task of its own: one more turn of the event loop). A hook that raises then leaves the request
    unsent; aiohttp reports it as a connection error (ApiError status 0)."""

    async def hook(_session: aiohttp.ClientSession, ctx: Any, _params: Any) -> None:
        request_ctx = getattr(ctx, "trace_request_ctx", None)
        if request_ctx:
            before = request_ctx.get("before_send")
            if before is not None:
                before()

    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(hook)
    trace.on_connection_create_end.append(hook)
    trace.on_request_chunk_sent.append(hook)
    return trace


class KubeClient:
    """A small async client of the Kubernetes REST API over one aiohttp session (see module docstring)."""

    def __init__(self, settings: ConnectionSettings, *, max_connections: int = 100, user_agent: str = "gangsched") -> None:
        self.settings = settings
        ssl_context: ssl.SSLContext | bool = False
        if settings.server.startswith("https"):
            if settings.verify:
                ssl_context = ssl.create_default_context(cafile=settings.ca_path)
            else:
                ssl_context = ssl.create_default_context()
                ssl_context.check_hostname = False
                ssl_context.verify_mode = ssl.CERT_NONE
            if settings.cert_path:
                ssl_context.load_cert_chain(settings.cert_path, settings.key_path)
        headers = {"Accept": JSON, "User-Agent": user_agent}
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        self._session = aiohttp.ClientSession(
            base_url=settings.server,
            headers=headers,
            connector=aiohttp.TCPConnector(limit=max_connections, ssl=ssl_context),
            json_serialize=lambda obj: orjson.dumps(obj).decode(),
            trace_configs=[_before_send_trace()],
        )

    @classmethod
    async def connect(cls, kubeconfig: str | None = None, **kwargs: Any) -> KubeClient:
        return cls(await load_connection(kubeconfig), **kwargs)

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = 30.0,
        before_send: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """One call; returns the parsed JSON body, raises ApiError on a non-2xx answer or a broken connection.
        `before_send()` runs once a connection is in hand and again right before the body is written (no wait
        between it and the write): it may raise to abort the request unsent (the leader fence, k8s/fence.py)."""
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else None
        try:
            async with self._session.request(
                method,
                path,
                params=params,
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                trace_request_ctx={"before_send": before_send} if before_send is not None else None,
            ) as response:
                raw = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, "ConnectionError", f"{method} {path}: {exc!r}") from exc
        parsed: dict[str, Any] = orjson.loads(raw) if raw else {}
        if status >= 300:
            raise ApiError(status, str(parsed.get("reason", "")), str(parsed.get("message", raw[:200])))
        return parsed

    async def get(self, path: str, **kwargs: Any) -> dict[str, Any]:
        return await self.request("GET", path, **kwargs)

    async def create(self, path: str, body: Any, **kwargs: Any) -> dict[str, Any]:
        return await self.request("POST", path, body=body, **kwargs)

    async def replace(self, path: str, body: Any, **kwargs: Any) -> dict[str, Any]:
        return await self.request("PUT", path, body=body, **kwargs)

    async def patch(self, path: str, body: Any, *, content_type: str = MERGE_PATCH, **kwargs: Any) -> dict[str, Any]:
        return await self.request("PATCH", path, body=body, content_type=content_type, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> dict[str, Any]:
        return await self.request("DELETE", path, **kwargs)

    async def list_all(self, path: str, *, params: Mapping[str, str] | None = None, page: int = 5000) -> tuple[list[Any], str]:
        """Every item of a collection, page by page; returns (items, resourceVersion of the list)."""
        items: list[Any] = []
        query = dict(params or {})
        query["limit"] = str(page)
        while True:
            result = await self.get(path, params=query, timeout=120.0)
            items.extend(result.get("items") or [])
            meta = result.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                return items, str(meta.get("resourceVersion", ""))
            query["continue"] = cont

    async def watch(
        self,
        path: str,
        *,
        resource_version: str,
        params: Mapping[str, str] | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Events of one watch request, as (type, object); BOOKMARK events are yielded too."""
        query = dict(params or {})
        query.update(
            watch="true",
            resourceVersion=resource_version,
            allowWatchBookmarks="true",
            timeoutSeconds=str(timeout_seconds),
        )
        try:
            async with self._session.get(
                path,
                params=query,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=timeout_seconds + 30),
            ) as response:
                if response.status >= 300:
                    raw = await response.read()
                    parsed = orjson.loads(raw) if raw else {}
                    raise ApiError(response.status, str(parsed.get("reason", "")), str(parsed.get("message", "")))
                buffer = b""
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = orjson.loads(line)
                        kind = event.get("type", "")
                        obj = event.get("object") or {}
                        if kind == "ERROR":
                            raise ApiError(int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", "")))
                        yield kind, obj
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, "ConnectionError", f"watch {path}: {exc!r}") from exc
