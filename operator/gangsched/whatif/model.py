"""The what-if simulator's vocabulary: what a replay takes in. Plain frozen dataclasses, no behaviour beyond derived
totals; every other whatif module builds or reads these.

Contract (CPU in millicores, memory in MiB, GPUs in devices, times in seconds):
- `NodeSpec`: name, CPU, memory, GPUs, GPU model (None: none or unknown), labels.
- `RoleSpec`: `count` identical members with per-member requests; `name` ("" without roles), `min_count`.
- `JobSpec`: one gang job: id, submit, duration (progress made only while `min_member` members run), priority,
  roles, `min_member`, mode, network topology, GPU model, `wait_seconds`, `comm_share` (whatif/speed.py) and
  `declared_seconds` (None: the scheduler's default / none declared).
- `NodeEvent`: a node going `down` (its pods' incarnations end, restarted from zero) or `up` (empty), at a time.
- `Workload`: jobs sorted by submit time, nodes, topology domains (lowest tier first), `source`, node events.
More: docs/modules.md#whatifmodelpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gangsched.core import Domain

GangMode = Literal["Strict", "NonStrict"]
TopologyMode = Literal["none", "soft", "hard"]


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    gpu_model: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RoleSpec:
    count: int
    cpu_milli: int
    memory_mib: int
    gpus: int
    name: str = ""
    min_count: int | None = None


@dataclass(frozen=True, slots=True)
class JobSpec:
    id: str
    submit: float
    duration: float
    roles: tuple[RoleSpec, ...]
    min_member: int
    priority: int = 0
    mode: GangMode = "Strict"
    topology: TopologyMode = "none"
    highest_tier: int | None = None
    gpu_model: str | None = None
    wait_seconds: float | None = None
    comm_share: float = 0.0
    declared_seconds: float | None = None

    @property
    def members(self) -> int:
        return sum(role.count for role in self.roles)

    @property
    def gpus(self) -> int:
        """GPUs of all members (what the job holds when it runs whole)."""
        return sum(role.count * role.gpus for role in self.roles)


@dataclass(frozen=True, slots=True)
class NodeEvent:
    time: float
    node: str
    up: bool  # False: the node goes down


@dataclass(frozen=True, slots=True)
class Workload:
    jobs: tuple[JobSpec, ...]
    nodes: tuple[NodeSpec, ...]
    domains: tuple[Domain, ...] = ()
    source: str = ""
    node_events: tuple[NodeEvent, ...] = ()

    @property
    def gpu_capacity(self) -> int:
        return sum(node.gpus for node in self.nodes)
