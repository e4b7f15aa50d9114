"""The built-in kinds the emulator serves, as ResourceType values.

Contract: `BUILTIN_TYPES` lists every kind served from the start (core/v1, events.k8s.io/v1,
scheduling.k8s.io/v1, coordination.k8s.io/v1, node.k8s.io/v1 RuntimeClass, policy/v1, storage.k8s.io/v1,
networking.k8s.io/v1 NetworkPolicy (stored, not enforced), apps/v1
workloads (Deployment, ReplicaSet, StatefulSet; ReplicationController in core/v1: stored only, the disruption
controller reads their scale), batch/v1 Job, rbac.authorization.k8s.io/v1, flowcontrol.apiserver.k8s.io/v1, the
create-only SelfSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview, apiextensions.k8s.io/v1; the
last entry is the CRD type). Their bodies are checked against the real v1.37 schemas by sim/validation/.
`crd_types(crd)` turns a CustomResourceDefinition object into one ResourceType per served version. Nothing here
does I/O.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.types import ResourceType

_STATUS = frozenset({"status"})

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "Namespace",
        "namespaces",
        "namespace",
        False,
        ("ns",),
        _STATUS,
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    ),
    ResourceType("", "v1", "Node", "nodes", "node", False, ("no",), _STATUS),
    ResourceType(
        "", "v1", "Pod", "pods", "pod", True, ("po",), frozenset({"status", "binding", "eviction"}), categories=("all",)
    ),
    ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    ResourceType("", "v1", "Secret", "secrets", "secret", True),
    ResourceType("", "v1", "Service", "services", "service", True, ("svc",), _STATUS, categories=("all",)),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",), frozenset({"token"})),
    ResourceType("", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False, ("pc",)),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    # strategy and pod admission: sim/runtimeclass.py
    ResourceType("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", "runtimeclass", False),
    ResourceType(
        "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget", True, ("pdb",), _STATUS
    ),
    # scale-able workloads, stored only (no controllers run them): the disruption controller reads their
    # spec.replicas for PodDisruptionBudgets with maxUnavailable or a percentage (sim/disruption.py)
    ResourceType(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        "replicationcontroller",
        True,
        ("rc",),
        _STATUS,
        categories=("all",),
    ),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ("rs",), _STATUS, categories=("all",)),
    ResourceType(
        "apps", "v1", "StatefulSet", "statefulsets", "statefulset", True, ("sts",), _STATUS, categories=("all",)
    ),
    ResourceType("", "v1", "ResourceQuota", "resourcequotas", "resourcequota", True, ("quota",), _STATUS),
    ResourceType("", "v1", "PersistentVolume", "persistentvolumes", "persistentvolume", False, ("pv",), _STATUS),
    ResourceType(
        "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", True, ("pvc",), _STATUS
    ),
    ResourceType("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False, ("sc",)),
    # stored only, never enforced (as on a cluster whose network plugin ignores NetworkPolicy): the install
    # (manifests/networkpolicy.yaml, in the kustomize base) applies one
    ResourceType("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", "networkpolicy", True, ("netpol",)),
    ResourceType(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        "deployment",
        True,
        ("deploy",),
        frozenset({"status", "scale"}),
        categories=("all",),
    ),
    ResourceType("batch", "v1", "Job", "jobs", "job", True, (), _STATUS, categories=("all",)),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True),
    ResourceType(
        "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", False
    ),
    ResourceType("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", "flowschema", False, (), _STATUS),
    ResourceType(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        "prioritylevelconfiguration",
        False,
        (),
        _STATUS,
    ),
    # create-only reviews (answered by apiserver.py, never stored)
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        False,
        verbs=("create",),
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        False,
        verbs=("create",),
    ),
    ResourceType(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        "selfsubjectreview",
        False,
        verbs=("create",),
    ),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        False,
        ("crd", "crds"),
        _STATUS,
    ),
)

# Kinds whose objects live in one storage across API groups is not modelled: core/v1 and events.k8s.io/v1
# events are stored separately.

CRD_TYPE: ResourceType = BUILTIN_TYPES[-1]


def crd_types(crd: dict[str, Any]) -> list[ResourceType]:
    """One ResourceType per served version of a CustomResourceDefinition object (already validated)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    out: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        subs = frozenset(k for k in ("status", "scale") if k in subresources)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        out.append(
            ResourceType(
                group=group,
                version=str(version.get("name")),
                kind=str(names.get("kind", "")),
                plural=str(names.get("plural", "")),
                singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=subs,
                schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                categories=tuple(names.get("categories") or ()),
                is_crd=True,
                selectable_fields=tuple(
                    str(f.get("jsonPath", "")).lstrip(".")
                    for f in version.get("selectableFields") or ()
                    if isinstance(f, dict)
                ),
            )
        )
    return out


def crd_storage_version(crd: dict[str, Any]) -> str:
    """The version marked storage: true (else the first served one)."""
    versions = (crd.get("spec") or {}).get("versions") or []
    for version in versions:
        if version.get("storage"):
            return str(version.get("name"))
    return str(versions[0].get("name")) if versions else ""


def validate_crd(crd: dict[str, Any]) -> list[tuple[str, str]]:
    """Problems of a CRD object as (field path, message); empty when it can be served."""
    problems: list[tuple[str, str]] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "Required value")]
    names = spec.get("names") or {}
    group = spec.get("group")
    if not group or not isinstance(group, str) or "." not in group:
        problems.append(("spec.group", f"Invalid value: {group!r}: should be a domain with at least one dot"))
    for key in ("plural", "kind"):
        if not names.get(key):
            problems.append((f"spec.names.{key}", "Required value"))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        problems.append(("spec.scope", f'Unsupported value: {scope!r}: supported values: "Cluster", "Namespaced"'))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        problems.append(("spec.versions", "Required value: must have exactly one version marked as storage version"))
    else:
        storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
        if len(storage) != 1:
            problems.append(("spec.versions", "Invalid value: must have exactly one version marked as storage version"))
        for i, v in enumerate(versions):
            if not isinstance(v, dict) or not v.get("name"):
                problems.append((f"spec.versions[{i}].name", "Required value"))
    expected = f"{names.get('plural')}.{group}"
    name = (crd.get("metadata") or {}).get("name")
    if name != expected:
        problems.append(
            ("metadata.name", f'Invalid value: {name!r}: must be spec.names.plural+"."+spec.group ({expected!r})')
        )
    return problems
