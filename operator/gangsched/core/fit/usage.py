"""What node filters see of the nodes (core/fit/filters.py): the store's usage and the cycle's tentative placements.

Contract: `Usage(ports, extra_ports, nodes, counts, overlay)`: host ports in use per node (the store's
`PortTable.by_node`, and those placed this cycle by the workspace, core/fit/capacity.py), the store's nodes, its
pod counts (core/fit/pod_counts.py) and the pods placed this cycle on top of them (`overlay`). `PortCounts`: one
node's host ports in use, keyed by `HostPort` and by (protocol, port) for the 0.0.0.0 check. Types only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gangsched.core.fit.pod_counts import Overlay, PodCounts
from gangsched.core.records.records import HostPort, NodeRecord

PortKey = HostPort | tuple[str, int]
PortCounts = dict[PortKey, int]


@dataclass(slots=True)
class Usage:
    """What filters see of the nodes: the store's usage and the cycle's tentative placements."""

    ports: Mapping[str, Mapping[PortKey, int]]  # the store's (core/memory/store.py PortTable.by_node)
    extra_ports: dict[str, PortCounts] = field(default_factory=dict)  # placed this cycle (core/fit/capacity.py)
    nodes: Mapping[str, NodeRecord] = field(default_factory=dict)  # the store's nodes (their labels)
    counts: PodCounts | None = None  # the store's pod counts (core/fit/pod_counts.py)
    overlay: Overlay | None = None  # the pods placed this cycle, on top of `counts`
