"""Capacity that is coming: per node, the requests of the pods charged there that will end, kept as pods change.

Contract (kept by core/memory/store.py, which decides which pods count; read by core/gang/deadlock.py):
- A pod counts on a node while the store says so: `follow(key, target)` sets what the pod counts, `(node, requests)`
  or None. An unchanged target costs nothing; every change costs O(its resources).
- `by_node`: node -> the requests summed over the pods counted there (present while at least one pod is counted,
  even if they request nothing); `of`: pod -> (node, requests) counted.
- `log_end()` / `changes_since(position)`: the nodes whose coming capacity changed since a position of the log
  (None: the log was trimmed past it, rebuild), as the accounting log (core/memory/accounting.py) does for `used`;
  `caches`: its readers' memos (core/gang/coming_fit.py), apart from the store's `caches` and their LRU order.
"""

from __future__ import annotations

from collections.abc import Mapping

from gangsched.core.fit.store_cache import StoreCaches
from gangsched.core.memory.node_log import NodeLog
from gangsched.core.values.resources import Resources, add_into, sub_into

Counted = tuple[str, Mapping[str, int]]  # (node, requests)


class Coming:
    def __init__(self) -> None:
        self.by_node: dict[str, Resources] = {}
        self.of: dict[str, Counted] = {}
        self._pods: dict[str, int] = {}  # node -> pods counted there
        self._log = NodeLog()  # nodes whose coming capacity changed
        self.caches = StoreCaches()

    def follow(self, key: str, target: Counted | None, nodes: int) -> None:
        """Count the pod as `target` from now on (None: not at all); `nodes` bounds the log's length."""
        current = self.of.get(key)
        if current is None:
            if target is None:
                return
        elif target is not None and target[0] == current[0] and target[1] is current[1]:
            return
        else:
            node, requests = current
            del self.of[key]
            left = self._pods[node] - 1
            if left:
                self._pods[node] = left
                sub_into(self.by_node[node], requests)
            else:
                del self._pods[node], self.by_node[node]
            self._log.add(node, nodes)
            if target is None:
                return
        node, requests = self.of[key] = target
        self._pods[node] = self._pods.get(node, 0) + 1
        add_into(self.by_node.setdefault(node, {}), requests)
        self._log.add(node, nodes)

    def log_end(self) -> int:
        return self._log.end()

    def changes_since(self, position: int) -> list[str] | None:
        """Nodes whose coming capacity changed since `position` (None: the log was trimmed past it)."""
        return self._log.since(position)

    def __len__(self) -> int:
        return len(self.of)
