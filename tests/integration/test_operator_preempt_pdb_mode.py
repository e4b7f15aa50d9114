"""`preemption.pdb: respect|prefer` (issue 13 item 7): PodDisruptionBudgets as kube-scheduler treats them.

Both modes prefer victims whose eviction violates no budget (kube-scheduler: pkg/scheduler/framework/preemption/
preemption.go `pickOneNodeForPreemption`, fewest PDB violations first; `filterPodsWithPDBViolation`). `respect`
(the default) sends every victim through the Eviction API, which refuses a protected one with 429
(pkg/registry/core/pod/storage/eviction.go): the preemptor then does without it; and it never chooses a victim
gang with a member whose eviction the budget's status says would be refused (issue 22 item 2: the others would go
and the gang would be left running below its quorum). `prefer` is kube-scheduler's own
behaviour: a budget is only a preference and a victim it protects is deleted as a last resort
(`prepareCandidate` deletes victims, it never evicts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.config import config_from_mapping
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, gang_manifests, priority_class
from tests.integration.harness import create, events_for, eventually, on_replica, placed, pod, replica

NODE = NODE_8_GPUS
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("guarantee", 1000),
]
PDB: dict[str, Any] = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "a", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "a"}}, "minAvailable": 2},
}


@pytest.fixture
async def three() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


def gang(name: str, n: int, *, pc: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return gang_manifests(name, n, pc=pc, labels=labels)


async def test_prefer_deletes_a_protected_victim_only_as_a_last_resort(three: Cluster) -> None:
    """a (2 pods, protected) and b (1 pod, free): high needing 1 node takes b; top needing 3 takes a, deleted."""
    k = three.client
    async with replica(three.kubeconfig, preemption={"pdb": "prefer"}) as op:
        await create(k, *gang("a", 2, pc="best-effort", labels={"app": "a"}), *gang("b", 1, pc="best-effort"))
        await eventually(lambda: placed(k, "a", 2), what="a bound")
        await eventually(lambda: placed(k, "b", 1), what="b bound")
        await create(k, PDB)
        await eventually(
            lambda: _async(on_replica(op, lambda: "default/a-0" in op.cluster.protected)), what="a protected"
        )
        await create(k, *gang("high", 1, pc="guarantee"))
        await eventually(lambda: placed(k, "high", 1), what="high bound")
        assert len(await placed(k, "a", 2) or {}) == 2 and op.preemptions.deleted == 0
        await create(k, *gang("top", 2, pc="guarantee"))
        await eventually(lambda: placed(k, "top", 2), timeout=30, what="top bound past a's budget")
        assert on_replica(op, lambda: op.preemptions.deleted) == 2
        assert on_replica(op, lambda: op.preemptions.refused) == 0


async def test_respect_never_deletes(three: Cluster) -> None:
    """A protected pod without a gang is still a last resort under respect: evicted, refused, never deleted."""
    k = three.client
    async with replica(three.kubeconfig) as op:
        on_replica(op, lambda: setattr(op.preemptions, "retry_window", 1.0))
        lone = [pod(f"a-{i}", gpu=8, priority_class="best-effort", labels={"app": "a"}) for i in range(3)]
        await create(k, *lone)
        await eventually(lambda: placed(k, "a", 3), what="a bound")
        await create(k, {**PDB, "spec": {**PDB["spec"], "minAvailable": 3}})
        await eventually(
            lambda: _async(on_replica(op, lambda: "default/a-0" in op.cluster.protected)), what="a protected"
        )
        await create(k, *gang("top", 1, pc="guarantee"))
        await eventually(
            lambda: _async(on_replica(op, lambda: op.preemptions.refused >= 1)), timeout=30, what="refused"
        )
        assert op.preemptions.deleted == 0
        assert len(await placed(k, "a", 3) or {}) == 3
        assert three.server.request_counts[("DELETE", "pods")] == 0


async def test_respect_does_not_ask_a_victim_gang_a_budget_would_cut_short(three: Cluster) -> None:
    """Issue 22 item 2: a (a gang of 3) has a member the budget protects: it is not chosen, nothing is asked."""
    k = three.client
    async with replica(three.kubeconfig) as op:
        await create(k, *gang("a", 3, pc="best-effort", labels={"app": "a"}))
        await eventually(lambda: placed(k, "a", 3), what="a bound")
        await create(k, {**PDB, "spec": {**PDB["spec"], "minAvailable": 3}})
        await eventually(
            lambda: _async(on_replica(op, lambda: "default/a-0" in op.cluster.protected)), what="a protected"
        )
        await create(k, *gang("top", 1, pc="guarantee"))

        async def said() -> bool:
            return any(e["reason"] == "PreemptionRefused" for e in await events_for(k, "top"))

        await eventually(said, what="top says a budget keeps a")
        assert on_replica(op, lambda: (op.preemptions.requests, op.preemptions.deleted)) == (0, 0)
        assert len(await placed(k, "a", 3) or {}) == 3


def test_the_setting_is_validated() -> None:
    assert config_from_mapping({}).preemption.pdb == "respect"
    assert config_from_mapping({"preemption": {"pdb": "prefer"}}).preemption.pdb == "prefer"
    with pytest.raises(InvalidField, match=r"preemption\.pdb"):
        config_from_mapping({"preemption": {"pdb": "always"}})


async def _async(value: bool) -> bool:
    return value
