"""What a DELETE does to an object, as kube-apiserver v1.32 decides it, independent of storage (rest/delete.go,
generic/registry/store.go, pod/strategy.go CheckGracefulDelete).

Contract: `plan_delete(obj, options, *, graceful_kind, now) -> DeletePlan` never mutates `obj`; raises
status.ApiError(409) when `options.preconditions` do not match. The plan's `action`: "pending" (a graceful
deletion under way, not shortened: nothing written), "update" (deletion fields set, the object kept),
"update-then-remove" (graceful with grace 0 and no finalizers) or "remove".
Pods: grace from options, else spec.terminationGracePeriodSeconds, else 0; 0 when unbound or terminal; negative
counts as 1; a second DELETE may only shorten it. Objects with finalizers and no grace period get
deletionTimestamp now (or keep an earlier one) and deletionGracePeriodSeconds 0.
More: docs/modules.md#simdeletionpy.
"""

from __future__ import annotations

import copy
import datetime
from dataclasses import dataclass
from typing import Any

from gangsched.models.timestamps import format_time, parse_datetime
from gangsched.sim import status as st
from gangsched.sim.types import ResourceType


@dataclass(frozen=True)
class DeletePlan:
    action: str  # pending | update | update-then-remove | remove
    obj: dict[str, Any] | None = None  # the object to write, for update / update-then-remove


def _stamp(when: datetime.datetime) -> str:
    return format_time(when)


def _parse(text: Any) -> datetime.datetime | None:
    return parse_datetime(text)


def check_preconditions(rtype: ResourceType, obj: dict[str, Any], options: dict[str, Any]) -> None:
    """BeforeDelete's early precondition check (the conflict names the Kind, as it does upstream)."""
    pre = options.get("preconditions") or {}
    if not isinstance(pre, dict):
        return
    meta = obj["metadata"]
    what = rtype.kind if not rtype.group else f"{rtype.kind}.{rtype.group}"
    name = meta["name"]
    uid = pre.get("uid")
    if uid is not None and uid != meta.get("uid"):
        raise st.ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {what} "{name}": the UID in the precondition ({uid}) does not match the '
            f"UID in record ({meta.get('uid')}). The object might have been deleted and then recreated",
            name=name,
            rtype=rtype,
        )
    rv = pre.get("resourceVersion")
    if rv is not None and str(rv) != meta.get("resourceVersion"):
        raise st.ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {what} "{name}": the ResourceVersion in the precondition ({rv}) '
            f"does not match the ResourceVersion in record ({meta.get('resourceVersion')}). The object might have "
            "been modified",
            name=name,
            rtype=rtype,
        )


def pod_grace_period(pod: dict[str, Any], requested: int | None) -> int:
    """pkg/registry/core/pod/strategy.go CheckGracefulDelete."""
    spec = pod.get("spec") or {}
    if requested is not None:
        period = requested
    else:
        default = spec.get("terminationGracePeriodSeconds")
        period = int(default) if isinstance(default, int) and not isinstance(default, bool) else 0
    if not spec.get("nodeName"):
        period = 0
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        period = 0
    if period < 0:
        period = 1
    return period


def _requested_grace(options: dict[str, Any]) -> int | None:
    grace = options.get("gracePeriodSeconds")
    if grace is None or isinstance(grace, bool):
        return None
    try:
        value = int(grace)
    except (TypeError, ValueError):
        raise st.bad_request(f"invalid gracePeriodSeconds {grace!r}: must be an integer") from None
    return 1 if value < 0 else value


def plan_delete(
    rtype: ResourceType, obj: dict[str, Any], options: dict[str, Any], *, graceful_kind: bool, now: datetime.datetime
) -> DeletePlan:
    check_preconditions(rtype, obj, options)
    requested = _requested_grace(options)
    meta = obj["metadata"]
    finalizers = bool(meta.get("finalizers"))
    new = copy.deepcopy(obj)
    new_meta = new["metadata"]
    graceful = False
    period = 0
    if graceful_kind:
        existing = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp"):
            if existing is None or existing == 0:
                graceful = False  # an earlier deletion's removal did not happen: remove now
            elif requested is None or requested >= existing:
                return DeletePlan("pending")
            else:
                stamp = _parse(meta["deletionTimestamp"]) or now
                moved = stamp - datetime.timedelta(seconds=int(existing)) + datetime.timedelta(seconds=requested)
                new_meta["deletionTimestamp"] = _stamp(moved)
                new_meta["deletionGracePeriodSeconds"] = requested
                graceful, period = True, requested
        else:
            period = pod_grace_period(obj, requested)
            new_meta["deletionTimestamp"] = _stamp(now + datetime.timedelta(seconds=period))
            new_meta["deletionGracePeriodSeconds"] = period
            if int(new_meta.get("generation") or 0) > 0:
                new_meta["generation"] = int(new_meta["generation"]) + 1
            graceful = True
    if not graceful:
        if not finalizers:
            return DeletePlan("remove")
        # markAsDeleting
        marked = _parse(meta.get("deletionTimestamp"))
        if marked is None and int(new_meta.get("generation") or 0) > 0:
            new_meta["generation"] = int(new_meta["generation"]) + 1
        if marked is None or marked > now:
            new_meta["deletionTimestamp"] = _stamp(now)
        new_meta["deletionGracePeriodSeconds"] = 0
        return DeletePlan("update", new)
    if finalizers or period > 0:
        return DeletePlan("update", new)
    return DeletePlan("update-then-remove", new)
