"""Pods that name a gang but use a schedulerName this replica does not serve: counted, so the PodGroup can say why
its members are missing ("3 pods reference this PodGroup with schedulerName default-scheduler").

Contract: `ForeignMembers` keeps, per gang key, the pods naming it with another scheduler's name.
- `update(pod_key, gang, scheduler_name) -> changed gangs`: the pod now names `gang` (None: none) with that
  foreign name; `remove(pod_key) -> changed gangs` (the pod was deleted, or is now ours: the cache then counts it
  as a member). The returned keys are the gangs whose summary changed (the caller marks them dirty).
- `note(gang) -> str | None`: the sentence for the PodGroup's status, None without foreign pods. Names are listed
  sorted, with their counts. `names(gang)`: the foreign schedulerNames alone, sorted (what an event reports: counts
  move as pods are created one by one, the names seldom do).
A pod of another scheduler is never parsed beyond its gang's name (models/gang.py `referenced_gang`): its other
gang annotations are that scheduler's business, and a typo there is not reported by this replica.
"""

from __future__ import annotations


class ForeignMembers:
    def __init__(self) -> None:
        self._of_pod: dict[str, tuple[str, str]] = {}  # pod key -> (gang key, schedulerName)
        self._by_gang: dict[str, dict[str, int]] = {}  # gang key -> schedulerName -> pods

    def update(self, pod_key: str, gang: str | None, scheduler_name: str) -> set[str]:
        old = self._of_pod.get(pod_key)
        new = (gang, scheduler_name) if gang is not None else None
        if old == new:
            return set()
        changed = self.remove(pod_key)
        if new is not None:
            self._of_pod[pod_key] = (new[0], new[1])
            counts = self._by_gang.setdefault(new[0], {})
            counts[new[1]] = counts.get(new[1], 0) + 1
            changed.add(new[0])
        return changed

    def remove(self, pod_key: str) -> set[str]:
        old = self._of_pod.pop(pod_key, None)
        if old is None:
            return set()
        gang, name = old
        counts = self._by_gang[gang]
        counts[name] -= 1
        if not counts[name]:
            del counts[name]
        if not counts:
            del self._by_gang[gang]
        return {gang}

    def note(self, gang: str) -> str | None:
        counts = self._by_gang.get(gang)
        if not counts:
            return None
        parts = [f"{n} pod{'s' if n != 1 else ''} with schedulerName {name}" for name, n in sorted(counts.items())]
        total = sum(counts.values())
        verb = "reference" if total != 1 else "references"
        if len(parts) == 1:
            return f"{parts[0].replace(' with', f' {verb} this PodGroup with', 1)}"
        return f"{total} pods {verb} this PodGroup with other schedulers: {', '.join(parts)}"

    def names(self, gang: str) -> tuple[str, ...]:
        return tuple(sorted(self._by_gang.get(gang, ())))

    def __len__(self) -> int:
        return len(self._of_pod)
