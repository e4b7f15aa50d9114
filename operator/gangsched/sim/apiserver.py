"""The Kubernetes API emulator's HTTP server (aiohttp, in-process): REST routing, content negotiation, watch streams.

Contract: `server = ApiServer(history_limit=..., auth=False)`; `await server.start(host, port=0)`; `server.url`;
`server.write_kubeconfig(path, token=None) -> Path`; `await server.stop()`. With auth on it speaks https (tls.py),
answers 401/403 as RBAC decides (auth.py, rbac.py, authapi.py) and records each user's requests
(`server.authorizer.usage`); with auth off every request acts as the admin. Optional controllers while started:
`server.disruption`, `server.claims`, `server.podgroup_protection`; `server.faults` injects faults (sim/faults.py,
admin endpoints under /sim/faults); `server.request_counts` counts resource requests served.
Serves discovery, OpenAPI v2/v3 (openapi.py), health, and every kind of the registry (list, watch with bookmarks and
410 Expired, get, create, update, patch, delete, deletecollection, subresources, Table output, dryRun=All).
Semantics live in registry.py, storage and fan-out in store.py: this module only speaks HTTP.
More: docs/modules.md#simapiserverpy.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import re
import socket
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from gangsched.sim import openapi, protobuf, rbac, table
from gangsched.sim import status as st
from gangsched.sim.auth import Authenticator
from gangsched.sim.authapi import AuthEndpoints
from gangsched.sim.disruption import DisruptionController
from gangsched.sim.dra.claims import ResourceClaimController
from gangsched.sim.faults import Answer, FaultInjector, FaultSpecError, RequestInfo, rule_from_mapping
from gangsched.sim.features import DEFAULT as DEFAULT_GATES
from gangsched.sim.features import FeatureGates
from gangsched.sim.kubeconfig import write_kubeconfig
from gangsched.sim.podgroup_protection import PodGroupProtectionController
from gangsched.sim.registry import (
    APPLY_PATCH,
    PATCH_TYPES,
    Registry,
    storage_key,
)
from gangsched.sim.request import RequestContext
from gangsched.sim.requestlog import RequestLog
from gangsched.sim.selectors import SelectorError, parse_field_selector, parse_label_selector
from gangsched.sim.store import Entry, Store, Watcher, WatchEvent
from gangsched.sim.types import ResourceType
from gangsched.sim.validation import limits, schemas

JSON_TYPE = "application/json"
VERSION_INFO = {
    "major": "1",
    "minor": schemas.K8S_MINOR,
    "gitVersion": f"{schemas.K8S_VERSION}-gangsched-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_TABLE_RE = re.compile(r"as=Table")
_FAULT_INFO = web.RequestKey("gangsched.sim.fault", RequestInfo)  # a request's RequestInfo, seen by the fault injector
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def _json(body: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON_TYPE, headers=headers)


def _raw(body: bytes, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON_TYPE, headers=headers)


def _error(exc: st.ApiError) -> web.Response:
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return _json(exc.body(), status=exc.code, headers=headers)


class _Connection(RequestHandler):
    """aiohttp's per-connection protocol, made independent of who else cancels tasks in the event loop.

    The emulator shares its event loop with in-process clients, among them Kopf, which on stopping cancels every
    task created while it ran, this server's connection tasks included. aiohttp's connection task, cancelled while
    idle between two keep-alive requests, exits without closing the socket: the client's next request on that
    pooled connection would be read and queued but never answered. A connection of a real API server does not
    depend on its clients' tasks: such a connection is served on by a fresh task. (aiohttp's own endings --
    connection lost, keep-alive timeout, shutdown, close -- set _force_close or _close first, or drop the
    transport; they are left alone.)
    """

    stopping: asyncio.Event | None = None  # the ApiServer's, set by _Server

    async def start(self) -> None:
        try:
            await super().start()
        except asyncio.CancelledError:
            if self._served_on_by_a_fresh_task():
                return  # this task still ends, as whoever cancelled it waits for
            raise

    def _served_on_by_a_fresh_task(self) -> bool:
        transport = self.transport
        if transport is None or transport.is_closing() or self._force_close or self._close:
            return False
        if self.stopping is not None and self.stopping.is_set():
            return False
        task = asyncio.current_task()
        if task is None or not task.cancelling() or self._task_handler is not task:
            return False
        task.uncancel()
        self._task_handler = self._loop.create_task(self.start(), name="gangsched-sim-connection")
        return True


class _Server(web.Server):
    """aiohttp's protocol factory, making _Connection protocols."""

    def __init__(self, base: web.Server, stopping: asyncio.Event) -> None:
        super().__init__(
            base.request_handler,
            request_factory=base.request_factory,
            handler_cancellation=base.handler_cancellation,
            loop=base._loop,
            **base._kwargs,
        )
        self._stopping = stopping

    def __call__(self) -> RequestHandler:
        connection = _Connection(self, loop=self._loop, **self._kwargs)
        connection.stopping = self._stopping
        return connection


