"""`pods/binding` as kube-apiserver v1.37 serves it (pkg/registry/core/pod/storage/storage.go, BindingREST).

Contract: `bind_pod(store, rtype, namespace, name, body, *, now, dry_run) -> Status dict` binds the pod to
`body.target.name`, or raises status.ApiError where and as the real registry does: 400 (not a Binding, or name
or namespace not the request's), 500 (target.kind neither "Node" nor empty, or no target.name), 404 (no pod),
409 on "pods" (uid or resourceVersion preconditions) and 409 on "pods/binding" (being deleted, already assigned,
or scheduling gates, in that order).
On success: spec.nodeName, the Binding's annotations merged, PodScheduled True (as `podutil.UpdatePodCondition`),
status.nominatedNodeName cleared. The namespace lifecycle admission is the caller's.
More: docs/modules.md#simbindingpy.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim import status as st
from gangsched.sim.store import Store
from gangsched.sim.types import ResourceType

# the resource assignPod's conflicts name (errors.NewConflict(api.Resource("pods/binding"), ...))
_BINDING_RESOURCE = ResourceType("", "v1", "Binding", "pods/binding", "binding", True)


def _binding_conflict(name: str, why: str) -> st.ApiError:
    return st.conflict(_BINDING_RESOURCE, name, why)


def _precondition_failed(rtype: ResourceType, namespace: str, name: str, what: str) -> st.ApiError:
    key = f"/registry/{rtype.plural}/{namespace}/{name}"
    return st.conflict(
        rtype,
        name,
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: {what}",
    )


def validate_binding(body: Any, namespace: str, name: str) -> dict[str, Any]:
    """The checks BindingREST.Create makes before touching the pod; returns the Binding's metadata."""
    if not isinstance(body, dict):
        raise st.bad_request(f"not a Binding object: {type(body).__name__}")
    kind = body.get("kind")
    if kind not in (None, "", "Binding"):
        raise st.bad_request(f"the kind of the body ({kind}) does not match the subresource pods/binding (Binding)")
    meta = body.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise st.bad_request("metadata must be an object")
    given_ns = meta.get("namespace")
    if given_ns and given_ns != namespace:
        raise st.bad_request(
            f"the namespace of the provided object ({given_ns}) does not match the namespace sent on the request "
            f"({namespace})"
        )
    if meta.get("name") != name:
        raise st.bad_request("name in URL does not match name in Binding object")
    target = body.get("target")
    if not isinstance(target, dict):
        target = {}
    problems = []
    target_kind = target.get("kind") or ""
    if target_kind not in ("", "Node"):
        problems.append(f'target.kind: Unsupported value: "{target_kind}": supported values: "Node", "<empty>"')
    if not target.get("name"):
        problems.append("target.name: Required value")
    if problems:
        text = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise st.ApiError(500, "", text)
    return meta


def bind_pod(
    store: Store,
    rtype: ResourceType,
    namespace: str,
    name: str,
    body: Any,
    *,
    now: str,
    dry_run: bool = False,
) -> dict[str, Any]:
    meta = validate_binding(body, namespace, name)
    node = str(body["target"]["name"])
    skey = (rtype.group, rtype.plural)
    current = store.get(skey, namespace, name)
    if current is None:
        raise st.not_found(rtype, name)
    pod_meta = current.obj["metadata"]
    uid = meta.get("uid")
    if uid and uid != pod_meta.get("uid"):
        raise _precondition_failed(
            rtype, namespace, name, f"UID in precondition: {uid}, UID in object meta: {pod_meta.get('uid', '')}"
        )
    rv = meta.get("resourceVersion")
    if rv and str(rv) != pod_meta.get("resourceVersion"):
        raise _precondition_failed(
            rtype,
            namespace,
            name,
            f"ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {pod_meta.get('resourceVersion')}",
        )
    spec = current.obj.get("spec") or {}
    if pod_meta.get("deletionTimestamp"):
        raise _binding_conflict(name, f"pod {name} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise _binding_conflict(name, f'pod {name} is already assigned to node "{spec["nodeName"]}"')
    if spec.get("schedulingGates"):
        raise _binding_conflict(name, f"pod {name} has non-empty .spec.schedulingGates")
    obj = current.copy()
    obj["spec"]["nodeName"] = node
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and annotations:
        obj["metadata"].setdefault("annotations", {}).update({str(k): str(v) for k, v in annotations.items()})
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    status.pop("nominatedNodeName", None)  # ClearingNominatedNodeNameAfterBinding (1.37: on)
    _set_pod_scheduled(status, now)
    if not dry_run:
        store.put(skey, obj, previous=current)
    return st.success(code=201)


def _set_pod_scheduled(status: dict[str, Any], now: str) -> None:
    """podutil.UpdatePodCondition(PodScheduled=True): replaced in place, reason and message dropped."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    new = {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
    for i, cond in enumerate(conditions):
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled":
            if cond.get("status") == "True" and cond.get("lastTransitionTime"):
                new["lastTransitionTime"] = cond["lastTransitionTime"]
            conditions[i] = new
            return
    conditions.append(new)
