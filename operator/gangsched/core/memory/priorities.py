"""How many pods there are of each priority: preemption looks for victims only below the lowest one.

Contract: `count(priority, delta)` adds (or with a negative delta removes) pods of a priority; a priority with no
pods left is forgotten. `lowest()` is the lowest priority of any pod (None without pods); `len()` the number of
distinct priorities (for the store's size report).
"""

from __future__ import annotations


class PriorityCounts:
    def __init__(self) -> None:
        self._counts: dict[int, int] = {}  # pod priority -> pods

    def count(self, priority: int, delta: int) -> None:
        n = self._counts.get(priority, 0) + delta
        if n:
            self._counts[priority] = n
        else:
            self._counts.pop(priority, None)

    def lowest(self) -> int | None:
        return min(self._counts) if self._counts else None

    def __len__(self) -> int:
        return len(self._counts)