class _Runner(web.AppRunner):
    def __init__(self, app: web.Application, stopping: asyncio.Event, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._stopping = stopping

    async def _make_server(self) -> web.Server:
        return _Server(await super()._make_server(), self._stopping)


class ApiServer:
    """See module docstring."""

    def __init__(
        self,
        *,
        history_limit: int = 10000,
        history_seconds: float | None = 300.0,
        watch_queue_limit: int = 10000,
        bookmark_interval: float = 5.0,
        default_watch_timeout: float = 1800.0,
        disruption_controller: bool = True,
        claim_controller: bool = True,
        auth: bool = False,
        gates: FeatureGates = DEFAULT_GATES,
    ) -> None:
        self.store = Store(history_limit=history_limit, history_seconds=history_seconds)
        self.faults = FaultInjector()  # sim/faults.py; `faults.active` is the only thing the hot path reads
        self.registry = Registry(self.store, gates=gates)  # gates: the API profile served (sim/features.py)
        # kube-controller-manager's disruption controller (PDB status), run in-process from start() to stop()
        self.disruption = DisruptionController(self.registry) if disruption_controller else None
        # kube-controller-manager's resourceclaim controller (sim/dra/claims.py), likewise
        self.claims = ResourceClaimController(self.registry) if claim_controller else None
        # kube-controller-manager's PodGroup protection controller (the finalizer's removal), with PodGroups served
        serves_podgroups = gates.enabled("GenericWorkload")
        self.podgroup_protection = PodGroupProtectionController(self.registry) if serves_podgroups else None
        self.request_counts: Counter[tuple[str, str]] = Counter()  # (method, plural[/subresource]) -> requests
        self.auth = auth
        self.authenticator = Authenticator(self.store)
        self.authorizer = rbac.RbacAuthorizer(self.store)
        self.auth_endpoints = AuthEndpoints(
            registry=self.registry,
            authenticator=self.authenticator,
            authorizer=self.authorizer,
            enforcing=auth,
            read_body=self._body,
        )
        for obj in rbac.BOOTSTRAP_OBJECTS:
            rtype = self.registry.resolve(rbac.RBAC_GROUP, "v1", obj["kind"].lower() + "s")
            assert rtype is not None
            self.registry.create(rtype, "", orjson.loads(orjson.dumps(obj)), RequestContext())
        self.watch_queue_limit = watch_queue_limit
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.url = ""
        self.ca_pem: bytes | None = None  # the serving certificate (self-signed) when auth (and so TLS) is on
        self.host = ""
        self.port = 0
        self._runner: _Runner | None = None
        self._docs: dict[str, bytes] = {}
        self._stopping = asyncio.Event()
        self.registry.listeners.append(self._docs.clear)
        self.requests = RequestLog()  # test instruments: request log and hold switch (sim/requestlog.py)
        self.app = self._build_app()

    # ------------------------------------------------------------------ lifecycle
    async def start(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if self.disruption is not None:
            self.disruption.start()
        if self.claims is not None:
            self.claims.start()
        if self.podgroup_protection is not None:
            self.podgroup_protection.start()
        self._runner = _Runner(self.app, self._stopping, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        context = None
        if self.auth:
            from gangsched.sim import tls

            self.ca_pem, key_pem = tls.serving_material([host])
            context = tls.ssl_context(self.ca_pem, key_pem)
        site = web.TCPSite(self._runner, host, port, backlog=1024, ssl_context=context)
        await site.start()
        sockets = getattr(site._server, "sockets", None)
        assert sockets, "the API server did not bind a socket"
        sock = sockets[0]
        self.host, self.port = host, int(sock.getsockname()[1])
        self.url = f"{'https' if context else 'http'}://{host}:{self.port}"

    async def stop(self) -> None:
        self._stopping.set()
        if self.disruption is not None:
            self.disruption.stop()
        if self.claims is not None:
            self.claims.stop()
        if self.podgroup_protection is not None:
            self.podgroup_protection.stop()
        self.store.close_all_watchers()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def write_kubeconfig(self, path: str | Path, *, token: str | None = None, namespace: str = "default") -> Path:
        """A kubeconfig for this server: with `token`, or the admin's token when authentication is on."""
        if token is None and self.auth:
            token = self.authenticator.admin_token
        return write_kubeconfig(path, server=self.url, token=token, namespace=namespace, ca_pem=self.ca_pem)

    async def __aenter__(self) -> ApiServer:
        if not self.url:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ routing
    def _build_app(self) -> web.Application:
        # the request log first (it sees every request, refused ones too), then authentication and RBAC
        middlewares = [self.requests.middleware, *([self.auth_endpoints.middleware] if self.auth else [])]
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=middlewares)
        r = app.router
        for probe in ("/healthz", "/readyz", "/livez"):
            r.add_get(probe, self._probe)
        r.add_get("/version", self._version)
        r.add_get("/api", self._api)
        r.add_get("/api/", self._api)
        r.add_get("/apis", self._apis)
        r.add_get("/apis/", self._apis)
        r.add_get("/openapi/v2", self._openapi_v2)
        r.add_get("/openapi/v3", self._openapi_root)
        r.add_get("/openapi/v3/{path:.+}", self._openapi_doc)
        r.add_route("*", "/sim/faults", self._faults_admin)
        r.add_get("/sim/faults/bindings", self._faults_bindings)
        r.add_get("/api/v1", self._core_resources)
        r.add_get("/apis/{group}", self._group)
        r.add_get("/apis/{group}/{version}", self._group_resources)
        self.auth_endpoints.add_routes(r)  # before the catch-all resource routes below
        r.add_route("*", "/api/v1/{tail:.+}", self._core_dispatch)
        r.add_route("*", "/apis/{group}/{version}/{tail:.+}", self._group_dispatch)
        return app

    async def _probe(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def _version(self, request: web.Request) -> web.Response:
        return _json(VERSION_INFO)

    async def _api(self, request: web.Request) -> web.Response:
        return _json(openapi.api_versions(server_address=f"{self.host}:{self.port}"))

    async def _apis(self, request: web.Request) -> web.Response:
        return self._cached("apis", lambda: openapi.api_group_list(self.registry.served_types()))

    async def _core_resources(self, request: web.Request) -> web.Response:
        return self._cached("api/v1", lambda: openapi.api_resource_list(self.registry.served_types(), "", "v1"))

    async def _group(self, request: web.Request) -> web.Response:
        name = request.match_info["group"]
        doc = openapi.api_group_list(self.registry.served_types())
        for group in doc.get("groups", []):
            if group.get("name") == name:
                return _json({"kind": "APIGroup", "apiVersion": "v1", **group})
        return _error(st.ApiError(404, "NotFound", "the server could not find the requested resource"))

    async def _group_resources(self, request: web.Request) -> web.Response:
        group, version = request.match_info["group"], request.match_info["version"]
        if not any(t.group == group and t.version == version for t in self.registry.served_types()):
            return _error(st.ApiError(404, "NotFound", "the server could not find the requested resource"))
        return self._cached(
            f"apis/{group}/{version}", lambda: openapi.api_resource_list(self.registry.served_types(), group, version)
        )

    async def _openapi_v2(self, request: web.Request) -> web.Response:
        if "protobuf" in request.headers.get("Accept", ""):
            return web.Response(body=openapi.openapi_v2_protobuf(), content_type=openapi.OPENAPI_V2_PROTOBUF_RESPONSE)
        return _json(openapi.openapi_v2_json())

    async def _openapi_root(self, request: web.Request) -> web.Response:
        return self._cached("openapi", lambda: openapi.openapi_v3_root(self.registry.served_types()))

    async def _openapi_doc(self, request: web.Request) -> web.Response:
        path = request.match_info["path"].strip("/")
        parts = path.split("/")
        if parts == ["api", "v1"]:
            group, version = "", "v1"
        elif len(parts) == 3 and parts[0] == "apis":
            group, version = parts[1], parts[2]
        else:
            return _error(st.ApiError(404, "NotFound", f"no OpenAPI document at /openapi/v3/{path}"))
        if not any(t.group == group and t.version == version for t in self.registry.served_types()):
            return _error(st.ApiError(404, "NotFound", f"no OpenAPI document at /openapi/v3/{path}"))
        return self._cached(
            f"openapi/{path}", lambda: openapi.openapi_v3_group_doc(self.registry.served_types(), group, version)
        )

    def _cached(self, key: str, build: Any) -> web.Response:
        body = self._docs.get(key)
        if body is None:
            body = self._docs[key] = orjson.dumps(build())
        return _raw(body)

    async def _core_dispatch(self, request: web.Request) -> web.StreamResponse:
        if self.faults.active:  # the one check fault injection costs when no fault is configured
            return await self._with_faults(request, "", "v1", request.match_info["tail"])
        return await self._dispatch(request, "", "v1", request.match_info["tail"])

    async def _group_dispatch(self, request: web.Request) -> web.StreamResponse:
        if self.faults.active:
            return await self._with_faults(
                request, request.match_info["group"], request.match_info["version"], request.match_info["tail"]
            )
        return await self._dispatch(
            request, request.match_info["group"], request.match_info["version"], request.match_info["tail"]
        )

    def _route(
        self, group: str, version: str, tail: str
    ) -> tuple[ResourceType, str | None, str | None, str | None, bool]:
        """(type, namespace, name, subresource, legacy-watch) of a resource path, or 404."""
        parts = [p for p in tail.split("/") if p]
        watch = False
        if parts and parts[0] == "watch":
            watch, parts = True, parts[1:]
        namespace: str | None = None
        if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] not in ("status", "finalize"):
            namespace, parts = parts[1], parts[2:]
        if not parts or len(parts) > 3:
            raise st.ApiError(404, "NotFound", "the server could not find the requested resource")
        rtype = self.registry.resolve(group, version, parts[0])
        if rtype is None:
            raise st.ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace is not None and not rtype.namespaced:
            raise st.ApiError(404, "NotFound", "the server could not find the requested resource")
        name = parts[1] if len(parts) > 1 else None
        sub = parts[2] if len(parts) > 2 else None
        if name is not None and rtype.namespaced and namespace is None:
            raise st.ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub is not None and sub not in rtype.subresources:
            raise st.ApiError(404, "NotFound", "the server could not find the requested resource")
        return rtype, namespace, name, sub, watch

    # ------------------------------------------------------------------ fault injection (sim/faults.py)
    async def _faults_admin(self, request: web.Request) -> web.Response:
        """GET: rules, counts of faults injected by kind; POST: add rules (a JSON list, or {"rules": [...],
        "seed": N, "record": bool}); DELETE: remove every rule (counts and the binding log stay)."""
        if request.method == "DELETE":
            self.faults.clear()
        elif request.method == "POST":
            try:
                doc = orjson.loads(await request.read() or b"[]")
                if isinstance(doc, dict):
                    if "seed" in doc:
                        self.faults.reseed(int(doc["seed"]))
                    if "record" in doc:
                        self.faults.set_record(bool(doc["record"]))
                    doc = doc.get("rules") or []
                if not isinstance(doc, list):
                    raise FaultSpecError(
                        f"the body must be a JSON list of fault rules or an object with 'rules', got {doc!r}"
                    )
                self.faults.add([rule_from_mapping(item) for item in doc])
            except (FaultSpecError, orjson.JSONDecodeError, ValueError, TypeError) as exc:
                return _error(st.bad_request(f"fault rules: {exc}"))
        elif request.method != "GET":
            return _error(st.method_not_allowed(f"{request.method} on /sim/faults"))
        return _json(self.faults.state())

    async def _faults_bindings(self, request: web.Request) -> web.Response:
        return _json(self.faults.bindings_state())

    async def _with_faults(self, request: web.Request, group: str, version: str, tail: str) -> web.StreamResponse:
        try:
            rtype, namespace, name, sub, legacy_watch = self._route(group, version, tail)
        except st.ApiError:
            return await self._dispatch(request, group, version, tail)
        query, method = request.query, request.method
        if method == "GET":
            verb = "get" if name else "watch" if legacy_watch or query.get("watch") in ("true", "1", "True") else "list"
        elif method == "DELETE":
            verb = "delete" if name else "deletecollection"
        else:
            verb = _VERBS.get(method, method.lower())
        agent = request.headers.get("User-Agent", "").split("/", 1)[0].strip()
        info = RequestInfo(
            verb,
            rtype.plural,
            sub,
            agent,
            namespace,
            name,
            query.get("resourceVersion", "") or "",
            query.get("continue", "") or "",
        )
        request[_FAULT_INFO] = info

        async def serve() -> web.StreamResponse:
            response = await self._dispatch(request, group, version, tail)
            if sub == "binding" and self.faults.record:
                with contextlib.suppress(Exception):
                    info.binding_node = str(
                        ((orjson.loads(await request.read()) or {}).get("target") or {}).get("name", "")
                    )
            return response

        result = await self.faults.intercept(info, serve, inconsistent_token=self._inconsistent_token)
        if not isinstance(result, Answer):
            return result  # type: ignore[no-any-return]
        if result.reset:
            self._reset_connection(request)
            return web.Response(status=500)  # never sent: the connection is gone
        if info.verb == "watch" and result.status == 200:
            response = web.StreamResponse(status=200, headers={"Content-Type": JSON_TYPE, "Cache-Control": "no-cache"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            await response.write(result.body)
            return response
        return web.Response(
            body=result.body, status=result.status, headers={"Content-Type": result.content_type, **result.headers}
        )

    @staticmethod
    def _reset_connection(request: web.Request) -> None:
        """Drop the connection with a TCP RST, no answer (SO_LINGER 0, then abort)."""
        transport = request.transport
        if transport is None:
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()

    def _inconsistent_token(self, token: str) -> str:
        """The token of a 410 "inconsistent continue": the same position, at the newest resourceVersion (etcd3's
        handleCompactedErrorForPaging sets the token's resourceVersion to -1, "the latest")."""
        try:
            decoded = orjson.loads(base64.urlsafe_b64decode(token.encode()))
            decoded["rv"] = self.store.rv
            return base64.urlsafe_b64encode(orjson.dumps(decoded)).decode()
        except Exception:
            return token

    async def _dispatch(self, request: web.Request, group: str, version: str, tail: str) -> web.StreamResponse:
        try:
            rtype, namespace, name, sub, legacy_watch = self._route(group, version, tail)
            query = request.query
            method = request.method
            self.request_counts[(method, f"{rtype.plural}/{sub}" if sub else rtype.plural)] += 1
            if name is None:
                if method == "GET":
                    if legacy_watch or query.get("watch") in ("true", "1", "True"):
                        return await self._watch(request, rtype, namespace)
                    return self._list(request, rtype, namespace)
                if method == "POST":
                    if rtype.namespaced and namespace is None:
                        raise st.method_not_allowed(f"POST {rtype.plural} without a namespace")
                    ctx = self._context(query)
                    body = await self._body(request)
                    entry = self.registry.create(rtype, namespace or "", body, ctx)
                    return self._object(request, rtype, entry, status=201, ctx=ctx)
                if method == "DELETE":
                    return await self._delete_collection(request, rtype, namespace)
                raise st.method_not_allowed(f"{method} on a collection")
            ns = namespace or ""
            if sub in ("binding", "eviction"):
                if method != "POST":
                    raise st.method_not_allowed(f"{method} on pods/{sub}")
                body = await self._body(request)
                if sub == "binding":
                    return _json(self.registry.bind(rtype, ns, name, body, self._context(query)), status=201)
                return _json(self.registry.evict(rtype, ns, name, body, self._context(query)), status=201)
            if method == "GET":
                entry = self.registry.get(rtype, ns, name)
                return self._object(request, rtype, entry)
            if method == "PUT":
                ctx = self._context(query)
                body = await self._body(request)
                entry = self.registry.update(rtype, ns, name, body, ctx, subresource=sub)
                return self._object(request, rtype, entry, ctx=ctx)
            if method == "PATCH":
                ctx = self._context(query)
                content_type = request.content_type
                if content_type not in PATCH_TYPES:
                    raise st.unsupported_media_type(content_type, PATCH_TYPES)
                body = await self._body(request, yaml_ok=content_type == APPLY_PATCH)
                entry = self.registry.patch(rtype, ns, name, body, content_type, ctx, subresource=sub)
                return self._object(request, rtype, entry, ctx=ctx)
            if method == "DELETE":
                if sub:
                    raise st.method_not_allowed(f"DELETE on {rtype.plural}/{sub}")
                ctx = self._context(query)
                options = await self._delete_options(request)
                entry = self.registry.delete(rtype, ns, name, ctx, options=options)
                return self._object(request, rtype, entry, ctx=ctx)
            raise st.method_not_allowed(method)
        except st.ApiError as exc:
            return _error(exc)
        except SelectorError as exc:
            return _error(st.bad_request(str(exc)))

    # ------------------------------------------------------------------ request helpers
    @staticmethod
    def _context(query: Any) -> RequestContext:
        dry = query.getall("dryRun", [])
        for value in dry:
            if value != "All":
                raise st.bad_request(f'invalid dryRun value {value!r}: allowed values: "All"')
        fv = query.get("fieldValidation", "Warn") or "Warn"
        if fv not in ("Strict", "Warn", "Ignore"):
            raise st.bad_request(f'fieldValidation {fv!r} is not supported: allowed values: "Ignore", "Warn", "Strict"')
        return RequestContext(dry_run=bool(dry), field_validation=fv)

    @staticmethod
    async def _read_limited(request: web.Request) -> bytes:
        """The body of a resource write, at most MAX_REQUEST_BODY_BYTES (handlers/rest.go limitedReadBody: 413
        RequestEntityTooLarge beyond); a declared Content-Length over the limit is refused without reading."""
        if (request.content_length or 0) > limits.MAX_REQUEST_BODY_BYTES:
            raise limits.body_too_large()
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise limits.body_too_large() from None
        if len(raw) > limits.MAX_REQUEST_BODY_BYTES:
            raise limits.body_too_large()
        return raw

    @classmethod
    async def _body(cls, request: web.Request, *, yaml_ok: bool = False) -> Any:
        content_type = request.content_type
        if "cbor" in content_type or ("protobuf" in content_type and content_type != protobuf.MEDIA_TYPE):
            raise st.unsupported_media_type(content_type, [JSON_TYPE, "application/yaml", protobuf.MEDIA_TYPE])
        raw = await cls._read_limited(request)
        if not raw:
            raise st.bad_request("the request body is empty; a JSON object is required")
        if content_type == protobuf.MEDIA_TYPE:
            # kubectl sends the typed objects it builds (kubectl create namespace, configmap, ...) as protobuf
            try:
                return protobuf.decode_object(raw)
            except protobuf.UnsupportedKind as exc:
                raise st.ApiError(415, "UnsupportedMediaType", str(exc)) from None
            except protobuf.ProtobufError as exc:
                raise st.bad_request(f"the request body is not a valid Kubernetes protobuf object: {exc}") from None
        if yaml_ok or request.content_type in ("application/yaml", "application/x-yaml"):
            try:
                return yaml.safe_load(raw)
            except yaml.YAMLError as exc:
                raise st.bad_request(f"the request body is not valid YAML: {exc}") from None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise st.bad_request(f"the request body is not valid JSON: {exc}") from None

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if request.can_read_body:
            raw = await self._read_limited(request)
            if raw.strip():
                try:
                    parsed = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise st.bad_request(f"the DeleteOptions body is not valid JSON: {exc}") from None
                if isinstance(parsed, dict):
                    options.update(parsed)
        query = request.query
        if "gracePeriodSeconds" in query:
            options["gracePeriodSeconds"] = self._int(query, "gracePeriodSeconds")
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        policy = options.get("propagationPolicy")
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise st.bad_request(
                f'propagationPolicy {policy!r} is not supported: allowed values: "Orphan", "Background", "Foreground"'
            )
        return options

    @staticmethod
    def _int(query: Any, key: str) -> int | None:
        value = query.get(key)
        if value in (None, ""):
            return None
        try:
            return int(value)
        except ValueError:
            raise st.bad_request(f"invalid {key} {value!r}: must be an integer") from None

    @staticmethod
    def _wants_table(request: web.Request) -> bool:
        accept = request.headers.get("Accept", "")
        return "as=Table" in accept

    def _object(
        self,
        request: web.Request,
        rtype: ResourceType,
        entry: Entry,
        *,
        status: int = 200,
        ctx: RequestContext | None = None,
    ) -> web.Response:
        headers = None
        if ctx is not None and ctx.warnings:
            # RFC 7234 warn-text is a quoted-string: quotes and backslashes escaped, as the real apiserver writes it
            texts = (w.replace("\\", "\\\\").replace('"', '\\"') for w in ctx.warnings)
            headers = {"Warning": ", ".join(f'299 - "{t}"' for t in texts)}
        if self._wants_table(request):
            return _json(self._table(request, rtype, [entry.obj]), status=status, headers=headers)
        if rtype.is_crd and entry.obj.get("apiVersion") != rtype.group_version:
            obj = entry.copy()
            obj["apiVersion"] = rtype.group_version
            return _json(obj, status=status, headers=headers)
        return _raw(entry.raw, status=status, headers=headers)

    def _table(self, request: web.Request, rtype: ResourceType, objects: list[dict[str, Any]]) -> dict[str, Any]:
        include = request.query.get("includeObject", "Metadata") or "Metadata"
        if include not in ("Metadata", "Object", "None"):
            raise st.bad_request(
                f'includeObject {include!r} is not supported: allowed values: "Object", "Metadata", "None"'
            )
        now = datetime.datetime.now(datetime.UTC)
        result: dict[str, Any] = table.to_table(rtype, objects, now=now, include_object=include)
        result.setdefault("metadata", {})["resourceVersion"] = str(self.store.rv)
        return result

    # ------------------------------------------------------------------ list
    def _selectors(self, request: web.Request, rtype: ResourceType) -> tuple[Any, Any]:
        query = request.query
        fields = parse_field_selector(
            query.get("fieldSelector"), kind=(rtype.group, rtype.kind), selectable=rtype.selectable_fields
        )
        return parse_label_selector(query.get("labelSelector")), fields

    def _list(self, request: web.Request, rtype: ResourceType, namespace: str | None) -> web.Response:
        labels, fields = self._selectors(request, rtype)
        limit = self._int(request.query, "limit")
        entries, rv, token, remaining = self.registry.list_entries(
            rtype,
            namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=request.query.get("continue") or None,
            resource_version=request.query.get("resourceVersion", "") or "",
            resource_version_match=request.query.get("resourceVersionMatch", "") or "",
        )
        if self._wants_table(request):
            doc = self._table(request, rtype, [e.obj for e in entries])
            doc["metadata"] = {"resourceVersion": rv, **({"continue": token} if token else {})}
            return _json(doc)
        meta: dict[str, Any] = {"resourceVersion": rv}
        if token:
            meta["continue"] = token
            meta["remainingItemCount"] = remaining
        head = orjson.dumps({"kind": f"{rtype.kind}List", "apiVersion": rtype.group_version, "metadata": meta})
        if rtype.is_crd and entries and entries[0].obj.get("apiVersion") != rtype.group_version:
            items = b",".join(orjson.dumps({**e.obj, "apiVersion": rtype.group_version}) for e in entries)
        else:
            items = b",".join(e.raw for e in entries)
        return _raw(head[:-1] + b',"items":[' + items + b"]}")

    async def _delete_collection(
        self, request: web.Request, rtype: ResourceType, namespace: str | None
    ) -> web.Response:
        labels, fields = self._selectors(request, rtype)
        ctx = self._context(request.query)
        options = await self._delete_options(request)
        entries, _rv, _, _ = self.registry.list_entries(
            rtype, namespace, labels=labels, fields=fields, limit=None, continue_token=None
        )
        deleted: list[bytes] = []
        for entry in entries:
            meta = entry.obj["metadata"]
            try:
                deleted.append(
                    self.registry.delete(rtype, meta.get("namespace") or "", meta["name"], ctx, options=options).raw
                )
            except st.ApiError as exc:
                if exc.code != 404:
                    raise
        head = orjson.dumps(
            {
                "kind": f"{rtype.kind}List",
                "apiVersion": rtype.group_version,
                "metadata": {"resourceVersion": str(self.store.rv)},
            }
        )
        return _raw(head[:-1] + b',"items":[' + b",".join(deleted) + b"]}")

    # ------------------------------------------------------------------ watch
    async def _watch(self, request: web.Request, rtype: ResourceType, namespace: str | None) -> web.StreamResponse:  # noqa: C901 (predates the complexity ceiling)
        q = request.query
        labels, fields = self._selectors(request, rtype)
        timeout = self._int(q, "timeoutSeconds")
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1", "True")
        rv_text = q.get("resourceVersion", "") or ""
        skey = storage_key(rtype)
        matches = None
        if not labels.empty or fields.requirements:
            matches = lambda obj: labels.matches(obj) and fields.matches(obj)  # noqa: E731
        transform = None
        if self._wants_table(request):
            transform = self._table_transform(request, rtype)
        elif rtype.is_crd:
            transform = self._version_transform(rtype)
        watcher = Watcher(
            namespace=namespace if rtype.namespaced else None,
            matches=matches,
            transform=transform,
            max_queue=1 << 62,
        )
        error: bytes | None = None
        if rv_text in ("", "0"):
            for entry in self.store.entries(skey, namespace if rtype.namespaced else None):
                if matches is None or matches(entry.obj):
                    event = WatchEvent(entry.rv, "ADDED", entry, None)
                    watcher.push_line(transform(event, "ADDED") if transform else event.line())
        else:
            try:
                since = int(rv_text)
            except ValueError:
                raise st.bad_request(f"invalid resourceVersion {rv_text!r}: must be an integer") from None
            events = self.store.history_since(skey, since)
            if events is None:
                error = self._error_line(
                    st.gone(f"too old resource version: {since} ({self.store.oldest_retained(skey) + 1})")
                )
            else:
                for event in events:
                    watcher.offer(event)
        watcher.max_queue = len(watcher.lines) + self.watch_queue_limit
        if error is None:
            self.store.subscribe(skey, watcher)
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON_TYPE, "Cache-Control": "no-cache"})
        response.enable_chunked_encoding()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout if timeout and timeout > 0 else self.default_watch_timeout)
        cut_events: int | None = None  # an injected fault (sim/faults.py) ends this stream after so many events
        cut_at: float | None = None  # ... or at this loop time
        if self.faults.active:
            info = request.get(_FAULT_INFO)
            if info is not None and info.cut is not None:
                cut_events = info.cut.events
                cut_at = None if info.cut.seconds is None else loop.time() + info.cut.seconds
        try:
            await response.prepare(request)
            if error is not None:
                await response.write(error)
                return response
            while True:
                lines = watcher.drain()
                if self.faults.active and self.faults.stalled():
                    await self.faults.wait_stall()  # a stalled apiserver delivers nothing, watches included
                if cut_events is not None and len(lines) >= cut_events:
                    if cut_events:
                        await response.write(b"".join(lines[:cut_events]))
                    return self._cut(request, response)
                if lines:
                    if cut_events is not None:
                        cut_events -= len(lines)
                    await response.write(b"".join(lines))
                if watcher.closed:
                    if watcher.overflowed:
                        await response.write(
                            self._error_line(st.gone("the watcher fell too far behind and was closed; relist"))
                        )
                    return response
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wait = min(remaining, self.bookmark_interval) if bookmarks else remaining
                if cut_at is not None:
                    if loop.time() >= cut_at:
                        return self._cut(request, response)
                    wait = min(wait, cut_at - loop.time())
                try:
                    await asyncio.wait_for(watcher.ready.wait(), wait)
                except TimeoutError:
                    if (
                        bookmarks
                        and not watcher.lines
                        and loop.time() < deadline
                        and (cut_at is None or loop.time() < cut_at)
                    ):
                        await response.write(self._bookmark_line(rtype))
            if bookmarks and not watcher.lines and not watcher.closed:
                await response.write(self._bookmark_line(rtype))
            return response
        except (ConnectionResetError, asyncio.CancelledError) as exc:
            if self._stopping.is_set() or not isinstance(exc, asyncio.CancelledError):
                return response  # stopping, or the client went away (over TLS seen as a reset on write): nothing to log
            if isinstance(exc, asyncio.CancelledError) and response.prepared and self._client_connected(request):
                # Cancelled by other code in the loop (Kopf stopping cancels every task created while it ran), the
                # client still listening: end the stream as a complete response, as a real API server ends a
                # watch, so the client resumes from its last resourceVersion rather than reading a torn stream.
                # The task still ends cancelled (whoever cancelled it waits for that); aiohttp then closes this
                # connection.
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await response.write_eof()
            raise
        finally:
            watcher.close()
            self.store.unsubscribe(skey, watcher)

    def _cut(self, request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
        """End a watch stream abruptly (an injected watch-cut): the connection drops mid-stream, no final chunk."""
        self._reset_connection(request)
        return response

    @staticmethod
    def _client_connected(request: web.Request) -> bool:
        transport = request.transport
        return transport is not None and not transport.is_closing()

    def _bookmark_line(self, rtype: ResourceType) -> bytes:
        obj = {
            "kind": rtype.kind,
            "apiVersion": rtype.group_version,
            "metadata": {"resourceVersion": str(self.store.rv)},
        }
        return b'{"type":"BOOKMARK","object":' + orjson.dumps(obj) + b"}\n"

    @staticmethod
    def _error_line(exc: st.ApiError) -> bytes:
        return b'{"type":"ERROR","object":' + orjson.dumps(exc.body()) + b"}\n"

    def _table_transform(self, request: web.Request, rtype: ResourceType) -> Any:
        def transform(event: WatchEvent, event_type: str) -> bytes:
            doc = self._table(request, rtype, [event.entry.obj])
            doc["metadata"] = {"resourceVersion": str(event.rv)}
            return orjson.dumps({"type": event_type, "object": doc}) + b"\n"

        return transform

    @staticmethod
    def _version_transform(rtype: ResourceType) -> Any:
        def transform(event: WatchEvent, event_type: str) -> bytes:
            if event.entry.obj.get("apiVersion") == rtype.group_version:
                return event.line(event_type)
            obj = {**event.entry.obj, "apiVersion": rtype.group_version}
            return orjson.dumps({"type": event_type, "object": obj}) + b"\n"

        return transform


async def _serve_main(*, host: str, port: int, kubeconfig: str | None, history_limit: int, auth: bool = False) -> None:
    server = ApiServer(history_limit=history_limit, auth=auth)
    await server.start(host=host, port=port)
    if kubeconfig:
        server.write_kubeconfig(kubeconfig)
    print(server.url, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    """`python -m gangsched.sim.apiserver [--port P] [--kubeconfig PATH]`: the bare API server (no nodes, no kubelet),
    printing its URL on the first line of stdout; what benchmarks run in a separate process."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gangsched.sim.apiserver", description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--history-limit", type=int, default=10000)
    parser.add_argument(
        "--auth", action="store_true", help="require tokens and enforce RBAC (the kubeconfig gets the admin's)"
    )
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            _serve_main(
                host=args.host,
                port=args.port,
                kubeconfig=args.kubeconfig,
                history_limit=args.history_limit,
                auth=args.auth,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
