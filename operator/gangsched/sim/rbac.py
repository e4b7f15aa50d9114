"""Authorization for the emulator: request attributes and the RBAC authorizer, as kube-apiserver computes them.

Contract:
- `request_attributes(user, method, path, query) -> Attributes`: resource or non-resource request, verb,
  namespace, name (also from a `metadata.name` field selector) and subresource, as requestinfo.go derives them.
- `RbacAuthorizer(store)`: system:masters always allowed; else a (Cluster)RoleBinding whose subject is the user,
  a group or the service account refers to a matching rule (verbs, groups, resources, resourceNames,
  nonResourceURLs), as rbac.go. `authorize(attrs)` is cached until an RBAC object changes; `explain(attrs)` gives
  the reason; `rules_for(user, namespace)` lists the rules. Aggregated ClusterRoles are not modelled.
- `forbidden(attrs)`: the real 403; `record(attrs)` keeps per user what was asked (`usage[user]`).
- `BOOTSTRAP_OBJECTS`: cluster-admin for system:masters, discovery, basic-user and public-info-viewer.
More: docs/modules.md#simrbacpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.sim import status as st
from gangsched.sim.auth import MASTERS, UserInfo
from gangsched.sim.store import Store, Watcher, WatchEvent

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLES = (RBAC_GROUP, "roles")
CLUSTER_ROLES = (RBAC_GROUP, "clusterroles")
ROLE_BINDINGS = (RBAC_GROUP, "rolebindings")
CLUSTER_ROLE_BINDINGS = (RBAC_GROUP, "clusterrolebindings")
RBAC_KEYS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)

_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_CACHE_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class Attributes:
    user: UserInfo
    verb: str
    resource_request: bool
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


def _name_from_field_selector(selector: str) -> str:
    """The X of a `metadata.name=X` / `metadata.name==X` term (fields.Selector.RequiresExactMatch), else ""."""
    for term in selector.split(","):
        key, sep, value = term.partition("==")
        if not sep:
            key, sep, value = term.partition("=")
            if key.endswith("!"):
                continue
        if sep and key.strip() == "metadata.name":
            value = value.strip()
            if value and "/" not in value and value not in (".", ".."):
                return value
    return ""


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """See module docstring (requestinfo.go)."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return Attributes(user, method.lower(), False, path=path)
    if parts[0] == "api":
        if len(parts) < 3:
            return Attributes(user, method.lower(), False, path=path)
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return Attributes(user, method.lower(), False, path=path)
        group, version, rest = parts[1], parts[2], parts[3:]
    verb = _VERBS.get(method.upper(), method.lower())
    if rest[0] == "watch":
        rest = rest[1:]
        verb = "watch"
        if not rest:
            return Attributes(user, verb, False, path=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name:
        if verb == "get":
            verb = "watch" if query.get("watch") in ("true", "1", "True") else "list"
            selector = query.get("fieldSelector")
            if selector:
                name = _name_from_field_selector(selector)
        elif verb == "delete":
            verb = "deletecollection"
    return Attributes(user, verb, True, group, version, resource, subresource, namespace, name, path)


def forbidden(attrs: Attributes) -> st.ApiError:
    """The 403 of responsewriters.Forbidden: `<resource> "<name>" is forbidden: User "u" cannot ...`."""
    user = attrs.user.name
    if not attrs.resource_request:
        return st.ApiError(403, "Forbidden", f'forbidden: User "{user}" cannot {attrs.verb} path "{attrs.path}"')
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.namespace:
        why = (
            f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}" '
            f'in the namespace "{attrs.namespace}"'
        )
    else:
        why = (
            f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}" at the cluster scope'
        )
    qualified = attrs.resource if not attrs.group else f"{attrs.resource}.{attrs.group}"
    message = f'{qualified} "{attrs.name}" is forbidden: {why}' if attrs.name else f"{qualified} is forbidden: {why}"
    return st.ApiError(403, "Forbidden", message, name=attrs.name or None)


