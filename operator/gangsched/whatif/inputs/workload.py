"""One entry point from command-line style arguments to a `Workload` (what `gangsched sim replay` needs).

Contract:
- `Inventory(nodes, domains, source, notes)`: the nodes, their topology domains, a description and notes.
- `load_inventory(source, *, node_resources=..., synthetic=True, memory_gib_per_cpu=8)`: a shipped name (SHIPPED),
  a topology file or an inventory file (nodes.load_nodes); without a topology, topogen.synthetic_topology unless
  `synthetic` is False. `live_inventory(kubeconfig, *, synthetic=True)`: the same from a live cluster.
- `build_workload(inventory, *, trace=None, model=None)`: the trace's jobs, or the synthetic model's.
Errors: files.InputError (bad files), ValueError (an inventory the model cannot serve).
More: docs/modules.md#whatifinputsworkloadpy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from gangsched.core import Domain
from gangsched.whatif.inputs.files import read_text
from gangsched.whatif.inputs.nodes import SPOT_MEMORY_GIB_PER_CPU, live_nodes, load_nodes, nodes_from_topology, shipped
from gangsched.whatif.inputs.synthetic import WorkloadModel, synthetic_workload
from gangsched.whatif.inputs.topogen import synthetic_topology
from gangsched.whatif.inputs.traces import read_trace
from gangsched.whatif.model import NodeSpec, Workload

SHIPPED: Final = {"alibaba-2026": "alibaba-2026-spot-gpu-nodes.csv", "alibaba-2023": "alibaba-2023-openb-gpu-nodes.csv"}
DEFAULT_NODE_RESOURCES: Final = "cpu=32,memory=256Gi,nvidia.com/gpu=8"


@dataclass(frozen=True, slots=True)
class Inventory:
    nodes: tuple[NodeSpec, ...]
    domains: tuple[Domain, ...]
    source: str
    notes: tuple[str, ...] = field(default=())


def _is_topology(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    try:
        doc = json.loads(read_text(path))
    except ValueError:
        return False  # load_nodes reports it with line and column
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) and "layer" in doc[0]


def load_inventory(
    source: str,
    *,
    node_resources: str = DEFAULT_NODE_RESOURCES,
    synthetic: bool = True,
    memory_gib_per_cpu: float = SPOT_MEMORY_GIB_PER_CPU,
) -> Inventory:
    """Nodes and domains from a shipped name, a topology file or an inventory file (see the module docstring)."""
    path = shipped(SHIPPED[source]) if source in SHIPPED else Path(source)
    if _is_topology(path):
        nodes, domains = nodes_from_topology(path, node_resources)
        return Inventory(nodes, domains, f"topology {path.name} ({len(nodes)} nodes, {node_resources})")
    nodes = load_nodes(path, memory_gib_per_cpu=memory_gib_per_cpu)
    domains = synthetic_topology(nodes) if synthetic else ()
    return Inventory(nodes, domains, f"{source} ({len(nodes)} nodes, {sum(n.gpus for n in nodes)} GPUs)")


async def live_inventory(kubeconfig: str | None, *, synthetic: bool = True) -> Inventory:
    """A live cluster's nodes (see the module docstring)."""
    nodes, notes = await live_nodes(kubeconfig)
    domains = synthetic_topology(nodes) if synthetic else ()
    return Inventory(nodes, domains, f"live cluster ({len(nodes)} nodes)", tuple(notes))


def build_workload(
    inventory: Inventory, *, trace: str | Path | None = None, model: WorkloadModel | None = None
) -> Workload:
    """The workload of a trace file, or of the synthetic model, on `inventory` (see the module docstring)."""
    if trace is not None:
        jobs = read_trace(trace)
        return Workload(jobs, inventory.nodes, inventory.domains, f"trace {Path(trace).name} on {inventory.source}")
    built = synthetic_workload(inventory.nodes, model or WorkloadModel(), domains=inventory.domains)
    return Workload(built.jobs, built.nodes, built.domains, f"{built.source} on {inventory.source}")
