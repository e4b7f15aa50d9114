"""The operator's HTTP client for the Kubernetes API: raw JSON over aiohttp, parsed with orjson (no model objects).

Contract:
- Credentials: k8s/credentials.py, asked per request; a 401 renews them and sends the request again, once.
- Every failure is an ApiError(status, reason, message) (k8s/errors.py): the `Status` reason and message, or the
  HTTP reason and an excerpt of the body; `InvalidResponse` for a 2xx that is not JSON; status 0 for no answer;
  `Retry-After` kept.
- Every call runs under a RetryPolicy (k8s/retry.py; `retry=` per call). With `qps` set, every request and watch
  start takes a token from one client-side bucket (k8s/ratelimit.py); Lease requests are exempt.
- `requests` counts requests by (verb, HTTP code); `watch()` yields (type, object) pairs of one watch request
  (`on_open` when accepted) and raises a watch ERROR event (410 included) or a non-JSON line as ApiError.
More: docs/modules.md#k8sclientpy.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from gangsched.k8s.credentials import ConnectionSettings, Credentials, load_credentials
from gangsched.k8s.errors import ApiError
from gangsched.k8s.ratelimit import TokenBucket
from gangsched.k8s.retry import DEFAULT, Retrier, RetryPolicy

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
EXCERPT = 200  # characters of a non-Status body kept in an ApiError's message
LEASES = "/apis/coordination.k8s.io/"  # leader election is never throttled behind a burst (see the docstring)

__all__ = [
    "JSON",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "ApiError",
    "ConnectionSettings",
    "Credentials",
    "KubeClient",
    "error_from_response",
    "load_connection",
    "resource_path",
]


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


def _excerpt(raw: bytes) -> str:
    text = " ".join(raw[: EXCERPT * 4].decode("utf-8", errors="replace").split())
    return text[:EXCERPT] + ("..." if len(text) > EXCERPT else "") if text else "(empty body)"


def _retry_after(header: str | None) -> float | None:
    """Retry-After in seconds (client-go rest/request.go retryAfterSeconds: integer seconds only)."""
    if header is None:
        return None
    try:
        seconds = int(header.strip())
    except ValueError:
        return None
    return float(seconds) if seconds >= 0 else None


def error_from_response(status: int, raw: bytes, retry_after_header: str | None = None) -> ApiError:
    """The ApiError of a non-2xx answer, whatever its body is."""
    retry_after = _retry_after(retry_after_header)
    parsed: Any = None
    if raw[:1] in (b"{", b" ", b"\n"):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    if isinstance(parsed, dict) and (parsed.get("kind") == "Status" or "message" in parsed):
        details: dict[str, Any] = parsed["details"] if isinstance(parsed.get("details"), dict) else {}
        if retry_after is None and isinstance(details.get("retryAfterSeconds"), int):
            retry_after = float(details["retryAfterSeconds"])
        return ApiError(
            status, str(parsed.get("reason") or phrase), str(parsed.get("message") or ""), retry_after=retry_after
        )
    return ApiError(status, phrase, _excerpt(raw), retry_after=retry_after)


def _ssl_context(settings: ConnectionSettings) -> ssl.SSLContext | bool:
    if not settings.server.startswith("https"):
        return False
    if settings.verify:
        ctx = ssl.create_default_context(cafile=settings.ca_path, cadata=settings.ca_data)
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if settings.cert_path:
        ctx.load_cert_chain(settings.cert_path, settings.key_path)
    return ctx


async def load_connection(kubeconfig: str | None = None) -> Credentials:
    """Connection settings and credentials (k8s/credentials.py `load_credentials`)."""
    return await load_credentials(kubeconfig)


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

    def __init__(
        self,
        settings: ConnectionSettings | Credentials,
        *,
        max_connections: int = 100,
        user_agent: str = "gangsched",
        fence_hooks: bool = False,
        retry: RetryPolicy = DEFAULT,
        qps: float | None = None,
        burst: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._fence_hooks = fence_hooks
        self.credentials = settings if isinstance(settings, Credentials) else Credentials(settings)
        self.settings = self.credentials.settings
        self.retry = retry
        self._clock, self._sleep, self._rand = clock, sleep, rand
        self.limiter = TokenBucket(qps, burst, clock=clock, sleep=sleep) if qps else None
        self.requests: dict[tuple[str, str], int] = {}  # (verb, code) -> count; code "error" = no answer
        self.retries = 0
        self._extra: dict[str, Any] = {}
        if self.settings.tls_server_name:
            self._extra["server_hostname"] = self.settings.tls_server_name
        if self.settings.proxy_url:
            self._extra["proxy"] = self.settings.proxy_url
        self._session = aiohttp.ClientSession(
            base_url=self.settings.server,
            headers={"Accept": JSON, "User-Agent": user_agent},
            connector=aiohttp.TCPConnector(limit=max_connections, ssl=_ssl_context(self.settings)),
            json_serialize=lambda obj: orjson.dumps(obj).decode(),
            # the fence's late checks (k8s/fence.py) ride on aiohttp trace hooks, which cost every request: only the
            # operator's own client, whose writes are fenced, asks for them
            trace_configs=[_before_send_trace()] if fence_hooks else None,
        )

    @classmethod
    async def connect(cls, kubeconfig: str | None = None, **kwargs: Any) -> KubeClient:
        return cls(await load_credentials(kubeconfig), **kwargs)

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _count(self, verb: str, code: str) -> None:
        key = (verb, code)
        self.requests[key] = self.requests.get(key, 0) + 1

    @property
    def requests_total(self) -> int:
        return sum(self.requests.values())

    def retrier(self, policy: RetryPolicy | None = None) -> Retrier:
        """A Retrier with this client's clock, sleep and randomness (for callers retrying several calls as one)."""
        return Retrier(policy or self.retry, clock=self._clock, sleep=self._sleep, rand=self._rand)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = 30.0,
        retry: RetryPolicy | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """One call, retried under the policy; returns the parsed JSON body, raises ApiError.
        `before_send()` runs once a connection is in hand and again right before the body is written (no wait
        between it and the write): it may raise to abort the request unsent (the leader fence, k8s/fence.py); what
        it raises is not retried unless it is a transient ApiError."""
        data = orjson.dumps(body) if body is not None else None
        retrier = self.retrier(retry)
        try:
            return await retrier.call(
                lambda: self._authorized(method, path, params, data, content_type, timeout, before_send)
            )
        finally:
            self.retries += retrier.retries

    async def _authorized(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str,
        timeout: float | None,
        before_send: Callable[[], None] | None,
    ) -> dict[str, Any]:
        """One attempt; on 401, new credentials and one more attempt (client-go transport/token_source.go)."""
        auth = await self._authorization()
        try:
            return await self._once(method, path, params, data, content_type, timeout, auth, before_send)
        except ApiError as exc:
            if exc.status != 401 or not await self.credentials.refresh(auth):
                raise
        return await self._once(
            method, path, params, data, content_type, timeout, await self._authorization(), before_send
        )

    async def _authorization(self) -> str | None:
        try:
            return await self.credentials.authorization()
        except Exception as exc:  # a failing exec plugin or unreadable token file: an error of this call
            raise ApiError(401, "CredentialError", str(exc)) from exc

    async def _once(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str,
        timeout: float | None,
        auth: str | None,
        before_send: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        headers = {"Content-Type": content_type} if data is not None else {}
        if auth:
            headers["Authorization"] = auth
        if self.limiter is not None and not path.startswith(LEASES):
            await self.limiter.acquire()
        if before_send is not None and not self._fence_hooks:
            before_send()  # no trace hooks on this session: checked once, right before the request is made
        try:
            async with self._session.request(
                method,
                path,
                params=params,
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                **self._extra,
                trace_request_ctx={"before_send": before_send}
                if before_send is not None and self._fence_hooks
                else None,
            ) as response:
                raw = await response.read()
                status = response.status
                retry_after = response.headers.get("Retry-After")
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._count(method, "error")
            raise ApiError(0, "ConnectionError", f"{method} {path}: {exc!r}") from exc
        self._count(method, str(status))
        if status >= 300:
            raise error_from_response(status, raw, retry_after)
        if not raw:
            return {}
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError(
                status, "InvalidResponse", f"{method} {path}: the body is not JSON: {_excerpt(raw)}"
            ) from None
        if not isinstance(parsed, dict):
            raise ApiError(
                status, "InvalidResponse", f"{method} {path}: the body is not a JSON object: {_excerpt(raw)}"
            )
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

    async def list_all(
        self, path: str, *, params: Mapping[str, str] | None = None, page: int = 5000
    ) -> tuple[list[Any], str]:
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
        on_open: Callable[[], None] | None = None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Events of one watch request, as (type, object); BOOKMARK events are yielded too. `on_open()` is called
        once the server accepted the watch (its answer's status is 200), before any event."""
        query = dict(params or {})
        query.update(
            watch="true",
            resourceVersion=resource_version,
            allowWatchBookmarks="true",
            timeoutSeconds=str(timeout_seconds),
        )
        auth = await self._authorization()
        for attempt in (1, 2):
            headers = {"Authorization": auth} if auth else {}
            if self.limiter is not None:
                await self.limiter.acquire()
            try:
                async with self._session.get(
                    path,
                    params=query,
                    headers=headers,
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=timeout_seconds + 30),
                    **self._extra,
                ) as response:
                    self._count("WATCH", str(response.status))
                    if response.status >= 300:
                        error = error_from_response(
                            response.status, await response.read(), response.headers.get("Retry-After")
                        )
                        if response.status == 401 and attempt == 1 and await self.credentials.refresh(auth):
                            auth = await self._authorization()
                            continue
                        raise error
                    if on_open is not None:
                        on_open()
                    async for item in self._events(path, response):
                        yield item
                    return
            except (aiohttp.ClientError, TimeoutError) as exc:
                self._count("WATCH", "error")
                raise ApiError(0, "ConnectionError", f"watch {path}: {exc!r}") from exc

    @staticmethod
    async def _events(path: str, response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        buffer = b""
        async for chunk in response.content.iter_any():
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    raise ApiError(
                        response.status, "InvalidResponse", f"watch {path}: a line is not JSON: {_excerpt(line)}"
                    ) from None
                if not isinstance(event, dict):
                    raise ApiError(
                        response.status,
                        "InvalidResponse",
                        f"watch {path}: a line is not a watch event: {_excerpt(line)}",
                    )
                kind = event.get("type", "")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    raise ApiError(int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", "")))
                yield kind, obj
        if buffer.strip():
            raise ApiError(
                response.status,
                "InvalidResponse",
                f"watch {path}: the stream ended inside an event: {_excerpt(buffer)}",
            )
