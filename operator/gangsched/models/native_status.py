"""A native PodGroup's status as kube-scheduler 1.37 writes it: the `PodGroupInitiallyScheduled` condition.

Contract (pure, no I/O, no clock: the time is passed in):
- `wanted_condition(*, bound, min_count, decided_reason, decided_message, invalid)`: True/Scheduled once `min_count`
  members are bound (never when merely decided); False/SchedulerError for an invalid declaration; False/Unschedulable
  when the last decision left it unplaced (not while waiting for its pods); None: nothing to say yet.
- `set_condition(conditions, wanted, *, generation, now_iso, type_=...) -> list | None`: SetStatusCondition on a
  copy, terminal once True; lastTransitionTime moves only with the status; None when nothing changes (no write).
- `wanted_composite(...)`: a CompositePodGroup's condition (True once `minimum` children are scheduled).
- `disruption_condition(conditions, *, message, generation, now_iso) -> list | None`: DisruptionTarget
  True/PreemptionByScheduler for a PodGroup whose members the scheduler preempts; None when set already.
More: docs/modules.md#modelsnative_statuspy.
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
