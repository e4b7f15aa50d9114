"""Node filters that depend on what else runs on a node, consulted per node by the capacity indexes
(core/fit/capacity.py) and so by every placement path.

Contract:
- `NodeFilter`: `applies(cls)` (once per class; classes no filter applies to pay nothing), `limit(cls, node, usage)
  -> int` (0: blocked), `reason(...)`; `domains` filters also name the nodes a pod-count change `touched`.
  `filters_for(cls)`, `limit`, `block_reason` combine them; `Usage` is the store's usage plus the workspace's.
- `NodePorts`: host ports must not conflict (same protocol and port, same hostIP or either 0.0.0.0); a class asking
  for host ports fits at most once per node. `PortTable` / `add_ports`: host ports in use per node.
- `InterPodAffinity` (core/fit/affinity.py), `PodTopologySpread` (core/fit/pod_spread.py: a node lacking a
  topology key takes none; the skew is evaluated while placing). Pure. More: docs/modules.md#corefitfilterspy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from gangsched.core.fit.affinity import InterPodAffinity
from gangsched.core.fit.pod_counts import Change, PodCounts
from gangsched.core.fit.pod_spread import PodTopologySpread
from gangsched.core.fit.usage import PortCounts, PortKey, Usage
from gangsched.core.records.records import HostPort, SchedulingClass

WILDCARD = "0.0.0.0"
_UNLIMITED = 1 << 30


def add_ports(counts: PortCounts, ports: Iterable[HostPort], sign: int) -> None:
    """Count `ports` in (sign 1) or out of (sign -1) a node's counts; zero counts are dropped. The workspace's
    counts may go below zero: a released reservation frees ports the store still counts."""
    for port in ports:
        for key in (port, (port.protocol, port.port)):
            n = counts.get(key, 0) + sign
            if n:
                counts[key] = n
            else:
                del counts[key]


def _count(key: PortKey, tables: list[Mapping[PortKey, int]]) -> int:
    return sum(t.get(key, 0) for t in tables)


def port_conflict(wanted: Iterable[HostPort], *in_use: Mapping[PortKey, int] | None) -> HostPort | None:
    """The first of `wanted` that conflicts with a port in use by the sum of the `in_use` counts, else None."""
    tables = [t for t in in_use if t]
    if not tables:
        return None
    for port in wanted:
        if port.ip == WILDCARD:
            if _count((port.protocol, port.port), tables) > 0:
                return port
        elif _count(port, tables) > 0 or _count(HostPort(WILDCARD, port.protocol, port.port), tables) > 0:
            return port
    return None


class PortTable:
    """Host ports in use per node, by charged pod."""

    def __init__(self) -> None:
        self.by_node: dict[str, PortCounts] = {}
        self._charges: dict[str, tuple[str, tuple[HostPort, ...]]] = {}  # pod -> (node, ports)

    def charge(self, pod_key: str, node: str | None, ports: tuple[HostPort, ...]) -> None:
        """The pod's ports are in use on `node` (None or no ports: nowhere)."""
        old = self._charges.pop(pod_key, None)
        if old is not None:
            counts = self.by_node[old[0]]
            add_ports(counts, old[1], -1)
            if not counts:
                del self.by_node[old[0]]
        if node is not None and ports:
            add_ports(self.by_node.setdefault(node, {}), ports, 1)
            self._charges[pod_key] = (node, ports)

    def charged(self, pod_key: str) -> bool:
        return pod_key in self._charges

    def __len__(self) -> int:
        return len(self._charges)


class NodeFilter(Protocol):
    name: str
    domains: bool  # the limit on a node depends on pod counts over its topology domains (see `touched`)

    def applies(self, cls: SchedulingClass) -> bool: ...

    def limit(self, cls: SchedulingClass, node: str, usage: Usage) -> int: ...

    def reason(self, cls: SchedulingClass, node: str, usage: Usage) -> str | None: ...

    def touched(self, cls: SchedulingClass, counts: PodCounts, changes: list[Change]) -> set[str] | None: ...


class NodePorts:
    name = "NodePorts"
    domains = False

    def touched(self, cls: SchedulingClass, counts: PodCounts, changes: list[Change]) -> set[str] | None:
        return set()

    def applies(self, cls: SchedulingClass) -> bool:
        return bool(cls.host_ports)

    def _conflict(self, cls: SchedulingClass, node: str, usage: Usage) -> HostPort | None:
        return port_conflict(cls.host_ports, usage.ports.get(node), usage.extra_ports.get(node))

    def limit(self, cls: SchedulingClass, node: str, usage: Usage) -> int:
        return 0 if self._conflict(cls, node, usage) is not None else 1

    def reason(self, cls: SchedulingClass, node: str, usage: Usage) -> str | None:
        port = self._conflict(cls, node, usage)
        return None if port is None else f"host port {port.port}/{port.protocol} in use"


FILTERS: tuple[NodeFilter, ...] = (NodePorts(), InterPodAffinity(), PodTopologySpread())


def filters_for(cls: SchedulingClass) -> tuple[NodeFilter, ...]:
    """The filters that apply to the class (empty for most classes): read off the class's own fields each time
    (three cheap tests), so no table keyed by class id outlives the class registry."""
    return tuple(f for f in FILTERS if f.applies(cls))


def limit(filters: tuple[NodeFilter, ...], cls: SchedulingClass, node: str, usage: Usage) -> int:
    """How many more pods of the class the node takes by the filters (unlimited without any)."""
    n = _UNLIMITED
    for f in filters:
        n = min(n, f.limit(cls, node, usage))
    return n


def block_reason(cls: SchedulingClass, node: str, usage: Usage) -> str | None:
    for f in filters_for(cls):
        why = f.reason(cls, node, usage)
        if why is not None:
            return why
    return None
