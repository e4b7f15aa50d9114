"""The emulator's authentication and authorization over HTTP: the middleware, TokenRequest and the reviews.

Contract:
- `AuthEndpoints(registry=, authenticator=, authorizer=, enforcing=, read_body=)`; `add_routes(router)` (before the
  catch-all resource routes) adds TokenRequest (`kubectl create token`), SelfSubjectAccessReview (`kubectl auth
  can-i`), SelfSubjectRulesReview (`--list`) and SelfSubjectReview (`kubectl auth whoami`); JSON or protobuf in,
  JSON out.
- `middleware` (installed only when `enforcing`): 401 without a valid token (auth.py), the authorizer's record of
  what was asked, 403 with the real message unless RBAC allows it (rbac.py). With enforcing off every request
  acts as the admin (as with AlwaysAllow), and the reviews say so.
More: docs/modules.md#simauthapipy.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from gangsched.models.timestamps import format_time
from gangsched.sim import protowire, rbac
from gangsched.sim import status as st
from gangsched.sim.auth import ADMIN, API_AUDIENCES, Authenticator, UserInfo
from gangsched.sim.registry import Registry

USER_KEY = web.RequestKey("user", UserInfo)
JSON_TYPE = "application/json"


def _json(body: Any, *, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON_TYPE)


def _error(exc: st.ApiError) -> web.Response:
    return _json(exc.body(), status=exc.code)


class AuthEndpoints:
    """See module docstring."""

    def __init__(
        self,
        *,
        registry: Registry,
        authenticator: Authenticator,
        authorizer: rbac.RbacAuthorizer,
        enforcing: bool,
        read_body: Callable[[web.Request], Awaitable[Any]],
    ) -> None:
        self.registry = registry
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.enforcing = enforcing
        self._read_body = read_body

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", self.token_request)
        router.add_post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", self.self_subject_access_review)
        router.add_post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", self.self_subject_rules_review)
        router.add_post("/apis/authentication.k8s.io/v1/selfsubjectreviews", self.self_subject_review)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Every request: 401 without a valid token, 403 unless RBAC allows it (only installed when auth is on)."""
        user = self.authenticator.authenticate(request.headers.get("Authorization"), request.path)
        if user is None:
            return _error(st.ApiError(401, "Unauthorized", "Unauthorized"))
        request[USER_KEY] = user
        attrs = rbac.request_attributes(user, request.method, request.path, request.query)
        authorizer = self.authorizer
        authorizer.record(attrs)
        if not authorizer.authorize(attrs):
            return _error(rbac.forbidden(attrs))
        response: web.StreamResponse = await handler(request)
        return response

    @staticmethod
    def _user(request: web.Request) -> UserInfo:
        """Who sent the request (with authentication off, everyone is the admin, as with AlwaysAllow)."""
        user = request.get(USER_KEY)
        return user if isinstance(user, UserInfo) else ADMIN

    async def _review_body(self, request: web.Request, from_proto: Any) -> Any:
        """The JSON body, or {"spec": ...} read from kubectl's protobuf body (protowire.py)."""
        if "protobuf" not in request.content_type:
            return await self._read_body(request)
        try:
            return {"spec": from_proto(protowire.unwrap(await request.read()))}
        except ValueError as exc:
            raise st.bad_request(f"the protobuf request body could not be decoded: {exc}") from None

    async def token_request(self, request: web.Request) -> web.Response:
        """TokenRequest (pkg/registry/core/serviceaccount/storage/token.go): a token for the ServiceAccount."""
        try:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            body = await self._review_body(request, protowire.token_request_spec)
            if not isinstance(body, dict):
                raise st.bad_request("the body of a TokenRequest must be a JSON object")
            sa_type = self.registry.resolve("", "v1", "serviceaccounts")
            assert sa_type is not None
            sa = self.registry.store.get(("", "serviceaccounts"), namespace, name)
            if sa is None:
                raise st.not_found(sa_type, name)
            spec: dict[str, Any] = body["spec"] if isinstance(body.get("spec"), dict) else {}
            expiration = spec.get("expirationSeconds")
            if expiration is None:
                expiration = 3600
            kind = "TokenRequest.authentication.k8s.io"
            if not isinstance(expiration, int) or isinstance(expiration, bool):
                raise st.bad_request(f"spec.expirationSeconds: Invalid value: {expiration!r}: must be an integer")
            if expiration < 600:
                raise st.ApiError(
                    422,
                    "Invalid",
                    f'{kind} "{name}" is invalid: spec.expirationSeconds: Invalid value: '
                    f"{expiration}: may not specify a duration less than 10 minutes",
                )
            if expiration > 1 << 32:
                raise st.ApiError(
                    422,
                    "Invalid",
                    f'{kind} "{name}" is invalid: spec.expirationSeconds: Invalid value: '
                    f"{expiration}: may not specify a duration larger than 2^32 seconds",
                )
            audiences = spec.get("audiences") or list(API_AUDIENCES)
            uid = str(sa.obj["metadata"].get("uid", ""))
            token, expires = self.authenticator.mint_service_account_token(
                namespace=namespace,
                name=name,
                uid=uid,
                audiences=[str(a) for a in audiences],
                expiration_seconds=expiration,
            )
            now = datetime.datetime.now(datetime.UTC)
            return _json(
                {
                    "kind": "TokenRequest",
                    "apiVersion": "authentication.k8s.io/v1",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "creationTimestamp": format_time(now),
                    },
                    "spec": {
                        "audiences": audiences,
                        "expirationSeconds": expiration,
                        "boundObjectRef": spec.get("boundObjectRef"),
                    },
                    "status": {"token": token, "expirationTimestamp": format_time(expires)},
                },
                status=201,
            )
        except st.ApiError as exc:
            return _error(exc)

    async def self_subject_access_review(self, request: web.Request) -> web.Response:
        """SelfSubjectAccessReview (pkg/registry/authorization/selfsubjectaccessreview/rest.go): may I do this?"""
        try:
            body = await self._review_body(request, protowire.self_subject_access_review_spec)
            spec = body.get("spec") if isinstance(body, dict) else None
            if not isinstance(spec, dict):
                raise st.bad_request("the body of a SelfSubjectAccessReview must be an object with a spec")
            res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
            kind = "SelfSubjectAccessReview.authorization.k8s.io"
            if (res is None) == (non is None):
                detail = (
                    'spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or '
                    "resourceAttributes must be specified"
                )
                raise st.ApiError(422, "Invalid", f'{kind} "" is invalid: {detail}')
            user = self._user(request)
            if isinstance(res, dict):
                attrs = rbac.Attributes(
                    user,
                    str(res.get("verb", "")),
                    True,
                    str(res.get("group", "")),
                    str(res.get("version", "")),
                    str(res.get("resource", "")),
                    str(res.get("subresource", "")),
                    str(res.get("namespace", "")),
                    str(res.get("name", "")),
                )
            elif isinstance(non, dict):
                attrs = rbac.Attributes(user, str(non.get("verb", "")), False, path=str(non.get("path", "")))
            else:
                raise st.bad_request("spec.nonResourceAttributes must be an object")
            allowed, reason = self.authorizer.explain(attrs) if self.enforcing else (True, "")
            status: dict[str, Any] = {"allowed": allowed}
            if reason:
                status["reason"] = reason
            return _json(
                {
                    "kind": "SelfSubjectAccessReview",
                    "apiVersion": "authorization.k8s.io/v1",
                    "metadata": {"creationTimestamp": None},
                    "spec": spec,
                    "status": status,
                },
                status=201,
            )
        except st.ApiError as exc:
            return _error(exc)

    async def self_subject_rules_review(self, request: web.Request) -> web.Response:
        """SelfSubjectRulesReview (pkg/registry/authorization/selfsubjectrulesreview/rest.go): what may I do in
        this namespace? (`kubectl auth can-i --list`)"""
        try:
            body = await self._review_body(request, protowire.self_subject_rules_review_spec)
            spec = body.get("spec") if isinstance(body, dict) else None
            namespace = str((spec or {}).get("namespace") or "") if isinstance(spec, dict) or spec is None else ""
            if self.enforcing:
                resource_rules, non_resource_rules = self.authorizer.rules_for(self._user(request), namespace)
            else:
                resource_rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
                non_resource_rules = [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
            return _json(
                {
                    "kind": "SelfSubjectRulesReview",
                    "apiVersion": "authorization.k8s.io/v1",
                    "metadata": {"creationTimestamp": None},
                    "spec": {"namespace": namespace} if namespace else {},
                    "status": {
                        "resourceRules": resource_rules,
                        "nonResourceRules": non_resource_rules,
                        "incomplete": False,
                    },
                },
                status=201,
            )
        except st.ApiError as exc:
            return _error(exc)

    async def self_subject_review(self, request: web.Request) -> web.Response:
        """SelfSubjectReview (pkg/registry/authentication/selfsubjectreview/rest.go): who am I?"""
        return _json(
            {
                "kind": "SelfSubjectReview",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": None},
                "status": {"userInfo": self._user(request).as_status()},
            },
            status=201,
        )
