"""The policy interface of the what-if engine: what a scheduler under test is asked and what it reports.

Contract:
- A policy is one scheduler under test. The engine (whatif/engine.py) hands it job incarnations (`submit`), asks it
  to schedule at a virtual time (`cycle`: run the scheduler until it has nothing left to decide at `now`), and tells
  it when an incarnation completed (`finish`: its pods succeed and are removed) and when a node goes down or comes
  back (`node_down`: the incarnations with a pod there end; `node_up`). A policy reports what happened to
  pods as `PodMove`s (state NONE -> HELD -> RUNNING, or back to NONE) and incarnations it ended (`Ended`: evicted by
  preemption, or timed out and to be recreated), with the next time it wants to be woken and the wall time each
  decision took (the only wall-clock figure of a replay).
- A pod HELD keeps its resources without running (a reservation, a Permit wait); RUNNING is bound and started.
The policies by name and their variants: whatif/lineup.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Literal, Protocol

from gangsched.whatif.model import JobSpec


class PodPhase(IntEnum):
    NONE = 0  # holds nothing (pending, or gone)
    HELD = 1  # holds its resources without running (reservation, Permit wait)
    RUNNING = 2  # bound and running


@dataclass(frozen=True, slots=True)
class PodMove:
    job: str  # the incarnation key (engine-assigned)
    gpus: int
    cpu_milli: int
    old: PodPhase
    new: PodPhase
    node: str = ""  # where the pod goes (to HELD or RUNNING: required, the engine's placement-aware speed reads it);
    # to NONE: where it was (the engine's per-node accounting; empty: it takes the GPUs from a node of the incarnation)


EndReason = Literal["evicted", "timeout", "failure"]  # failure: a node it had a pod on went down


@dataclass(frozen=True, slots=True)
class Ended:
    """An incarnation ended before completing: every pod of it is gone (moves to NONE are reported too)."""

    job: str
    reason: EndReason


@dataclass(frozen=True, slots=True)
class ResolvedDeadlock:
    """A deadlock the scheduler found and resolved itself (core/gang/deadlock.py, `Plan.deadlocks`)."""

    formed: float  # when it existed since, at the latest (the last gang of the cycle started holding)
    gangs: int  # gangs in the wait-for cycle
    held_gpus: int  # GPUs the gangs of the cycle held in reservations when it was found
    released_gpus: int  # GPUs of the victim's reservations, released to resolve it


@dataclass(slots=True)
class CycleOutcome:
    moves: list[PodMove] = field(default_factory=list)
    ended: list[Ended] = field(default_factory=list)
    next_wakeup: float | None = None
    decision_seconds: list[float] = field(default_factory=list)  # wall time of each scheduler call
    tiers: dict[str, int | None] = field(default_factory=dict)  # incarnation -> topology tier it started within
    timeouts: int = 0  # gangs whose reservations a baseline released at its timeout (no new incarnation)
    resolved: list[ResolvedDeadlock] = field(default_factory=list)  # by the scheduler itself (gangsched only)
    # free GPUs the scheduler keeps out of other jobs' reach for a starving gang after this call (gangsched's
    # capacity holds, core/gang/starvation.py); None: the policy holds no free capacity (the engine keeps the last)
    held_gpus: int | None = None


class Policy(Protocol):
    name: str

    def submit(self, job: JobSpec, key: str, now: float) -> None:
        """A new incarnation `key` of `job` arrives (its pods are created, pending)."""

    def cycle(self, now: float) -> CycleOutcome:
        """Schedule at `now` until nothing is left to decide; report the moves and ended incarnations."""

    def finish(self, key: str, now: float) -> list[PodMove]:
        """The incarnation completed: its pods succeed and are removed; returns their moves to NONE."""

    def node_down(self, name: str, now: float) -> CycleOutcome:
        """The node went down: every incarnation with a pod on it ends (`Ended("failure")`: all its pods are removed,
        moves to NONE reported) and the node takes no pod until `node_up`."""

    def node_up(self, name: str, now: float) -> None:
        """The node is back, empty."""
