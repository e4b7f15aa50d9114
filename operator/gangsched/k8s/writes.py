"""Typed, coalesced writes: pod annotations, pod conditions, nominations, and PodGroup owners and status, carried by
the PatchWriter (k8s/coalescing.py), which merges what is asked for one object until it is sent and retries it.

Contract (every call never blocks and never raises):
- `annotate_pod(namespace, name, annotations)`: a merge patch of annotations, sent to pods/status.
- `set_pod_condition(namespace, name, type_=, status=, reason=, message=)`: one condition (by type), now.
- `discard_pod_conditions(namespace, name)`: condition patches not sent yet are dropped (a pod being bound).
- `nominate(namespace, name, node)`: status.nominatedNodeName (`node=None` clears it).
- `set_podgroup_owners(namespace, name, owners)`, `set_podgroup_status(namespace, name, status, api_version=...)`.
- `set_composite_status(namespace, name, status)`: a CompositePodGroup's status (scheduling.k8s.io/v1alpha3).
- `forget_podgroup(namespace, name)`: the PodGroup was created again; the writer's memory of the old one goes.
More: docs/modules.md#k8swritespy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.k8s.api import PodOwner, owner_references, pod_path, podgroup_path
from gangsched.k8s.client import MERGE_PATCH, STRATEGIC_MERGE_PATCH, resource_path
from gangsched.k8s.coalescing import PatchWriter, now_rfc3339
from gangsched.models.composite import API_VERSION as COMPOSITE_API_VERSION
from gangsched.models.composite import PLURAL as COMPOSITE_PLURAL
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

    def set_composite_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        group, _, version = COMPOSITE_API_VERSION.partition("/")
        path = resource_path(
            group=group, version=version, plural=COMPOSITE_PLURAL, namespace=namespace, name=name, subresource="status"
        )
        self.writer.patch(path, {"status": status})

    def forget_podgroup(self, namespace: str, name: str, *, api_version: str = API_VERSION) -> None:
        """The PodGroup under this name is a new object: what was written to the old one no longer counts."""
        self.writer.forget_written(podgroup_path(namespace, name, "status", api_version=api_version))
        self.writer.forget_written(podgroup_path(namespace, name, api_version=api_version))
