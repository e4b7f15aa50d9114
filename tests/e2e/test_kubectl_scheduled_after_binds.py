"""A PodGroup says Scheduled, and a Scheduled event is sent, only once every binding succeeded (issue 13 "Why", after a
crash / messages: "the PodGroup was written `Scheduled` before its bindings succeeded" and "a `Scheduled` event before
the binds succeed"), end to end with the real kubectl. Every pods/binding is answered 5 s late (the emulator's latency
fault: a loaded apiserver), so a burst's binds stay in flight; whenever kubectl first shows the PodGroup `Scheduled` (or
`Running`), or a `Scheduled` event on it, every member is bound already.

Oracles: scheduler-plugins' coscheduling PodGroup controller (pkg/controllers/podgroup_controller.go: the phase
becomes Scheduled from the count of pods bound, never from a decision); kube-scheduler's `Scheduled` event is
recorded after the binding succeeded (pkg/scheduler/schedule_one.go handleBindingCycle / FinishBinding).
The same claim through the API client: tests/integration/test_operator_partial_gangs.py
`test_podgroup_says_scheduled_only_after_its_bindings_succeeded`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gangsched.sim.faults import parse_rule_spec
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.integration.harness import eventually, pod, podgroup, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS


@pytest.fixture
async def slow_binds() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    rule = parse_rule_spec("kind=latency,verb=create,resource=pods/binding,delay=5")
    async with running_cluster(nodes=4, node_resources=NODE, kubelet_start_delay=3600, faults=[rule]) as cluster:
        yield cluster


async def bound_count(cluster: Cluster) -> int:
    out = await kubectl(cluster, "get", "pods", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{'\\n'}{end}")
    return sum(1 for line in out.splitlines() if line.strip())


async def test_podgroup_says_scheduled_only_once_every_bind_succeeded(slow_binds: Cluster) -> None:
    await kubectl_apply(slow_binds, podgroup("g", min_member=4), *(pod(f"g-{i}", group="g", gpu=8) for i in range(4)))
    async with replica(slow_binds.kubeconfig):

        async def said_scheduled() -> str | None:
            phase = await kubectl(
                slow_binds, "get", "podgroups.scheduling.x-k8s.io", "g", "-o", "jsonpath={.status.phase}"
            )
            events = await kubectl(
                slow_binds,
                "get",
                "events",
                "--field-selector",
                "reason=Scheduled,involvedObject.name=g",
                "-o",
                "name",
            )
            return phase or "event" if phase in ("Scheduled", "Running") or events.strip() else None

        await eventually(said_scheduled, timeout=90, what="PodGroup g Scheduled (phase or event)")
        assert await bound_count(slow_binds) == 4  # every binding had succeeded when it was said
