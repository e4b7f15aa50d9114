"""Free capacity of the nodes for the baseline policies (whatif/baselines.py): which node takes one more pod.

Contract: `FreeIndex(nodes)` tracks each node's free GPUs, CPU and memory. `take(gpus, cpu_milli, memory_mib, model)`
picks a node that fits the pod and charges it (None: no node fits); `give(node, gpus, cpu_milli, memory_mib)`
returns a pod's resources. `set_down(node)` (the node holds no pod any more) takes it out of every choice until
`set_up(node)`. The choice is best fit on GPUs: the node with the fewest free GPUs that still fit (then
inventory order), the same binpack preference as gangsched's default score, so a comparison isolates the gang
logic rather than the scoring. `model` None takes any GPU model. Cost: nodes are bucketed by (GPU model, free GPUs),
so a choice looks at a handful of buckets, never at every node (no pods x nodes loop); a bucket's nodes are checked
for CPU and memory in order until one fits.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.whatif.model import NodeSpec


class FreeIndex:
    def __init__(self, nodes: Iterable[NodeSpec]) -> None:
        self.model: dict[str, str | None] = {}
        self.gpus: dict[str, int] = {}
        self.cpu: dict[str, int] = {}
        self.mem: dict[str, int] = {}
        self.buckets: dict[tuple[str | None, int], dict[str, None]] = {}
        self.max_gpus: dict[str | None, int] = {}
        for node in nodes:
            self.model[node.name] = node.gpu_model
            self.gpus[node.name] = node.gpus
            self.cpu[node.name] = node.cpu_milli
            self.mem[node.name] = node.memory_mib
            self.buckets.setdefault((node.gpu_model, node.gpus), {})[node.name] = None
            self.max_gpus[node.gpu_model] = max(self.max_gpus.get(node.gpu_model, 0), node.gpus)

    def take(self, gpus: int, cpu_milli: int, memory_mib: int, model: str | None) -> str | None:
        models = [model] if model is not None else list(self.max_gpus)
        for free in range(gpus, max((self.max_gpus.get(m, 0) for m in models), default=-1) + 1):
            for m in models:
                bucket = self.buckets.get((m, free))
                if not bucket:
                    continue
                for name in bucket:
                    if self.cpu[name] >= cpu_milli and self.mem[name] >= memory_mib:
                        self._charge(name, gpus, cpu_milli, memory_mib)
                        return name
        return None

    def set_down(self, name: str) -> None:
        self.buckets[(self.model[name], self.gpus[name])].pop(name, None)

    def set_up(self, name: str) -> None:
        self.buckets.setdefault((self.model[name], self.gpus[name]), {})[name] = None

    def give(self, name: str, gpus: int, cpu_milli: int, memory_mib: int) -> None:
        self._charge(name, -gpus, -cpu_milli, -memory_mib)

    def _charge(self, name: str, gpus: int, cpu_milli: int, memory_mib: int) -> None:
        model, free = self.model[name], self.gpus[name]
        if gpus:
            del self.buckets[(model, free)][name]
            self.buckets.setdefault((model, free - gpus), {})[name] = None
            self.gpus[name] = free - gpus
        self.cpu[name] -= cpu_milli
        self.mem[name] -= memory_mib
