"""The victim book: pods being evicted for a preemptor gang, gangs preempted whole, and protected pods.

Contract (nominations themselves are a pod state, kept by core/memory/store.py):
- `add_victim(pod, gang)`, `victims_of(gang)`, `forget_victim(pod)`: a victim is never chosen again while it exists.
- `preempted` gangs (`mark_preempted`, `clear_preempted`): their stale PodGroup status does not count as satisfied.
- `protected` pods (`set_protected`): selected by a PDB, or their eviction was refused.
- `extend_deadline(gang, t)`, `victim_leaving(pod, t)`, `termination_deadline(gang)`, `clear_deadline(gang)`: when
  the victims chosen for a gang must be gone (its waiting time is suspended until then).
- `refuse(pod, cluster_gen)` / `refused_for(gang, cluster_gen)`: a refused victim is never chosen again for that
  preemptor until its budget, the pod or the cluster changes; a refusal frees no capacity.
- `forget_pod(pod)`, `forget_gang(gang)`: a deleted pod's or gang's entries go.
More: docs/modules.md#corememoryvictim_bookpy.
"""

from __future__ import annotations


class VictimBook:
    def __init__(self) -> None:
        self.evicting: dict[str, str] = {}  # victim pod -> preemptor gang
        self.protected: set[str] = set()
        self._preempting: dict[str, dict[str, None]] = {}  # preemptor gang -> victims being evicted
        self._preempted: set[str] = set()
        self._deadline: dict[str, float] = {}  # preemptor gang -> its victims must be gone by (epoch seconds)
        self._refused: dict[str, dict[str, int]] = {}  # victim pod -> {preemptor gang: cluster gen at refusal}

    def victims_of(self, gang_key: str) -> list[str]:
        """Victims evicted for this gang that still exist."""
        return list(self._preempting.get(gang_key, ()))

    def is_preempted(self, gang_key: str) -> bool:
        return gang_key in self._preempted

    def add_victim(self, pod_key: str, preemptor: str) -> bool:
        """Record a victim; False when it is already being evicted."""
        if pod_key in self.evicting:
            return False
        self.evicting[pod_key] = preemptor
        self._preempting.setdefault(preemptor, {})[pod_key] = None
        return True

    def forget_victim(self, pod_key: str) -> None:
        gang_key = self.evicting.pop(pod_key, None)
        if gang_key is not None:
            victims = self._preempting.get(gang_key)
            if victims is not None:
                victims.pop(pod_key, None)
                if not victims:
                    del self._preempting[gang_key]

    def extend_deadline(self, gang_key: str, deadline: float) -> None:
        if deadline > self._deadline.get(gang_key, float("-inf")):
            self._deadline[gang_key] = deadline

    def victim_leaving(self, pod_key: str, deadline: float) -> None:
        """A victim's deletionTimestamp (deletion time + grace period) is known: its preemptor waits until then."""
        gang_key = self.evicting.get(pod_key)
        if gang_key is not None:
            self.extend_deadline(gang_key, deadline)

    def termination_deadline(self, gang_key: str) -> float | None:
        return self._deadline.get(gang_key)

    def clear_deadline(self, gang_key: str) -> None:
        self._deadline.pop(gang_key, None)

    def mark_preempted(self, gang_key: str) -> None:
        self._preempted.add(gang_key)

    def clear_preempted(self, gang_key: str) -> None:
        self._preempted.discard(gang_key)

    def set_protected(self, pod_key: str, flag: bool) -> None:
        if flag:
            self.protected.add(pod_key)
        else:
            self.protected.discard(pod_key)
            self._refused.pop(pod_key, None)  # its budget allows it now: every refusal of it is forgotten

    def refuse(self, pod_key: str, cluster_gen: int) -> str | None:
        """The victim's eviction was refused; returns its preemptor (None: it was no victim any more)."""
        preemptor = self.evicting.get(pod_key)
        self.protected.add(pod_key)
        self.forget_victim(pod_key)
        if preemptor is not None:
            self._refused.setdefault(pod_key, {})[preemptor] = cluster_gen
        return preemptor

    def refused_for(self, gang_key: str, cluster_gen: int) -> set[str]:
        """The pods whose eviction was refused for this preemptor, with nothing changed since."""
        return {pod for pod, by in self._refused.items() if by.get(gang_key) == cluster_gen}

    def is_refused(self, pod_key: str) -> bool:
        return pod_key in self._refused

    def victim_changed(self, pod_key: str) -> None:
        self._refused.pop(pod_key, None)

    def forget_pod(self, pod_key: str) -> None:
        self.forget_victim(pod_key)
        self.protected.discard(pod_key)
        self._refused.pop(pod_key, None)

    def forget_gang(self, gang_key: str) -> None:
        self._preempted.discard(gang_key)
        self._deadline.pop(gang_key, None)
        for pod in [p for p, by in self._refused.items() if gang_key in by]:
            by = self._refused[pod]
            del by[gang_key]
            if not by:
                del self._refused[pod]

    def sizes(self) -> dict[str, int]:
        return {
            "evicting": len(self.evicting),
            "preempting": len(self._preempting),
            "preempted": len(self._preempted),
            "protected": len(self.protected),
            "deadlines": len(self._deadline),
            "refused": len(self._refused),
        }
