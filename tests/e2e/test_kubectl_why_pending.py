"""Why a pod waits is on the pod, with the real kubectl: every waiting member of a gang that cannot fit, not only
the first, has PodScheduled=False with reason Unschedulable and the gang's message, and a FailedScheduling event
that is aggregated (its count rises on each attempt; one Event object per pod, not one per attempt); the PodGroup
shows a REASON column, and `-o wide` its message; the counts in the message say what they count.

Oracles (kubernetes/kubernetes, read through the `search` tool):
- pkg/scheduler/schedule_one.go handleSchedulingFailure: on every failed attempt of a pod, kube-scheduler records
  `fwk.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", msg)` and, through
  updatePod, sets the pod's condition {Type: PodScheduled, Status: False, Reason: Unschedulable, Message: msg};
- pkg/scheduler/framework/types.go FitError.Error(): "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had
  untolerated taint ...": a count of nodes for each reason;
- staging/src/k8s.io/client-go/tools/record/events_cache.go EventLogger: a repeat of an event on the same object
  with the same message increments the Event's `count` instead of creating another Event.
- staging/src/k8s.io/kubectl/pkg/describe/describe.go describePod prints a pod's conditions as "Type  Status" only
  (a header, then one such line per condition): the condition's reason and message are read with `kubectl get pod
  -o json`; `describe` shows PodScheduled False and the FailedScheduling event with the message.
- A CRD's additionalPrinterColumns with `priority: 1` are shown only by `kubectl get -o wide`
  (apiextensions.k8s.io/v1 CustomResourceColumnDefinition.priority).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, get_podgroup, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
MEMBERS = [f"big-{i}" for i in range(4)]


@pytest.fixture
async def three_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        yield cluster


async def failed_scheduling(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    shown = json.loads(
        await kubectl(cluster, "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json")
    )
    return [e for e in shown["items"] if e["reason"] == "FailedScheduling"]


async def test_every_waiting_member_says_why_and_the_podgroup_shows_the_reason(three_nodes: Cluster) -> None:
    k = three_nodes.client
    async with replica(three_nodes.kubeconfig):
        objs = [podgroup("big", min_member=4), *(pod(name, group="big", gpu=16) for name in MEMBERS)]
        await kubectl(three_nodes, "apply", "-f", "-", input=yaml.safe_dump_all(objs))

        async def explained() -> str | None:
            message: str = ((await get_podgroup(k, "big")) or {}).get("status", {}).get("message", "")
            return message if "needs 4 pods" in message else None

        message = await eventually(explained, what="the PodGroup's reason")
        # counts say what they count: no node fits one of the four pods, each of the 3 nodes lacks GPUs
        assert "0 nodes fit; 4 more pods blocked by: insufficient nvidia.com/gpu (3 nodes)" in message, message
        assert not bound(await pods(k))

        async def every_member_has_a_counted_event() -> bool:
            for name in MEMBERS:
                events = await failed_scheduling(three_nodes, name)
                if len(events) != 1 or events[0].get("count", 1) < 2:
                    return False
            return True

        # each attempt records FailedScheduling on each member; the recorder aggregates them into one Event per pod
        await eventually(every_member_has_a_counted_event, what="an aggregated FailedScheduling on every member")
        for name in MEMBERS:
            shown = json.loads(await kubectl(three_nodes, "get", "pod", name, "-o", "json"))
            condition = next(c for c in shown["status"]["conditions"] if c["type"] == "PodScheduled")
            assert (condition["status"], condition["reason"]) == ("False", "Unschedulable"), (name, condition)
            assert condition["message"] == message, name
            described = await kubectl(three_nodes, "describe", "pod", name)
            assert re.search(r"PodScheduled\s+False", described), described
            assert re.search(r"Warning\s+FailedScheduling\s+.*\(x\d+ over", described), described
            assert "insufficient nvidia.com/gpu (3 nodes)" in described, described
            events = await failed_scheduling(three_nodes, name)
            assert len(events) == 1 and events[0]["message"] == message and events[0]["type"] == "Warning"

        table = await kubectl(three_nodes, "get", "podgroups.scheduling.x-k8s.io", "big")
        header, row = table.splitlines()[:2]
        assert "REASON" in header.split() and "MESSAGE" not in header.split(), table
        assert row.split()[header.split().index("REASON")] == "Unschedulable", table
        wide = await kubectl(three_nodes, "get", "podgroups.scheduling.x-k8s.io", "big", "-o", "wide")
        header, row = wide.splitlines()[:2]
        assert header.split()[-1] == "MESSAGE" and row.endswith(message), wide
