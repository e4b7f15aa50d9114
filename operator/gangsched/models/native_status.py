"""A native PodGroup's status as kube-scheduler 1.37 writes it: the `PodGroupInitiallyScheduled` condition.

Contract (pure, no I/O, no clock: the time is passed in):
- `INITIALLY_SCHEDULED` ("PodGroupInitiallyScheduled"), reasons `SCHEDULED` ("Scheduled", status True), `UNSCHEDULABLE`
  ("Unschedulable") and `SCHEDULER_ERROR` ("SchedulerError") (status False).
- `wanted_condition(*, bound, min_count, decided_reason, decided_message, invalid) -> (status, reason, message) | None`:
  the condition gangsched's view of the gang calls for: True/Scheduled once `min_count` members are bound (gangsched
  says a gang is scheduled only after the quorum's bindings succeeded, never when they are merely decided);
  False/SchedulerError when the gang cannot be scheduled as declared (`invalid`: a gangsched PodGroup of that name with
  an invalid spec, an invalid gang group; the message names the field); False/Unschedulable when the last decision left
  the gang unplaced for any reason but waiting for its pods (kube-scheduler's PreEnqueue holds a group short of minCount
  pods before any cycle, so it writes nothing then); None when there is nothing to say yet.
- `set_condition(conditions, wanted, *, generation, now_iso, type_=INITIALLY_SCHEDULED) -> list | None`:
  apimachinery's SetStatusCondition on a copy of the PodGroup's (or CompositePodGroup's) `status.conditions`,
  guarded as kube-scheduler's updatePodGroupCondition guards it: the condition is terminal once True (a True one is
  never moved back to False, nor rewritten); lastTransitionTime moves only when the status does;
  `observedGeneration` is the object's generation. None when nothing would change (no write).
- `COMPOSITE_INITIALLY_SCHEDULED` ("CompositePodGroupInitiallyScheduled"), same reasons:
  `wanted_composite(*, admitted, minimum, decided_reason, decided_message, invalid)`: a CompositePodGroup's condition
  (submitCompositePodGroupResult, updateCompositePodGroupCondition: the same guard): True/Scheduled once `minimum`
  (minGroupCount) of its children are scheduled (`admitted`), the rest as `wanted_condition`.
- `DISRUPTION_TARGET` ("DisruptionTarget"), reason `PREEMPTION_BY_SCHEDULER` ("PreemptionByScheduler"):
  `disruption_condition(conditions, *, message, generation, now_iso) -> list | None`: the conditions with
  DisruptionTarget True/PreemptionByScheduler set (SetStatusCondition: lastTransitionTime kept when it was True
  already), for a PodGroup whose members the scheduler preempts; None when it says so already (no write).
  k8s.io/api scheduling/v1beta1 types.go: "PreemptionByScheduler reason in the DisruptionTarget condition indicates
  the PodGroup was preempted to make room for higher-priority PodGroups or Pods"; the message as kube-scheduler
  writes its victims' pod condition (pkg/scheduler/framework/preemption/executor.go PreemptPod: "<scheduler>:
  preempting to accommodate a higher priority pod" or "... pod group").
Sources: kubernetes/kubernetes pkg/scheduler/schedule_one_podgroup.go (submitPodGroupAlgorithmResult: Success -> True
"Scheduled", Unschedulable -> False PodGroupReasonUnschedulable, Error -> False PodGroupReasonSchedulerError;
updatePodGroupCondition: "If the PodGroup was already successfully scheduled, don't regress the condition back to
False"), renamed from PodGroupScheduled to PodGroupInitiallyScheduled by kubernetes#139743 (1.37);
staging/src/k8s.io/apimachinery/pkg/api/meta/conditions.go (SetStatusCondition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
COMPOSITE_INITIALLY_SCHEDULED = "CompositePodGroupInitiallyScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
_WAITING = frozenset({"WaitingForPods", SCHEDULED})

Wanted = tuple[str, str, str]  # (status, reason, message)


def wanted_condition(
    *, bound: int, min_count: int, decided_reason: str | None, decided_message: str, invalid: str | None
) -> Wanted | None:
    """See module docstring."""
    if bound >= min_count:
        return "True", SCHEDULED, f"{bound} pods bound (minCount {min_count})"
    if invalid is not None:
        return "False", SCHEDULER_ERROR, invalid
    if decided_reason is None or decided_reason in _WAITING:
        return None
    return "False", UNSCHEDULABLE, decided_message or decided_reason


def wanted_composite(
    *, admitted: int, minimum: int, decided_reason: str | None, decided_message: str, invalid: str | None
) -> Wanted | None:
    """See module docstring."""
    if admitted >= minimum:
        return "True", SCHEDULED, f"{admitted} child groups scheduled (minGroupCount {minimum})"
    return wanted_condition(
        bound=0, min_count=1, decided_reason=decided_reason, decided_message=decided_message, invalid=invalid
    )


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    wanted: Wanted,
    *,
    generation: int,
    now_iso: str,
    type_: str = INITIALLY_SCHEDULED,
) -> list[dict[str, Any]] | None:
    """See module docstring."""
    status, reason, message = wanted
    out = [dict(c) for c in conditions if isinstance(c, Mapping)]
    existing = next((c for c in out if c.get("type") == type_), None)
    if existing is not None and existing.get("status") == "True":
        return None  # terminal once True (its message is not refreshed either: no write per later bind)
    new = {
        "type": type_,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": now_iso,
        "reason": reason,
        "message": message,
    }
    if existing is None:
        return [*out, new]
    if existing.get("status") == status:
        new["lastTransitionTime"] = existing.get("lastTransitionTime") or now_iso
    if all(existing.get(k) == v for k, v in new.items()):
        return None
    existing.clear()
    existing.update(new)
    return out


def disruption_condition(
    conditions: Sequence[Mapping[str, Any]], *, message: str, generation: int, now_iso: str
) -> list[dict[str, Any]] | None:
    """See module docstring."""
    out = [dict(c) for c in conditions if isinstance(c, Mapping)]
    existing = next((c for c in out if c.get("type") == DISRUPTION_TARGET), None)
    new = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "observedGeneration": generation,
        "lastTransitionTime": now_iso,
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": message,
    }
    if existing is None:
        return [*out, new]
    if existing.get("status") == "True":
        new["lastTransitionTime"] = existing.get("lastTransitionTime") or now_iso
    if all(existing.get(k) == v for k, v in new.items()):
        return None
    existing.clear()
    existing.update(new)
    return out
