"""The what-if simulator's vocabulary: what a replay takes in. Plain frozen dataclasses, no behaviour beyond
derived totals; every other whatif module builds or reads these.

Contract:
- `NodeSpec`: one node of the inventory: name, CPU (millicores), memory (MiB), GPUs (whole devices), GPU model
  (None: no GPU or unknown) and labels (e.g. `gangsched.io/gpu-model`, topology tiers).
- `RoleSpec`: `count` identical members of one job with per-member requests; `name` "" when the job has no roles;
  `min_count` the role's own minimum (None: no minimum of its own).
- `JobSpec`: one job (a gang): id, submit time and duration in seconds (virtual time from the trace's start;
  `duration` is the progress it needs, made only while at least `min_member` of its members run: a partially
  started job holds its resources and does nothing), priority, its roles, `min_member`, gang mode (`Strict` |
  `NonStrict`), network topology (`none` | `soft` | `hard`, with `highest_tier`), the GPU model it needs (None:
  any), its waiting time (`wait_seconds`, None: the scheduler's default), its communication share at full network
  bandwidth (`comm_share`, whatif/speed.py: how much slower it runs spanning a higher tier) and the run time its
  pods declare (`declared_seconds`: `scheduling.gangsched.io/expected-duration`, None: none declared).
- `NodeEvent`: a node going `down` (every pod on it dies: its job's incarnation ends and restarts from zero, as a
  job controller recreates it) or coming back `up` (empty), at a time in seconds.
- `Workload`: the jobs sorted by submit time, the node inventory, the topology domains (core/topology/tree.py
  `Domain`, lowest tier first; empty: none known), where they came from (`source`, for the report) and the node
  events sorted by time (whatif/inputs/node_events.py; empty: none).
Units: CPU in millicores, memory in MiB, GPUs in devices, times in seconds.
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
