"""The kubelet's DRA check before it starts a pod, as pkg/kubelet/cm/dra/manager.go PrepareResources makes it.

Contract (pure):
- `claim_names(pod) -> list[str | None]`: the ResourceClaim each `spec.resourceClaims` entry resolves to (None: not
  generated yet).
- `unprepared(pod, claims) -> str | None`: why the claims cannot be prepared yet, in the kubelet's words (None: each
  exists, is allocated and reserved for the pod or its PodGroup); `claims` maps (namespace, name) to objects.
- `waiting_status(pod, now)`: the status the kubelet reports meanwhile (Pending, ContainerCreating); the event
  reason is FAILED_PREPARE ("FailedPrepareDynamicResources"). More: docs/modules.md#simdranodepy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FAILED_PREPARE = "FailedPrepareDynamicResources"
Obj = dict[str, Any]


def claim_names(pod: Obj) -> list[str | None]:
    """See module docstring."""
    statuses = {
        s.get("name"): s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out: list[str | None] = []
    for claim in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = claim.get("resourceClaimName") or statuses.get(claim.get("name"))
        out.append(str(name) if name else None)
    return out


def _reserved(pod: Obj, claim: Obj) -> bool:
    meta = pod.get("metadata") or {}
    group = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    for ref in (claim.get("status") or {}).get("reservedFor") or ():
        if ref.get("uid") == meta.get("uid") and ref.get("resource") == "pods":
            return True
        if group and ref.get("resource") == "podgroups" and ref.get("name") == group:
            return True
    return False


def unprepared(pod: Obj, claims: Mapping[tuple[str, str], Obj]) -> str | None:
    """See module docstring."""
    meta = pod.get("metadata") or {}
    ns, pod_name = str(meta.get("namespace") or ""), str(meta.get("name"))
    for pod_claim, name in zip((pod.get("spec") or {}).get("resourceClaims") or (), claim_names(pod), strict=True):
        if name is None:
            return f"waiting for the ResourceClaim of pod claim {pod_claim.get('name')} to be created"
        claim = claims.get((ns, name))
        if claim is None:
            return (
                f"failed to fetch ResourceClaim {name} referenced by pod {pod_name}: "
                f'resourceclaims.resource.k8s.io "{name}" not found'
            )
        if not (claim.get("status") or {}).get("allocation") or not _reserved(pod, claim):
            uid = (claim.get("metadata") or {}).get("uid")
            return f"pod {pod_name}({meta.get('uid')}) is not allowed to use ResourceClaim {name}({uid})"
    return None


def waiting_status(pod: Obj, now: str) -> Obj:
    """See module docstring."""
    containers = (pod.get("spec") or {}).get("containers") or []
    return {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
            {"type": "PodReadyToStartContainers", "status": "False", "lastProbeTime": None, "lastTransitionTime": now},
        ],
        "containerStatuses": [
            {
                "name": c.get("name", f"c{i}"),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
            }
            for i, c in enumerate(containers)
        ],
    }
