"""The gang table: each gang's state (spec, members, pending members, members holding its quorum, waiting time,
satisfied, timed out, last reported status) and the index of gangs whose waiting time runs.

Contract (owned by the store, core/memory/store.py):
- `get(key)` (an empty state for an unknown gang), `upsert(spec, created)`, `remove(key)` (forgotten once it has
  no members either: `PendingSink.gang_forgotten`); `join(pod)` / `leave(pod, pods)`; `set_pending(...)` tells
  the sink when the pending set becomes non-empty or empty; `set_wait_start`, `set_timed_out`, `reserving()`.
- A gang is satisfied only while >= minMember of its members are bound or finished (`holding`); the flag changes
  only by named `GangTransition`s (SATISFY, QUORUM_HELD, QUORUM_LOST, PREEMPTED), each returning whether it
  changed; `set_holding(...)` fires them on crossings of minMember, and a new minMember re-derives the flag.
More: docs/modules.md#corememorygangspy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from gangsched.core.memory.plan import GangStatus
from gangsched.core.memory.podstate import ASSUMED, BINDING, BOUND, TERMINAL, PodState
from gangsched.core.records.records import PodRecord
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.core.values.units import UnitKey


class PendingSink(Protocol):
    """Told when a pod starts or stops pending, and when a gang is forgotten (the scheduling queue)."""

    def pod_pending(self, pod_key: str, gang_key: str | None, pending: bool) -> None: ...

    def gang_queued(self, gang_key: str, queued: bool) -> None: ...

    def gang_forgotten(self, gang_key: str) -> None: ...


@dataclass(slots=True)
class GangState:
    key: str
    spec: GangSpec | None = None
    created: float | None = None  # the PodGroup's creation time; None: the earliest member's
    members: dict[str, None] = field(default_factory=dict)
    pending: dict[str, None] = field(default_factory=dict)
    holding: dict[str, None] = field(default_factory=dict)  # members bound or finished (they hold its quorum)
    first_reserved: float | None = None  # waiting-time start
    satisfied: bool = False  # >= minMember members bound or finished: later members schedule alone
    timed_out: bool = False
    last_status: GangStatus | None = None
    priority: int = 0  # max priority over members
    member_created: float = float("inf")  # earliest member creation time
    unit: UnitKey = field(init=False)  # its key as a scheduling unit

    def __post_init__(self) -> None:
        self.unit = UnitKey("gang", self.key)

    def quorum_held(self) -> bool:
        """At least minMember members bound or finished (False without a spec)."""
        return self.spec is not None and len(self.holding) >= self.spec.min_member


_HOLDING = frozenset({BINDING, ASSUMED, BOUND})


def holds_quorum(state: PodState, pod: PodRecord) -> bool:
    """A member in this state holds its gang's quorum: bound (or binding, assumed) and not leaving, or Succeeded."""
    return state in _HOLDING or (state is TERMINAL and pod.phase == "Succeeded")


class GangTransition(Enum):
    """The named changes of a gang's satisfaction (see the module docstring)."""

    SATISFY = "satisfy"
    QUORUM_HELD = "quorum-held"
    QUORUM_LOST = "quorum-lost"
    PREEMPTED = "preempted"


