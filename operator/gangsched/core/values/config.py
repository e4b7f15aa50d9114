"""The scheduler's tunables, as one immutable value passed into every cycle.

Contract: `SchedulerConfig` is a frozen dataclass; construct it with keywords. `validate()` raises
InvalidField naming the field, the value and what is allowed; `__post_init__` calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import DEFAULT_WAIT_SECONDS

SCORE_STRATEGIES = ("binpack", "spread")
PDB_POLICIES = ("respect", "prefer")


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    scheduler_name: str = "gangsched"
    default_wait_seconds: float = DEFAULT_WAIT_SECONDS  # gang waiting time when the spec has none
    backoff_initial_seconds: float = 1.0  # first backoff after a failed attempt; doubles per failure
    backoff_max_seconds: float = 60.0
    score_strategy: str = "binpack"  # binpack: fill the fullest fitting nodes; spread: the emptiest
    # how many queue units (gangs or lone pods) one schedule() call may try; each is its own transaction
    max_units_per_cycle: int = 1
    # starvation (core/gang/starvation.py): a gang unschedulable this long gets capacity held for it; 0 disables
    hold_after_seconds: float = 60.0
    max_held_gangs: int = 1  # gangs holding capacity at once (at most one per priority level)
    # preemption.pdb: "respect" never chooses a victim gang a PodDisruptionBudget would cut short (a protected
    # member); "prefer" takes protected victims as a last resort (the runtime deletes them)
    preemption_pdb: str = "respect"
    # a gang without a networkTopology is packed into the lowest topology domain that holds it
    # (core/placement/packing.py); off: placed by the score strategy alone
    pack_gangs: bool = True

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if not self.scheduler_name:
            raise InvalidField("schedulerName", self.scheduler_name, "must be a non-empty string")
        if self.score_strategy not in SCORE_STRATEGIES:
            raise InvalidField("scoreStrategy", self.score_strategy, f"must be one of {list(SCORE_STRATEGIES)}")
        if not self.default_wait_seconds > 0:
            raise InvalidField("defaultWaitSeconds", self.default_wait_seconds, "must be > 0")
        if not 0 < self.backoff_initial_seconds <= self.backoff_max_seconds:
            raise InvalidField(
                "backoffInitialSeconds",
                self.backoff_initial_seconds,
                f"must be > 0 and <= backoffMaxSeconds ({self.backoff_max_seconds})",
            )
        if self.preemption_pdb not in PDB_POLICIES:
            raise InvalidField("preemption.pdb", self.preemption_pdb, f"must be one of {list(PDB_POLICIES)}")
        if self.max_units_per_cycle < 1:
            raise InvalidField("maxUnitsPerCycle", self.max_units_per_cycle, "must be an integer >= 1")
        if not 0 <= self.hold_after_seconds < float("inf"):
            raise InvalidField("starvation.holdAfterSeconds", self.hold_after_seconds, "must be a number >= 0 (0: off)")
        if self.max_held_gangs < 1:
            raise InvalidField("starvation.maxHeldGangs", self.max_held_gangs, "must be an integer >= 1")

    def backoff_seconds(self, attempts: int) -> float:
        """Backoff after the `attempts`-th consecutive failure (1-based): initial * 2**(attempts-1), capped."""
        return min(self.backoff_max_seconds, self.backoff_initial_seconds * 2.0 ** min(max(attempts - 1, 0), 62))
