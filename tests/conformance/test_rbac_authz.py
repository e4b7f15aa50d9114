"""Authentication and RBAC of the emulator, checked against what kube-apiserver (v1.32) does.

Sources (kubernetes/kubernetes):
- staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go (+ requestinfo_test.go): the request
  attributes (verb, API group, resource, subresource, namespace, name) an authorizer sees, including list/watch
  with a `metadata.name` field selector carrying that name;
- plugin/pkg/auth/authorizer/rbac/rbac.go and pkg/registry/rbac/validation/rule.go: rule and subject matching
  (verbs, apiGroups, resources with "res/sub" and "*/sub", resourceNames, nonResourceURLs; RoleBinding subjects
  of kind ServiceAccount default to the binding's namespace), system:masters always allowed;
- staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (forbiddenMessage) and
  apimachinery's errors.NewForbidden: the 403 message;
- pkg/registry/core/serviceaccount/storage/token.go and pkg/apis/authentication/validation: TokenRequest
  (404 for a missing ServiceAccount, at least 10 minutes), pkg/serviceaccount/claims.go (a token of a deleted
  ServiceAccount no longer authenticates);
- pkg/registry/authorization/selfsubjectaccessreview/rest.go and pkg/apis/authorization/validation: the
  SelfSubjectAccessReview (`kubectl auth can-i`) and its "exactly one of" rule;
- pkg/registry/authentication/selfsubjectreview/rest.go: SelfSubjectReview (`kubectl auth whoami`);
- 1.32 AnonymousAuthConfigurableEndpoints: anonymous requests only on /healthz, /livez, /readyz (401 elsewhere).
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.apiserver import ApiServer
from gangsched.sim.auth import ADMIN, UserInfo
from gangsched.sim.rbac import request_attributes
from tests.tools import need_tool

RBAC = "/apis/rbac.authorization.k8s.io/v1"
SA_USER = "system:serviceaccount:team:bot"


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    s = ApiServer(auth=True)
    await s.start()
    try:
        yield s
    finally:
        await s.stop()


@pytest.fixture
async def admin(server: ApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "admin"))) as client:
        await client.create("/api/v1/namespaces", {"metadata": {"name": "team"}})
        await client.create("/api/v1/namespaces/team/serviceaccounts", {"metadata": {"name": "bot"}})
        yield client


async def token_for(admin: KubeClient, namespace: str = "team", name: str = "bot", **spec: Any) -> str:
    answer = await admin.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    return str(answer["status"]["token"])


@pytest.fixture
async def bot(server: ApiServer, admin: KubeClient, tmp_path: Path) -> AsyncIterator[KubeClient]:
    path = server.write_kubeconfig(tmp_path / "bot", token=await token_for(admin))
    async with await KubeClient.connect(str(path)) as client:
        yield client


async def status_of(call: Any) -> tuple[int, str]:
    try:
        await call
    except ApiError as exc:
        return exc.status, exc.message
    return 200, ""


# ---------------------------------------------------------------------------------------------- requestinfo.go
U = UserInfo("u")
REQUEST_INFO_CASES = [
    # (method, path, query) -> (verb, resource request, group, resource, subresource, namespace, name)
    ("GET", "/api/v1/namespaces", {}, ("list", True, "", "namespaces", "", "", "")),
    ("GET", "/api/v1/namespaces/other", {}, ("get", True, "", "namespaces", "", "other", "other")),
    ("GET", "/api/v1/namespaces/other/pods", {}, ("list", True, "", "pods", "", "other", "")),
    ("GET", "/api/v1/namespaces/other/pods/foo", {}, ("get", True, "", "pods", "", "other", "foo")),
    ("GET", "/api/v1/pods", {}, ("list", True, "", "pods", "", "", "")),
    ("GET", "/api/v1/pods", {"watch": "true"}, ("watch", True, "", "pods", "", "", "")),
    ("GET", "/api/v1/watch/namespaces/other/pods", {}, ("watch", True, "", "pods", "", "other", "")),
    ("GET", "/api/v1/watch/namespaces/other/pods/foo", {}, ("watch", True, "", "pods", "", "other", "foo")),
    (
        "GET",
        "/api/v1/namespaces/other/pods",
        {"fieldSelector": "metadata.name=foo"},
        ("list", True, "", "pods", "", "other", "foo"),
    ),
    (
        "GET",
        "/api/v1/namespaces/other/pods",
        {"watch": "1", "fieldSelector": "metadata.name==foo"},
        ("watch", True, "", "pods", "", "other", "foo"),
    ),
    (
        "GET",
        "/api/v1/namespaces/other/pods",
        {"fieldSelector": "metadata.name!=foo"},
        ("list", True, "", "pods", "", "other", ""),
    ),
    ("POST", "/api/v1/namespaces/other/pods", {}, ("create", True, "", "pods", "", "other", "")),
    ("POST", "/api/v1/namespaces/other/pods/foo/binding", {}, ("create", True, "", "pods", "binding", "other", "foo")),
    ("PATCH", "/api/v1/namespaces/other/pods/foo/status", {}, ("patch", True, "", "pods", "status", "other", "foo")),
    (
        "PUT",
        "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
        {},
        ("update", True, "coordination.k8s.io", "leases", "", "ns", "l"),
    ),
    ("DELETE", "/api/v1/namespaces/other/pods/foo", {}, ("delete", True, "", "pods", "", "other", "foo")),
    ("DELETE", "/api/v1/namespaces/other/pods", {}, ("deletecollection", True, "", "pods", "", "other", "")),
    ("PUT", "/api/v1/namespaces/other/finalize", {}, ("update", True, "", "namespaces", "finalize", "other", "other")),
    ("GET", "/api/v1", {}, ("get", False, "", "", "", "", "")),
    ("GET", "/apis/policy/v1", {}, ("get", False, "", "", "", "", "")),
    ("GET", "/healthz", {}, ("get", False, "", "", "", "", "")),
    ("POST", "/openapi/v2", {}, ("post", False, "", "", "", "", "")),
]


@pytest.mark.parametrize(("method", "path", "query", "expected"), REQUEST_INFO_CASES)
def test_request_attributes_as_requestinfo_go(
    method: str, path: str, query: dict[str, str], expected: tuple[Any, ...]
) -> None:
    a = request_attributes(U, method, path, query)
    assert (a.verb, a.resource_request, a.group, a.resource, a.subresource, a.namespace, a.name) == expected


# ---------------------------------------------------------------------------------------------- authentication
async def test_requests_without_a_valid_token_get_401_but_health_probes_answer(server: ApiServer) -> None:
    async with aiohttp.ClientSession() as session:
        for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic eDp5"}):
            async with session.get(f"{server.url}/api/v1/pods", headers=headers, ssl=False) as r:
                assert r.status == 401
                assert (await r.json())["reason"] == "Unauthorized"
        async with session.get(f"{server.url}/readyz", ssl=False) as r:
            assert r.status == 200
        async with session.get(
            f"{server.url}/api/v1/pods",
            ssl=False,
            headers={"Authorization": f"Bearer {server.authenticator.admin_token}"},
        ) as r:
            assert r.status == 200


async def test_the_admin_kubeconfig_is_a_system_masters_user_over_https(server: ApiServer, admin: KubeClient) -> None:
    assert server.url.startswith("https://")
    review = await admin.create(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    assert review["status"]["userInfo"] == {
        "username": ADMIN.name,
        "groups": ["system:masters", "system:authenticated"],
    }


async def test_token_request_mints_a_service_account_token_that_authenticates_as_it(
    server: ApiServer, admin: KubeClient, bot: KubeClient
) -> None:
    review = await bot.create(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    info = review["status"]["userInfo"]
    assert info["username"] == SA_USER
    assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]
    sa = await admin.get("/api/v1/namespaces/team/serviceaccounts/bot")
    assert info["uid"] == sa["metadata"]["uid"]
    answer = await admin.create(
        "/api/v1/namespaces/team/serviceaccounts/bot/token", {"spec": {"expirationSeconds": 600}}
    )
    assert answer["kind"] == "TokenRequest" and answer["spec"]["expirationSeconds"] == 600
    assert answer["spec"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]
    assert answer["status"]["expirationTimestamp"].endswith("Z")
    # the ServiceAccount deleted: its tokens no longer authenticate
    await admin.delete("/api/v1/namespaces/team/serviceaccounts/bot")
    assert (await status_of(bot.get("/api/v1/namespaces/team/pods")))[0] == 401


async def test_token_request_validation(admin: KubeClient) -> None:
    code, message = await status_of(token_for(admin, name="nobody"))
    assert (code, message) == (404, 'serviceaccounts "nobody" not found')
    code, message = await status_of(token_for(admin, expirationSeconds=599))
    assert code == 422
    assert message == (
        'TokenRequest.authentication.k8s.io "bot" is invalid: spec.expirationSeconds: Invalid value: 599: '
        "may not specify a duration less than 10 minutes"
    )


# ---------------------------------------------------------------------------------------------- authorization
async def test_forbidden_with_the_real_message_until_a_role_binding_allows(admin: KubeClient, bot: KubeClient) -> None:
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "x"},
        "target": {"kind": "Node", "name": "n"},
    }
    code, message = await status_of(bot.create("/api/v1/namespaces/team/pods/x/binding", binding))
    assert code == 403
    assert message == (
        f'pods "x" is forbidden: User "{SA_USER}" cannot create resource "pods/binding" in API group "" '
        'in the namespace "team"'
    )
    code, message = await status_of(bot.get("/apis/coordination.k8s.io/v1/leases"))
    assert message == (
        f'leases.coordination.k8s.io is forbidden: User "{SA_USER}" cannot list resource "leases" in API '
        'group "coordination.k8s.io" at the cluster scope'
    )
    await admin.create(
        f"{RBAC}/namespaces/team/roles",
        {
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "get"]}],
        },
    )
    assert (await status_of(bot.get("/api/v1/namespaces/team/pods")))[0] == 403  # a Role alone grants nothing
    await admin.create(
        f"{RBAC}/namespaces/team/rolebindings",
        {
            "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot"}],
        },
    )  # no namespace: the binding's
    assert (await status_of(bot.get("/api/v1/namespaces/team/pods")))[0] == 200
    assert (await status_of(bot.get("/api/v1/namespaces/default/pods")))[0] == 403  # a RoleBinding is namespaced
    assert (await status_of(bot.get("/api/v1/pods")))[0] == 403
    # "pods" does not grant a subresource; deleting the binding takes effect at once (the cache is invalidated)
    assert (await status_of(bot.get("/api/v1/namespaces/team/pods/x/status")))[0] == 403
    await admin.delete(f"{RBAC}/namespaces/team/rolebindings/reader")
    assert (await status_of(bot.get("/api/v1/namespaces/team/pods")))[0] == 403


async def test_cluster_role_binding_by_group_and_subresource_wildcards(admin: KubeClient, bot: KubeClient) -> None:
    await admin.create(
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": "status-reader"},
            "rules": [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}],
        },
    )
    await admin.create(
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": "status-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "status-reader"},
            "subjects": [{"kind": "Group", "name": "system:serviceaccounts:team"}],
        },
    )
    await admin.create(
        "/api/v1/namespaces/team/pods",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    assert (await status_of(bot.get("/api/v1/namespaces/team/pods/p/status")))[0] == 200
    assert (await status_of(bot.get("/api/v1/namespaces/team/pods/p")))[0] == 403


async def test_resource_names_authorize_get_and_list_watch_by_name_but_never_create(
    admin: KubeClient, bot: KubeClient
) -> None:
    await admin.create(
        f"{RBAC}/namespaces/team/roles",
        {
            "metadata": {"name": "one-cm"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": ["cfg"],
                    "verbs": ["get", "list", "watch", "create", "update"],
                }
            ],
        },
    )
    await admin.create(
        f"{RBAC}/namespaces/team/rolebindings",
        {
            "metadata": {"name": "one-cm"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one-cm"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}],
        },
    )
    cms = "/api/v1/namespaces/team/configmaps"
    assert (await status_of(bot.create(cms, {"metadata": {"name": "cfg"}})))[0] == 403  # create has no name
    await admin.create(cms, {"metadata": {"name": "cfg"}, "data": {"a": "1"}})
    await admin.create(cms, {"metadata": {"name": "other"}})
    assert (await status_of(bot.get(f"{cms}/cfg")))[0] == 200
    assert (await status_of(bot.get(f"{cms}/other")))[0] == 403
    assert (await status_of(bot.get(cms)))[0] == 403
    listed = await bot.get(cms, params={"fieldSelector": "metadata.name=cfg"})
    assert [i["metadata"]["name"] for i in listed["items"]] == ["cfg"]
    assert (await status_of(bot.get(cms, params={"fieldSelector": "metadata.name=other"})))[0] == 403
    events = [
        e
        async for e in bot.watch(
            cms, resource_version="0", params={"fieldSelector": "metadata.name=cfg"}, timeout_seconds=1
        )
    ]
    assert [o["metadata"]["name"] for t, o in events if t != "BOOKMARK"] == ["cfg"]


async def test_self_subject_access_review_answers_can_i(admin: KubeClient, bot: KubeClient) -> None:
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    ask = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {"namespace": "team", "verb": "create", "resource": "pods", "subresource": "binding"}
        },
    }
    assert (await bot.create(path, ask))["status"] == {"allowed": False}
    assert (await admin.create(path, ask))["status"]["allowed"] is True
    await admin.create(
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": "binder"},
            "rules": [{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}],
        },
    )
    await admin.create(
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": "binder"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "binder"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}],
        },
    )
    status = (await bot.create(path, ask))["status"]
    assert status == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "binder" of ClusterRole "binder" to ServiceAccount "team/bot"',
    }
    non = {"spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}
    assert (await bot.create(path, non))["status"]["allowed"] is True  # system:public-info-viewer
    code, message = await status_of(bot.create(path, {"spec": {}}))
    assert code == 422 and "exactly one of nonResourceAttributes or resourceAttributes must be specified" in message


# ---------------------------------------------------------------------------------------------- kubectl
def _kubectl(kubeconfig: Path, tmp: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    binary = need_tool("kubectl")
    return subprocess.run(
        [binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp / 'cache'}", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp), "PATH": "/usr/bin:/bin"},
        check=False,
    )


async def test_kubectl_auth_whoami_can_i_and_create_token(server: ApiServer, admin: KubeClient, tmp_path: Path) -> None:
    import asyncio

    kc = server.write_kubeconfig(tmp_path / "kc")
    who = await asyncio.to_thread(_kubectl, kc, tmp_path, "auth", "whoami")
    assert who.returncode == 0 and "kubernetes-admin" in who.stdout and "system:masters" in who.stdout
    yes = await asyncio.to_thread(_kubectl, kc, tmp_path, "auth", "can-i", "create", "pods/binding", "-n", "team")
    assert (yes.returncode, yes.stdout.strip()) == (0, "yes")
    token = await asyncio.to_thread(_kubectl, kc, tmp_path, "create", "token", "bot", "-n", "team", "--duration=15m")
    assert token.returncode == 0, token.stderr
    bot_kc = server.write_kubeconfig(tmp_path / "bot-kc", token=token.stdout.strip(), namespace="team")
    no = await asyncio.to_thread(_kubectl, bot_kc, tmp_path, "auth", "can-i", "create", "pods/binding")
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    denied = await asyncio.to_thread(_kubectl, bot_kc, tmp_path, "get", "pods")
    assert denied.returncode == 1
    assert (
        f'Error from server (Forbidden): pods is forbidden: User "{SA_USER}" cannot list resource "pods" in API '
        f'group "" '
        'in the namespace "team"'
    ) in denied.stderr
    who = await asyncio.to_thread(_kubectl, bot_kc, tmp_path, "auth", "whoami")
    assert SA_USER in who.stdout


async def test_kubectl_auth_can_i_list_shows_the_rules_of_the_namespace(
    server: ApiServer, admin: KubeClient, tmp_path: Path
) -> None:
    """SelfSubjectRulesReview (pkg/registry/authorization/selfsubjectrulesreview/rest.go; rbac.go RulesFor): the
    rules of the ClusterRoleBindings and the namespace's RoleBindings that apply to the user."""
    import asyncio

    await admin.create(
        f"{RBAC}/namespaces/team/roles",
        {
            "metadata": {"name": "lease"},
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": ["gangsched"],
                    "verbs": ["get", "update"],
                }
            ],
        },
    )
    await admin.create(
        f"{RBAC}/namespaces/team/rolebindings",
        {
            "metadata": {"name": "lease"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot"}],
        },
    )
    bot_kc = server.write_kubeconfig(tmp_path / "bot-kc", token=await token_for(admin), namespace="team")
    listed = await asyncio.to_thread(_kubectl, bot_kc, tmp_path, "auth", "can-i", "--list")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert ["leases.coordination.k8s.io", "[]", "[gangsched]", "[get", "update]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows
    assert not any(r[0].startswith("pods") for r in rows)
    elsewhere = await asyncio.to_thread(_kubectl, bot_kc, tmp_path, "auth", "can-i", "--list", "-n", "default")
    assert "leases" not in elsewhere.stdout


async def test_an_expired_service_account_token_no_longer_authenticates(tmp_path: Path) -> None:
    """Bound tokens carry exp (pkg/serviceaccount/claims.go validates it): past it, 401."""
    now = [1_000_000.0]
    async with ApiServer(auth=True) as server:
        server.authenticator.clock = lambda: now[0]
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "admin"))) as admin:
            await admin.create("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "bot"}})
            token = await token_for(admin, "default", "bot", expirationSeconds=600)
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "bot", token=token))) as bot:
            path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
            assert (await bot.create(path, {}))["status"]["userInfo"]["username"] == "system:serviceaccount:default:bot"
            now[0] += 600
            assert (await status_of(bot.create(path, {})))[0] == 401


async def test_a_token_for_another_audience_does_not_authenticate(
    server: ApiServer, admin: KubeClient, tmp_path: Path
) -> None:
    """TokenRequest spec.audiences: the authenticator accepts only tokens meant for the API server's audiences
    (pkg/serviceaccount/jwt.go: the audience must intersect --api-audiences)."""
    token = await token_for(admin, audiences=["vault"])
    async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "vault", token=token))) as client:
        assert (await status_of(client.get("/api/v1/namespaces/team/pods")))[0] == 401
