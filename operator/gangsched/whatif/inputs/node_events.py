"""Node events of a replay: nodes going down and coming back, from a file or from a failure model.

Contract:
- `read_node_events(path, nodes) -> tuple[NodeEvent, ...]`: CSV `time,node,event` (seconds >= 0, an inventory node,
  `down` | `up`), sorted by time (ties in file order); a node goes down only when up and comes up only when down.
  InputError (file, line, column, value, what is allowed) otherwise.
- `failure_events(nodes, *, mtbf_hours, repair_hours, horizon, seed)`: each node fails as a Poisson process (mean
  `mtbf_hours` of up time) and is repaired after an exponential time (mean `repair_hours`), over [0, horizon),
  reproducible from `seed`.
What a down node means (its pods' jobs restart from zero) is the engine's (whatif/engine.py).
More: docs/modules.md#whatifinputsnode_eventspy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path

from gangsched.whatif.inputs.files import InputError, csv_rows, number
from gangsched.whatif.model import NodeEvent, NodeSpec

EVENTS = {"down": False, "up": True}


def read_node_events(path: str | Path, nodes: Sequence[NodeSpec]) -> tuple[NodeEvent, ...]:
    """See the module docstring."""
    names = {n.name for n in nodes}
    rows = []
    for line, row in csv_rows(path, required=("time", "node", "event")):
        t = number(row["time"], path=path, line=line, column="time", kind="float", minimum=0, maximum=1e12)
        node = row["node"]
        if node not in names:
            raise InputError(path, line, "node", node, "must be a node of the inventory")
        up = EVENTS.get(row["event"])
        if up is None:
            raise InputError(path, line, "event", row["event"], "must be down or up")
        rows.append((t, line, NodeEvent(t, node, up)))
    rows.sort(key=lambda r: (r[0], r[1]))
    down: set[str] = set()
    for _, line, ev in rows:
        if ev.up != (ev.node in down):
            state = "down" if ev.node in down else "up"
            raise InputError(path, line, "event", "up" if ev.up else "down", f"node {ev.node} is already {state}")
        (down.discard if ev.up else down.add)(ev.node)
    return tuple(ev for _, _, ev in rows)


def failure_events(
    nodes: Sequence[NodeSpec], *, mtbf_hours: float, repair_hours: float, horizon: float, seed: int
) -> tuple[NodeEvent, ...]:
    """See the module docstring."""
    if not all(math.isfinite(h) and h > 0 for h in (mtbf_hours, repair_hours)):
        raise ValueError(
            f"mean time between failures ({mtbf_hours!r} h) and repair ({repair_hours!r} h) must be finite and > 0"
        )
    rng = random.Random(seed)
    events = []
    for node in nodes:
        t = rng.expovariate(1 / (mtbf_hours * 3600))
        while t < horizon:
            events.append(NodeEvent(t, node.name, False))
            t += rng.expovariate(1 / (repair_hours * 3600))
            events.append(NodeEvent(t, node.name, True))
            t += rng.expovariate(1 / (mtbf_hours * 3600))
    events.sort(key=lambda e: e.time)  # (stable: a node's own events keep their order)
    return tuple(events)
