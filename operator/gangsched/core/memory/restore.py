"""A new leader's restoration of nominations, their victims and timeouts from the pods.

Contract:
- `restore_timeouts(state)`: a gang (spec known, not satisfied) with an unbound live member carrying the previous
  leader's timeout annotation is timed out again (GangTimeout status); returns those gangs.
- `restore_nominations(state, now=...)`: every partially bound Strict gang starts its waiting time at `now`; every
  pending, not leaving pod whose status.nominatedNodeName names an existing node, without a gang or of a gang
  still able to use it, gets its nomination back, and the leaving lower-priority pods bound on its nominated
  nodes become its victims; a gang without a waiting-time start starts it at `now`. Returns the pods whose
  nomination was not restored (the runtime clears them).
More: docs/modules.md#corememoryrestorepy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from gangsched.core.memory.gangs import may_be_partial
from gangsched.core.memory.plan import GangStatus
from gangsched.core.memory.podstate import LEAVING, TERMINAL, PodState
from gangsched.core.memory.store import ClusterStore
from gangsched.core.memory.victim_book import VictimBook
from gangsched.core.records.records import PodRecord


class Restorable(Protocol):
    """What the restoration reads and changes of the scheduler's memory (`SchedulerState` satisfies it)."""

    @property
    def store(self) -> ClusterStore: ...
    @property
    def victims(self) -> VictimBook: ...
    @property
    def evicting(self) -> Mapping[str, str]: ...
    def mark_preempted(self, victim_gangs: Iterable[str]) -> None: ...


def _restorable(state: Restorable, pod: PodRecord) -> bool:
    store = state.store
    gang = store.gangs.get(pod.gang) if pod.gang is not None else None
    return not (
        (pod.gang is not None and (gang is None or gang.spec is None or gang.satisfied or gang.timed_out))
        or pod.nominated_node not in store.nodes
        or not pod.ours
        or pod.node_name is not None
        or pod.terminal
        or pod.timed_out
        or store.state_of(pod.key) is not PodState.PENDING
        or pod.key in store.leaving
    )


def _restore_held(state: Restorable, stale: list[str]) -> dict[str, set[str]]:
    """Nominations back; returns preemptor (a gang, or a pod without one) -> its nominated nodes."""
    held: dict[str, set[str]] = {}
    for key, pod in list(state.store.pods.items()):
        node = pod.nominated_node
        if node is None or state.store.state_of(key) is PodState.NOMINATED:
            continue
        if not _restorable(state, pod):
            stale.append(key)
            continue
        state.store.nominate(key, node)
        held.setdefault(pod.gang or key, set()).add(node)
    return held


def _restore_victims(state: Restorable, held: dict[str, set[str]]) -> set[str]:
    """Leaving, lower-priority pods on a gang's nominated nodes become its victims; returns their gangs."""
    gangs, pods = state.store.gangs, state.store.pods

    def priority(preemptor: str) -> int:
        return gangs[preemptor].priority if preemptor in gangs else pods[preemptor].priority

    owner: dict[str, str] = {}  # nominated node -> the highest-priority preemptor holding it
    for gang_key in sorted(held, key=lambda g: (-priority(g), g)):
        for node in held[gang_key]:
            owner.setdefault(node, gang_key)
    victim_gangs: set[str] = set()
    for key in state.store.leaving:
        victim = state.store.pods.get(key)
        if victim is None or victim.node_name is None or victim.terminal or key in state.victims.evicting:
            continue
        preemptor = owner.get(victim.node_name)
        if preemptor is not None and victim.priority < priority(preemptor):
            state.victims.add_victim(key, preemptor)
            if victim.gang is not None:
                victim_gangs.add(victim.gang)
    return victim_gangs


def restore_timeouts(state: Restorable) -> list[str]:
    """Gangs the previous leader timed out, marked timed out again (see the module docstring)."""
    store = state.store
    restored: list[str] = []
    for key, gang in store.gangs.items():
        if gang.spec is None or gang.satisfied or gang.timed_out:
            continue
        members = [store.pods[k] for k in gang.members if k in store.pods]
        marked = [
            p for p in members if p.timed_out and p.node_name is None and not p.terminal and p.key not in store.leaving
        ]
        if not marked:
            continue
        restored.append(key)
        bound = sum(1 for p in members if p.node_name is not None and not p.terminal)
        message = (
            f"waiting time ended before a restart: {len(marked)} members carry the timeout annotation, {bound} bound"
        )
        gang.last_status = GangStatus(bound, 0, len(marked), "GangTimeout", message)
    for key in restored:
        store.set_timed_out(key)
    return restored


def _restart_partial_waits(state: Restorable, *, now: float) -> None:
    """Every partially bound Strict gang (core/gang/partial_gangs.py) has its waiting time start at `now`."""
    store = state.store
    for gang in store.gangs.values():
        if not may_be_partial(gang) or gang.timed_out:
            continue
        assert gang.spec is not None
        bound = [store.pods[k] for k in gang.holding if k in store.pods]
        if len(bound) >= gang.spec.min_member:
            continue
        if all(
            pod.node_name is not None
            and pod.phase == "Pending"
            and store.state_of(pod.key) not in (LEAVING, TERMINAL)
            and pod.key not in state.evicting
            for pod in bound
        ):
            store.set_wait_start(gang.key, now)


def restore_nominations(state: Restorable, *, now: float) -> list[str]:
    restore_timeouts(state)  # before the nominations: a timed-out gang gets none back
    _restart_partial_waits(state, now=now)  # a bind burst cut short: its waiting time counts from the restart
    stale: list[str] = []
    held = _restore_held(state, stale)
    if not held:
        return stale
    state.mark_preempted(_restore_victims(state, held))  # (its PodGroup may still say Running)
    for gang_key in held:
        if (
            gang_key in state.store.gangs and state.store.gangs[gang_key].first_reserved is None
        ):  # the waiting time bounds how long it holds nodes
            state.store.set_wait_start(gang_key, now)
    return stale
