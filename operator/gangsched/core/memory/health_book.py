"""The runtime gang-health records (core/gang/health.py decides them; SchedulerState keeps them in a `HealthBook`).

Contract: `HealthBook.watch(spec)` watches a gang whose spec sets a grace period (stale_grace_seconds) and forgets
it otherwise; `forget(key)` (its PodGroup went); `watched()` the watched specs; `record(key)` its GangHealth (a
default one when none); `condition(key)` the Degraded condition its PodGroup shows (None: never degraded);
`apply(changes)` records a Plan's `health` (key -> GangHealth, or None: dropped); records of gangs no longer
watched are ignored. Values are immutable.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gangsched.core.values.gangspec import GangSpec


@dataclass(frozen=True, slots=True)
class DegradedCondition:
    status: bool  # True: degraded now; False: recovered
    reason: str  # BelowMinMember | StaleGangEvicted | Recovered
    message: str


@dataclass(frozen=True, slots=True)
class GangHealth:
    ran: bool = False  # at least minMember members were up while watched
    since: float | None = None  # degraded since (None: healthy)
    reported: bool = False  # this degradation was reported (event, condition)
    condition: DegradedCondition | None = None  # what the PodGroup shows (None: never degraded)


class HealthBook:
    def __init__(self) -> None:
        self._watched: dict[str, GangSpec] = {}
        self._records: dict[str, GangHealth] = {}

    def watch(self, spec: GangSpec) -> None:
        if spec.stale_grace_seconds is None:
            self.forget(spec.key)
        else:
            self._watched[spec.key] = spec

    def forget(self, key: str) -> None:
        self._watched.pop(key, None)
        self._records.pop(key, None)

    def watched(self) -> Iterator[GangSpec]:
        return iter(self._watched.values())

    def record(self, key: str) -> GangHealth:
        return self._records.get(key) or GangHealth()

    def condition(self, key: str) -> DegradedCondition | None:
        record = self._records.get(key)
        return record.condition if record is not None else None

    def apply(self, changes: Mapping[str, GangHealth | None]) -> None:
        for key, record in changes.items():
            if record is None:
                self._records.pop(key, None)
            elif key in self._watched:
                self._records[key] = record

    def __len__(self) -> int:
        return len(self._watched)
