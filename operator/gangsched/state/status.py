"""PodGroup status as `kubectl get podgroups` should show it, computed from the cache.

Contract: `GangStatusBook.status_of(gang, *, members, podgroup, decided, timed_out, now_iso)` returns the
`status` body to merge-patch onto the PodGroup (camelCase, the CRD's fields), or None when nothing would change
since the last time it returned a body for that gang. `seed_start(gang, iso)` adopts the scheduleStartTime a
PodGroup already shows (written before a restart), so a new leader does not move it. It is pure apart from remembering, per gang, the last body
and when each condition last changed (so `lastTransitionTime` only moves on a real transition).

Phases, first match wins (counts are over the gang's current members):
- Succeeded: succeeded >= minMember;
- Failed: the gang was satisfied, some member failed and running + succeeded < minMember;
- Running: running + succeeded >= minMember;
- Scheduled: the gang reached its quorum (once-satisfied) or scheduled >= minMember;
- Timeout: its waiting time ended before the quorum;
- Scheduling: some members hold reservations (`held`, the reservations the gang holds now, when given: the
  core's last decision may be stale after members were deleted; without reservations left it is not reported);
- Pending: otherwise.
`scheduled` counts members bound to a node (or being bound); `running`, `succeeded`, `failed` count phases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gangsched.core.plan import GangStatus
from gangsched.core.records import PodRecord


@dataclass(slots=True)
class _Memory:
    body: dict[str, Any] | None = None
    start: str | None = None  # scheduleStartTime
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # condition type -> (status, time)


class GangStatusBook:
    def __init__(self) -> None:
        self._memory: dict[str, _Memory] = {}

    def forget(self, gang: str) -> None:
        self._memory.pop(gang, None)

    def seed_start(self, gang: str, start_iso: str) -> None:
        """scheduleStartTime as the PodGroup already shows it (written before a restart): kept, not rewritten."""
        mem = self._memory.setdefault(gang, _Memory())
        if mem.start is None:
            mem.start = start_iso

    def status_of(
        self,
        gang: str,
        *,
        min_member: int,
        members: Sequence[PodRecord],
        generation: int,
        decided: GangStatus | None,
        satisfied: bool,
        timed_out: bool,
        invalid: str | None,
        in_flight: int,
        now_iso: str,
        held: int | None = None,
    ) -> dict[str, Any] | None:
        mem = self._memory.setdefault(gang, _Memory())
        scheduled = running = succeeded = failed = 0
        for pod in members:
            if pod.node_name:
                scheduled += 1
            if pod.phase == "Running":
                running += 1
            elif pod.phase == "Succeeded":
                succeeded += 1
            elif pod.phase == "Failed":
                failed += 1
        scheduled = max(scheduled, in_flight)
        reserved = decided.reserved if decided is not None else 0
        if held is not None and held < reserved:
            # the core's last decision held more than the gang holds now (members deleted, a node gone): stale
            reserved = held
            if held == 0:
                decided = None

        if succeeded >= min_member:
            phase = "Succeeded"
        elif satisfied and failed and running + succeeded < min_member:
            phase = "Failed"
        elif running + succeeded >= min_member:
            phase = "Running"
        elif satisfied or scheduled >= min_member:
            phase = "Scheduled"
        elif timed_out:
            phase = "Timeout"
        elif reserved:
            phase = "Scheduling"
        else:
            phase = "Pending"
        if phase != "Pending" and mem.start is None:
            mem.start = now_iso

        conditions = []
        sched_ok = phase in ("Scheduled", "Running", "Succeeded", "Failed")
        if sched_ok:
            conditions.append(
                self._condition(
                    mem,
                    "Scheduled",
                    "True",
                    "Scheduled",
                    f"{scheduled} of {len(members)} members bound (minMember {min_member})",
                    generation,
                    now_iso,
                )
            )
        else:
            reason = decided.reason if decided is not None else "WaitingForPods"
            message = decided.message if decided is not None else f"{len(members)} of {min_member} members present"
            conditions.append(self._condition(mem, "Scheduled", "False", reason, message, generation, now_iso))
        if timed_out and not sched_ok:
            conditions.append(
                self._condition(
                    mem,
                    "Timeout",
                    "True",
                    "GangTimeout",
                    "the waiting time ended before the quorum was placed",
                    generation,
                    now_iso,
                )
            )
        if invalid:
            conditions.append(self._condition(mem, "Invalid", "True", "InvalidSpec", invalid, generation, now_iso))

        body: dict[str, Any] = {
            "phase": phase,
            "scheduled": scheduled,
            "running": running,
            "succeeded": succeeded,
            "failed": failed,
            "observedGeneration": generation,
            "conditions": conditions,
        }
        if mem.start is not None:
            body["scheduleStartTime"] = mem.start
        if decided is not None and decided.tier is not None:
            body["placedTier"] = decided.tier
        # always present: null removes (merge patch) a message that no longer applies
        body["message"] = decided.message if decided is not None and decided.message else None
        if body == mem.body:
            return None
        mem.body = body
        return body

    @staticmethod
    def _condition(
        mem: _Memory, type_: str, status: str, reason: str, message: str, generation: int, now_iso: str
    ) -> dict[str, Any]:
        previous = mem.transitions.get(type_)
        if previous is None or previous[0] != status:
            mem.transitions[type_] = (status, now_iso)
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": mem.transitions[type_][1],
            "observedGeneration": generation,
        }
