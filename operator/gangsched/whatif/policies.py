"""The policy interface of the what-if engine and the registry of policies replayed side by side.

Contract:
- A policy is one scheduler under test. The engine (whatif/engine.py) hands it job incarnations (`submit`), asks it
  to schedule at a virtual time (`cycle`: run the scheduler until it has nothing left to decide at `now`), and tells
  it when an incarnation completed (`finish`: its pods succeed and are removed) and when a node goes down or comes
  back (`node_down`: the incarnations with a pod there end; `node_up`). A policy reports what happened to
  pods as `PodMove`s (state NONE -> HELD -> RUNNING, or back to NONE) and incarnations it ended (`Ended`: evicted by
  preemption, or timed out and to be recreated), with the next time it wants to be woken and the wall time each
  decision took (the only wall-clock figure of a replay).
- A pod HELD keeps its resources without running (a reservation, a Permit wait); RUNNING is bound and started.
- `make_policy(name, workload, wait_seconds)` builds a policy by name: `gangsched` and its variants (the real core:
  whatif/core_policy.py); the faithful models of what users run instead (issue 24), each in its own module:
  `kube-scheduler` (whatif/kube_scheduler.py), `coscheduling` (scheduler-plugins' Coscheduling plugin:
  whatif/coscheduling.py), `kube-scheduler-gang` (Kubernetes 1.37's GangScheduling: whatif/kube_gang.py); and two
  simplified baselines named for what they are (whatif/baselines.py, not in the default set): `pod-by-pod-fifo`
  (arrival order, best fit, no preemption) and `permit-wait-600s` (coscheduling's Permit with a 600 s wait and no
  PostFilter rejection). `POLICY_NAMES` lists them; `DEFAULT_BASELINES` are the faithful ones.
Variants of gangsched (suffixes, combinable with "+"): `spread` (score strategy spread instead of binpack), `strict` /
`nonstrict` (override every job's gang mode), `notopo` (no topology tree, no network-topology constraint),
`nopreempt` (pods never preempt: preemptionPolicy Never), `nohold` (no capacity held for a starving gang:
core/gang/starvation.py off), `nopack` (gangs without a network topology are not packed into one domain:
core/placement/packing.py off). E.g. `gangsched+nonstrict+notopo`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Literal, Protocol

from gangsched.whatif.model import JobSpec, Workload


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


FAITHFUL_BASELINES = ("kube-scheduler", "coscheduling", "kube-scheduler-gang")
BASELINES = (*FAITHFUL_BASELINES, "pod-by-pod-fifo", "permit-wait-600s")
PERMIT_WAIT_SECONDS = 600.0  # permit-wait-600s's Permit timeout (a job's own waiting time overrides it)
GANGSCHED_VARIANTS = ("spread", "strict", "nonstrict", "notopo", "nopreempt", "nohold", "nopack")
POLICY_NAMES = ("gangsched", *(f"gangsched+{v}" for v in GANGSCHED_VARIANTS), *BASELINES)


def parse_policies(text: str) -> list[str]:
    """Comma-separated policy names, validated (ValueError names the bad one and what is allowed)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        base, *variants = name.split("+")
        if name in BASELINES:
            continue
        if base != "gangsched" or any(v not in GANGSCHED_VARIANTS for v in variants):
            raise ValueError(
                f"--policies: unknown policy {name!r}; allowed: {', '.join(BASELINES)}, gangsched"
                f" with optional +variants from {', '.join(GANGSCHED_VARIANTS)}"
            )
    if not names:
        raise ValueError("--policies: at least one policy is needed")
    return names


def make_policy(name: str, workload: Workload, wait_seconds: float) -> Policy:
    """A fresh policy (no state shared between replays)."""
    if name in BASELINES:
        return _baseline(name, workload)
    from gangsched.whatif.core_policy import CorePolicy, variant_options

    return CorePolicy(name, workload, variant_options(name.split("+")[1:]), wait_seconds)


def _baseline(name: str, workload: Workload) -> Policy:
    if name == "kube-scheduler":
        from gangsched.whatif.kube_scheduler import KubeScheduler

        return KubeScheduler(workload.nodes)
    if name == "coscheduling":
        from gangsched.whatif.coscheduling import Coscheduling

        return Coscheduling(workload.nodes)
    if name == "kube-scheduler-gang":
        from gangsched.whatif.kube_gang import KubeSchedulerGang

        return KubeSchedulerGang(workload.nodes, workload.domains)
    from gangsched.whatif.baselines import PermitWait, PodByPod

    return PodByPod(workload.nodes) if name == "pod-by-pod-fifo" else PermitWait(workload.nodes, PERMIT_WAIT_SECONDS)
