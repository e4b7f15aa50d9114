"""Namespace lifecycle rules of kube-apiserver v1.32, independent of storage and HTTP (the NamespaceLifecycle
admission plugin and the namespace REST.Delete).

Contract:
- `refuse_create(store, namespace, rtype, name)`: 404 when the namespace does not exist, 403 (cause
  `NamespaceTerminating`) when it is Terminating; every create, subresource creates included, goes through it.
- `refuse_delete(name)`: 403 for the immortal namespaces default, kube-system and kube-public.
- `terminating(obj) -> dict`: the namespace as the first DELETE leaves it (deletionTimestamp, phase Terminating,
  spec.finalizers untouched); namespace_controller.py empties and removes it.
More: docs/modules.md#simnamespace_lifecyclepy.
"""

from __future__ import annotations

import copy
from typing import Any

from gangsched.sim import status as st
from gangsched.sim.builtin import BUILTIN_TYPES
from gangsched.sim.store import Store
from gangsched.sim.types import ResourceType

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_NAMESPACE_TYPE = next(t for t in BUILTIN_TYPES if (t.group, t.plural) == ("", "namespaces"))
NAMESPACES_KEY = ("", "namespaces")
TERMINATING = "Terminating"


def is_terminating(obj: dict[str, Any] | None) -> bool:
    return obj is not None and (obj.get("status") or {}).get("phase") == TERMINATING


def refuse_create(store: Store, namespace: str, rtype: ResourceType, name: str) -> None:
    entry = store.get(NAMESPACES_KEY, "", namespace)
    if entry is None:
        raise st.not_found(_NAMESPACE_TYPE, namespace)
    if not is_terminating(entry.obj):
        return
    why = f"unable to create new content in namespace {namespace} because it is being terminated"
    resource = rtype.plural if not rtype.group else f"{rtype.plural}.{rtype.group}"
    message = f'{resource} "{name}" is forbidden: {why}' if name else f"{resource} is forbidden: {why}"
    raise st.ApiError(
        403,
        "Forbidden",
        message,
        name=name or None,
        rtype=rtype,
        causes=[
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ],
    )


def refuse_delete(name: str) -> None:
    if name in IMMORTAL_NAMESPACES:
        raise st.forbidden(_NAMESPACE_TYPE, name, "this namespace may not be deleted")


def terminating(obj: dict[str, Any], now: str) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    meta = new["metadata"]
    if not meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = now
    status = new.get("status")
    if not isinstance(status, dict):
        status = new["status"] = {}
    status["phase"] = TERMINATING
    return new
