"""Pod `spec.schedulingGroup` (Kubernetes 1.37, GenericWorkload): what kube-apiserver does with it on pod writes.

Contract (pure):
- `drop_disabled(spec, old_spec, gates)`: pkg/api/pod/util.go dropDisabledPodFields: without GenericWorkload the
  field is dropped, unless the stored pod (update) already has it.
- `validate(spec) -> problems`: PodSchedulingGroup is a union (`+k8s:unionMember` podGroupName, the only member
  today): an empty `schedulingGroup: {}` is `spec.schedulingGroup: Invalid value: "": must specify one of:
  `podGroupName``; podGroupName must be a DNS subdomain (format=k8s-long-name).
Immutability on update is ValidatePodUpdate's general rule (sim/pod_update.py): the field is not among the
mutable ones, so setting, changing or removing it after create is 422 "pod updates may not change fields other
than ...".
"""

from __future__ import annotations

from typing import Any

import gangsched.sim.scheduling.fields as f
from gangsched.sim.features import FeatureGates


def drop_disabled(spec: dict[str, Any], old_spec: dict[str, Any] | None, gates: FeatureGates) -> None:
    """See module docstring."""
    if gates.enabled("GenericWorkload") or (old_spec or {}).get("schedulingGroup") is not None:
        return
    spec.pop("schedulingGroup", None)


def validate(spec: dict[str, Any]) -> list[f.Problem]:
    """See module docstring."""
    group = spec.get("schedulingGroup")
    if group is None:
        return []
    problems = f.union("spec.schedulingGroup", group, ("podGroupName",))
    if isinstance(group, dict) and group.get("podGroupName") is not None:
        problems.extend(f.long_name("spec.schedulingGroup.podGroupName", group["podGroupName"]))
    return problems