class GangTable:
    def __init__(self, sink: PendingSink) -> None:
        self.gangs: dict[str, GangState] = {}
        self._reserving: dict[str, None] = {}
        self._sink = sink

    def get(self, key: str) -> GangState:
        gang = self.gangs.get(key)
        if gang is None:
            gang = self.gangs[key] = GangState(key)
        return gang

    def reserving(self) -> Iterator[str]:
        return iter(self._reserving)

    def reserving_count(self) -> int:
        return len(self._reserving)

    def upsert(self, spec: GangSpec, created: float | None) -> None:
        gang = self.get(spec.key)
        old = gang.spec
        gang.spec = spec
        if created is not None:
            gang.created = created
        if old is None or old.min_member != spec.min_member:  # satisfaction follows the pods and the new minimum
            self.transition(gang.key, GangTransition.QUORUM_HELD if gang.quorum_held() else GangTransition.QUORUM_LOST)

    def remove(self, key: str) -> None:
        gang = self.gangs.get(key)
        if gang is not None:
            gang.spec = None
            gang.created = None
            self._forget_if_empty(gang)

    def set_wait_start(self, key: str, start: float | None) -> None:
        gang = self.get(key)
        gang.first_reserved = start
        if start is None:
            self._reserving.pop(key, None)
        else:
            self._reserving[key] = None

    def transition(self, key: str, transition: GangTransition) -> bool:
        """Apply a satisfaction transition (module docstring); True when the satisfied flag changed."""
        gang = self.get(key)
        if transition is GangTransition.SATISFY or transition is GangTransition.QUORUM_HELD:
            flag = gang.quorum_held()  # never satisfied without the pods to show it
        else:
            flag = False
        if flag == gang.satisfied:
            return False
        gang.satisfied = flag
        if flag:
            self.set_wait_start(key, None)
        return True

    def set_holding(self, pod_key: str, gang_key: str, flag: bool) -> None:
        """The pod is (flag) or is no longer a member bound or finished; a crossing of minMember is a transition."""
        gang = self.gangs.get(gang_key)
        if gang is None or (pod_key in gang.holding) is flag:
            return
        if flag:
            gang.holding[pod_key] = None
        else:
            del gang.holding[pod_key]
        if gang.spec is None:
            return
        if flag and len(gang.holding) == gang.spec.min_member:  # crossed up
            self.transition(gang_key, GangTransition.QUORUM_HELD)
        elif not flag and len(gang.holding) == gang.spec.min_member - 1:  # crossed down
            self.transition(gang_key, GangTransition.QUORUM_LOST)

    def set_timed_out(self, key: str) -> list[str]:
        """Mark it timed out; returns its pending members (their pending state changes)."""
        gang = self.get(key)
        gang.timed_out = True
        self.set_wait_start(key, None)
        return list(gang.pending)

    def join(self, pod: PodRecord) -> None:
        assert pod.gang is not None
        gang = self.get(pod.gang)
        gang.members[pod.key] = None
        gang.priority = max(gang.priority, pod.priority)
        gang.member_created = min(gang.member_created, pod.created)

    def leave(self, pod: PodRecord, pods: Mapping[str, PodRecord]) -> None:
        assert pod.gang is not None
        gang = self.gangs.get(pod.gang)
        if gang is None:
            return
        gang.members.pop(pod.key, None)
        self.set_pending(pod.key, gang.key, False)
        self.set_holding(pod.key, gang.key, False)
        gang.priority = max((pods[k].priority for k in gang.members if k in pods), default=0)
        gang.member_created = min((pods[k].created for k in gang.members if k in pods), default=float("inf"))
        if not gang.members:
            gang.timed_out = False
            self.set_wait_start(gang.key, None)
        self._forget_if_empty(gang)

    def set_pending(self, pod_key: str, gang_key: str, pending: bool) -> None:
        gang = self.gangs.get(gang_key)
        if gang is None:
            return
        if pending:
            if not gang.pending:
                self._sink.gang_queued(gang_key, True)
            gang.pending[pod_key] = None
        elif pod_key in gang.pending:  # (values are None: pop(key, None) cannot tell presence)
            del gang.pending[pod_key]
            if not gang.pending:
                self._sink.gang_queued(gang_key, False)

    def _forget_if_empty(self, gang: GangState) -> None:
        if not gang.members and gang.spec is None:
            self.gangs.pop(gang.key, None)
            self._reserving.pop(gang.key, None)
            self._sink.gang_forgotten(gang.key)


def may_be_partial(gang: GangState) -> bool:
    """A Strict gang with a spec, not satisfied, holding members: it may be partially bound (core/gang/partial_gangs.py
    says when it is; core/memory/restore.py restarts its waiting time on becoming leader)."""
    spec = gang.spec
    return spec is not None and spec.mode == GangMode.STRICT and not gang.satisfied and bool(gang.holding)
