"""Resource accounting: per-node used resources, the change log the capacity caches follow, and generations.

Contract (owned by the store, core/memory/store.py, which decides from each pod's state what is charged):
- `charge(slot_charge, target, requests) -> new charge`: moves a pod's charge (node, requests) to `target`
  (None: no charge). A pod is never charged twice; an unchanged charge costs nothing.
- `used`: node -> resources used by charged pods (a node without any is absent); `pods_on`: node -> the keys of
  the pods charged there (given as `key` to charge/uncharge; core/gang/starvation.py reads the pods of a few nodes).
- `changes_since(position)` / `log_end()`: the nodes whose used resources changed since a position of the log
  (None when the log was trimmed past it: rebuild).
- `freed_gen` is bumped whenever capacity may have grown (a charge left a node, a node joined or changed, a
  nomination went): a unit backed off before that is tried again at once, as kube-scheduler requeues on
  cluster events. `static_gen` is bumped when any node's static properties change.
"""

from __future__ import annotations

from collections.abc import Mapping

from gangsched.core.memory.node_log import NodeLog
from gangsched.core.values.resources import Resources, add_into, sub_into

Charge = tuple[str, Mapping[str, int]]  # (node, requests) counted in `used`


class Accounting:
    def __init__(self) -> None:
        self.used: dict[str, Resources] = {}
        self.pods_on: dict[str, dict[str, None]] = {}  # node -> pods charged there
        self.static_gen = 0
        self.freed_gen = 0
        self._log = NodeLog()  # nodes whose used resources changed

    def charge(
        self, current: Charge | None, target: str | None, requests: Mapping[str, int] | None, nodes: int, key: str
    ) -> Charge | None:
        """The charge after moving `current` to (target, requests); `nodes` bounds the log's length."""
        if current is not None and target == current[0] and requests is current[1]:
            return current
        if current is not None:
            self.uncharge(current, nodes, key, moving_to=target)
        if target is None or requests is None:
            return None
        on = self.pods_on.get(target)
        if on is None:
            on = self.pods_on[target] = {}
        on[key] = None
        used = self.used.get(target)
        if used is None:
            used = self.used[target] = {}
        add_into(used, requests)
        self._log.add(target, nodes)
        return (target, requests)

    def uncharge(self, current: Charge, nodes: int, key: str, moving_to: str | None = None) -> None:
        node, requests = current
        on = self.pods_on.get(node)
        if on is not None:
            on.pop(key, None)
            if not on:
                del self.pods_on[node]
        used = self.used.get(node)
        if used is not None:
            sub_into(used, requests)
            if not used:
                del self.used[node]
        self._log.add(node, nodes)
        if moving_to != node:
            self.freed_gen += 1

    def log_end(self) -> int:
        return self._log.end()

    def changes_since(self, position: int) -> list[str] | None:
        """Nodes whose used resources changed since `position` (None: the log was trimmed past it)."""
        return self._log.since(position)

    def log_length(self) -> int:
        return len(self._log)
