"""Nodes read from the API into the core's `NodeRecord` (core/records/records.py).

Contract: `node_from_api(obj) -> NodeRecord`: metadata.name, allocatable (status.allocatable, else
status.capacity; canonical units, see core/values/resources.py), labels, spec.taints (effect NoSchedule,
PreferNoSchedule or NoExecute) and spec.unschedulable. Identical allocatable maps are shared between records.
Bad input raises InvalidField naming the field path (e.g. `spec.taints[0].effect`).
`unsupported_node_fields(obj) -> str | None`: a message naming the node's Kubernetes 1.37 fields that bear on
scheduling and that gangsched does not evaluate (status.declaredFeatures: kube-scheduler's NodeDeclaredFeatures
filter matches them against the features a pod needs, KEP-5328), None when there are none. spec.podPreemptionPolicy
(`disableResizePreemption`) needs nothing: gangsched never preempts for an in-place resize.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Final

from gangsched.core import InvalidField, NodeRecord, Taint, resource_list
from gangsched.models.fields import as_list, as_object, shared_map, str_map

TAINT_EFFECTS: Final = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


def _taints(spec: Mapping[str, Any]) -> tuple[Taint, ...]:
    taints = []
    for i, raw in enumerate(as_list(spec.get("taints"), field="spec.taints")):
        taint = as_object(raw, field=f"spec.taints[{i}]")
        effect = taint.get("effect", "")
        if effect not in TAINT_EFFECTS:
            raise InvalidField(f"spec.taints[{i}].effect", effect, f"must be one of {sorted(TAINT_EFFECTS)}")
        taints.append(Taint(sys.intern(str(taint.get("key", ""))), sys.intern(str(taint.get("value", ""))), effect))
    return tuple(taints)


def node_from_api(obj: Mapping[str, Any]) -> NodeRecord:
    meta = as_object(obj.get("metadata"), field="metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidField("metadata.name", name, "must be a non-empty string")
    spec = as_object(obj.get("spec"), field="spec")
    status = as_object(obj.get("status"), field="status")
    allocatable = status.get("allocatable")
    if allocatable is None:
        allocatable = status.get("capacity")
    return NodeRecord(
        name=sys.intern(name),
        allocatable=shared_map(resource_list(allocatable, field="status.allocatable")),
        labels=str_map(meta.get("labels"), field="metadata.labels"),
        taints=_taints(spec),
        unschedulable=bool(spec.get("unschedulable", False)),
    )


def unsupported_node_fields(obj: Mapping[str, Any]) -> str | None:
    """See the module docstring."""
    status = obj.get("status")
    declared = status.get("declaredFeatures") if isinstance(status, Mapping) else None
    if not declared:
        return None
    return (
        f"status.declaredFeatures: {declared!r} is not evaluated by gangsched (kube-scheduler's NodeDeclaredFeatures"
        " filter keeps a pod off a node that does not declare a feature the pod needs): pods are placed here"
        " without that check"
    )
