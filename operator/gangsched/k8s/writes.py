"""Typed, coalesced writes: pod annotations, pod conditions, nominations, and PodGroup owners and status, carried by
the PatchWriter (k8s/writer.py), which merges what is asked for one object until it is sent and retries it until it
is written or the object is gone. The paths and bodies are built here; the runtime names objects and values.

Contract (every call never blocks and never raises):
- `annotate_pod(namespace, name, annotations)`: a merge patch of the pod's metadata.annotations, sent to pods/status
  (kube-apiserver's pod status strategy lets metadata change there, never the spec: the ClusterRole needs no patch
  on pods, which would let its token change any pod's image; kube-scheduler's role is shaped the same way).
- `set_pod_condition(namespace, name, type_=, status=, reason=, message=)`: a strategic merge patch of pods/status
  with that one condition (merged by type) and lastTransitionTime now.
- `discard_pod_conditions(namespace, name)`: condition patches of the pod not sent yet are dropped (a pod being
  bound: a PodScheduled=False sent later would overwrite the binding's PodScheduled=True).
- `nominate(namespace, name, node)`: a merge patch of pods/status setting status.nominatedNodeName; `node=None`
  clears it. Separate from condition patches (another patch type, so another request).
- `set_podgroup_owners(namespace, name, owners)`: a merge patch of the PodGroup's metadata.ownerReferences (pods).
- `set_podgroup_status(namespace, name, status, api_version=...)`: a merge patch of podgroups/status, of the PodGroup in
  that API group (scheduling.x-k8s.io by default; scheduling.sigs.k8s.io for Koordinator's PodGroups).
- `forget_podgroup(namespace, name)`: the PodGroup was created again under that name; the writer's memory of what it
  wrote to the old object (its skip of unchanged patches) is dropped, so the new object gets its writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.k8s.api import PodOwner, owner_references, pod_path, podgroup_path
from gangsched.k8s.client import MERGE_PATCH, STRATEGIC_MERGE_PATCH
from gangsched.k8s.writer import PatchWriter, now_rfc3339
from gangsched.models.podgroup import API_VERSION


class Writes:
    def __init__(self, writer: PatchWriter) -> None:
        self.writer = writer

    # ------------------------------------------------------------------ pods
    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str]) -> None:
        self.writer.patch(pod_path(namespace, name, "status"), {"metadata": {"annotations": dict(annotations)}})

    def set_pod_condition(
        self, namespace: str, name: str, *, type_: str, status: str, reason: str, message: str
    ) -> None:
        condition = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now_rfc3339(),
        }
        self.writer.patch(
            pod_path(namespace, name, "status"),
            {"status": {"conditions": [condition]}},
            content_type=STRATEGIC_MERGE_PATCH,
        )

    def discard_pod_conditions(self, namespace: str, name: str) -> None:
        self.writer.discard(pod_path(namespace, name, "status"), content_type=STRATEGIC_MERGE_PATCH)

    def nominate(self, namespace: str, name: str, node: str | None) -> None:
        self.writer.patch(
            pod_path(namespace, name, "status"), {"status": {"nominatedNodeName": node}}, content_type=MERGE_PATCH
        )

    # ------------------------------------------------------------- PodGroups
    def set_podgroup_owners(self, namespace: str, name: str, owners: Sequence[PodOwner]) -> None:
        self.writer.patch(podgroup_path(namespace, name), {"metadata": {"ownerReferences": owner_references(owners)}})

    def set_podgroup_status(
        self, namespace: str, name: str, status: dict[str, Any], *, api_version: str = API_VERSION
    ) -> None:
        self.writer.patch(podgroup_path(namespace, name, "status", api_version=api_version), {"status": status})

    def forget_podgroup(self, namespace: str, name: str, *, api_version: str = API_VERSION) -> None:
        """The PodGroup under this name is a new object: what was written to the old one no longer counts."""
        self.writer.forget_written(podgroup_path(namespace, name, "status", api_version=api_version))
        self.writer.forget_written(podgroup_path(namespace, name, api_version=api_version))