# ---------------------------------------------------------------------------------------------- rule matching
def _has(values: Any, value: str) -> bool:
    return isinstance(values, list) and (value in values or "*" in values)


def rule_allows(attrs: Attributes, rule: Mapping[str, Any]) -> bool:
    """rbac.go RuleAllows (validation.go's matchers)."""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        urls = rule.get("nonResourceURLs")
        if not isinstance(urls, list):
            return False
        return any(url in ("*", attrs.path) or (url.endswith("*") and attrs.path.startswith(url[:-1])) for url in urls)
    if not _has(rule.get("apiGroups"), attrs.group):
        return False
    resources = rule.get("resources")
    if not isinstance(resources, list):
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not any(r in ("*", combined) or (attrs.subresource and r == f"*/{attrs.subresource}") for r in resources):
        return False
    names = rule.get("resourceNames")
    if not names:
        return True
    return bool(attrs.name) and attrs.name in names


def _applies(user: UserInfo, subject: Mapping[str, Any], binding_namespace: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return user.name == f"system:serviceaccount:{ns}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return f'ServiceAccount "{ns}/{subject.get("name")}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


class _Invalidator(Watcher):
    """Drops the authorizer's cache on every change of an RBAC object."""

    internal = True

    def __init__(self, authorizer: RbacAuthorizer) -> None:
        super().__init__(namespace=None, matches=None)
        self._authorizer = authorizer

    def offer(self, event: WatchEvent) -> None:
        self._authorizer.cache.clear()


class RbacAuthorizer:
    """See module docstring."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.cache: dict[tuple[Any, ...], bool] = {}
        self.usage: dict[str, set[tuple[str, str, str, str]]] = {}
        self.names: dict[
            str, set[tuple[str, str, str, str]]
        ] = {}  # user -> (group, resource, namespace, name) used by name
        self._invalidator = _Invalidator(self)
        for key in RBAC_KEYS:
            store.subscribe(key, self._invalidator)

    # ------------------------------------------------------------------ rules
    def _role_rules(self, kind: str, name: str, namespace: str) -> list[Mapping[str, Any]]:
        entry = self.store.get(ROLES, namespace, name) if kind == "Role" else self.store.get(CLUSTER_ROLES, "", name)
        if entry is None:
            return []
        rules = entry.obj.get("rules")
        return rules if isinstance(rules, list) else []

    def _visit(self, attrs: Attributes) -> Iterable[tuple[str, Mapping[str, Any]]]:
        """(description of the binding, rule) for every rule that applies to the request's user and namespace."""
        user = attrs.user
        for entry in self.store.entries(CLUSTER_ROLE_BINDINGS):
            obj = entry.obj
            ref = obj.get("roleRef") or {}
            for subject in obj.get("subjects") or []:
                if _applies(user, subject, ""):
                    where = (
                        f'ClusterRoleBinding "{obj["metadata"]["name"]}" of {ref.get("kind")} "{ref.get("name")}" '
                        f"to {_describe_subject(subject, '')}"
                    )
                    if ref.get("kind") == "ClusterRole":
                        for rule in self._role_rules("ClusterRole", str(ref.get("name")), ""):
                            yield where, rule
                    break
        if not attrs.namespace:
            return
        for entry in self.store.entries(ROLE_BINDINGS, attrs.namespace):
            obj = entry.obj
            ns = obj["metadata"].get("namespace", "")
            ref = obj.get("roleRef") or {}
            for subject in obj.get("subjects") or []:
                if _applies(user, subject, ns):
                    where = (
                        f'RoleBinding "{obj["metadata"]["name"]}/{ns}" of {ref.get("kind")} "{ref.get("name")}" '
                        f"to {_describe_subject(subject, ns)}"
                    )
                    for rule in self._role_rules(str(ref.get("kind")), str(ref.get("name")), ns):
                        yield where, rule
                    break

    def explain(self, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason) without the cache; the reason as rbac.go's authorizingVisitor words it."""
        if MASTERS in attrs.user.groups:
            return True, ""
        for where, rule in self._visit(attrs):
            if rule_allows(attrs, rule):
                return True, f"RBAC: allowed by {where}"
        return False, ""

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(resourceRules, nonResourceRules) that apply to the user in the namespace: a SelfSubjectRulesReview's
        status (pkg/registry/authorization/selfsubjectrulesreview/rest.go, from rbac.go's RulesFor)."""
        resource_rules: list[dict[str, Any]] = []
        non_resource_rules: list[dict[str, Any]] = []
        for _, rule in self._visit(Attributes(user, "", True, namespace=namespace)):
            if rule.get("nonResourceURLs"):
                non_resource_rules.append(
                    {"verbs": list(rule.get("verbs") or []), "nonResourceURLs": list(rule["nonResourceURLs"])}
                )
            if rule.get("resources"):
                out = {
                    "verbs": list(rule.get("verbs") or []),
                    "apiGroups": list(rule.get("apiGroups") or []),
                    "resources": list(rule["resources"]),
                }
                if rule.get("resourceNames"):
                    out["resourceNames"] = list(rule["resourceNames"])
                resource_rules.append(out)
        return resource_rules, non_resource_rules

    def authorize(self, attrs: Attributes) -> bool:
        user = attrs.user
        if MASTERS in user.groups:
            return True
        if attrs.resource_request:
            key: tuple[Any, ...] = (
                user.name,
                user.groups,
                attrs.verb,
                attrs.group,
                attrs.resource,
                attrs.subresource,
                attrs.namespace,
            )
        else:
            key = (user.name, user.groups, attrs.verb, attrs.path)
        cache = self.cache
        allowed = cache.get(key)
        if allowed is None:
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            # whether the request is allowed whatever its name: no resourceNames-limited rule is needed
            anonymous = (
                Attributes(
                    user,
                    attrs.verb,
                    attrs.resource_request,
                    attrs.group,
                    attrs.version,
                    attrs.resource,
                    attrs.subresource,
                    attrs.namespace,
                    "",
                    attrs.path,
                )
                if attrs.name
                else attrs
            )
            allowed = cache[key] = self.explain(anonymous)[0]
        if allowed or not attrs.name:
            return allowed
        named = (*key, attrs.name)
        by_name = cache.get(named)
        if by_name is None:
            by_name = cache[named] = self.explain(attrs)[0]
        return by_name

    def record(self, attrs: Attributes) -> None:
        if attrs.resource_request:
            self.usage.setdefault(attrs.user.name, set()).add(
                (attrs.verb, attrs.group, attrs.resource, attrs.subresource)
            )
            if attrs.name and attrs.resource in ("leases", "configmaps"):
                self.names.setdefault(attrs.user.name, set()).add(
                    (attrs.group, attrs.resource, attrs.namespace, attrs.name)
                )


# ---------------------------------------------------------------------------------------------- bootstrap policy
def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    }


def _cluster_role_binding(name: str, role: str, groups: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


BOOTSTRAP_OBJECTS: tuple[dict[str, Any], ...] = (
    _cluster_role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _cluster_role_binding("cluster-admin", "cluster-admin", [MASTERS]),
    _cluster_role(
        "system:discovery",
        [
            {
                "nonResourceURLs": [
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                "verbs": ["get"],
            }
        ],
    ),
    _cluster_role_binding("system:discovery", "system:discovery", ["system:authenticated"]),
    _cluster_role(
        "system:basic-user",
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
        ],
    ),
    _cluster_role_binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
    _cluster_role(
        "system:public-info-viewer",
        [{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}],
    ),
    _cluster_role_binding(
        "system:public-info-viewer", "system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]
    ),
)
