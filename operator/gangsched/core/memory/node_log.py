"""A change log of node names: the books of the store (core/memory/accounting.py `used`, core/memory/coming.py)
append the node each change touched; their readers (the capacity indexes, core/gang/coming_fit.py) keep a position
and ask what changed since.

Contract: `add(node, nodes)` appends; past 4 x nodes + 10,000 entries the log is emptied and its base moves on, so
it stays O(nodes). `end()` is the position after the last entry; `since(position)` the nodes added since it, or
None when the log was emptied past it (the reader rebuilds). `len()`: entries kept now.
"""

from __future__ import annotations


class NodeLog:
    __slots__ = ("_base", "_entries")

    def __init__(self) -> None:
        self._entries: list[str] = []  # nodes changed, since _base
        self._base = 0

    def add(self, node: str, nodes: int) -> None:
        self._entries.append(node)
        if len(self._entries) > 4 * nodes + 10_000:
            self._base += len(self._entries)
            self._entries.clear()

    def end(self) -> int:
        return self._base + len(self._entries)

    def since(self, position: int) -> list[str] | None:
        if position < self._base:
            return None
        return self._entries[position - self._base :]

    def __len__(self) -> int:
        return len(self._entries)
