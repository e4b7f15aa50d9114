"""Bad input never unsafe (issue 13 item 10), end to end: a corpus of bad gang declarations applied with the real
kubectl, the operator restarted over them, and a valid gang still scheduled afterwards.

Each bad object must end with its event (and, for gangs, its PodGroup's Invalid condition) naming the field, the
value and what is allowed; none may stop the operator, now or after a restart (a 5,000-digit annotation used to
make the initial pod list fail forever: a crash loop any pod creator could cause).

Where the annotations and their bounds come from:
- Koordinator, koordinator-sh/koordinator apis/extension/coscheduling.go: the gang annotation keys
  (`gang.scheduling.koordinator.sh/name`, `min-available` read by GetMinNum with strconv.ParseInt(value, 10, 32),
  `waiting-time`, `total-number`, `mode`, `groups`); pkg/scheduler/plugins/coscheduling/core/gang.go reads
  waiting-time with time.ParseDuration and keeps only positive values.
- scheduler-plugins, kubernetes-sigs/scheduler-plugins apis/scheduling/v1alpha1/types.go: PodGroupSpec.MinMember
  int32 and ScheduleTimeoutSeconds *int32 (crds/podgroups.yaml: `format: int32`, minimum 1 for minMember).
Schema-level refusals (the CRD's enum and minimum) are the API server's, as apiextensions-apiserver reports them
(staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/validation: "should be greater than or equal to",
"Unsupported value").
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, eventually, get_podgroup, on_replica, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

K = "gang.scheduling.koordinator.sh/"
HUGE = "9" * 5000
NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
OPERATOR_NS = "gangsched-system"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=3, node_resources=NODE) as c:
        yield c


async def kubectl(c: Cluster, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        ["kubectl", f"--kubeconfig={c.kubeconfig}", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def apply(c: Cluster, *objs: dict[str, Any]) -> None:
    result = await kubectl(c, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    assert result.returncode == 0, result.stderr


def gang_pod(name: str, annotations: dict[str, str], *, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {
            "schedulerName": "gangsched",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


def podgroup(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def topology(text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gangsched-topology", "namespace": OPERATOR_NS},
        "data": {"topology.json": text},
    }


def groups(*names: str) -> str:
    return json.dumps([f"default/{n}" for n in names])


# the corpus: pod name -> (annotations, the reason and the words its Warning must carry)
BAD_PODS: dict[str, tuple[dict[str, str], str, tuple[str, ...]]] = {
    "min-huge-0": (
        {K + "name": "min-huge", K + "min-available": HUGE},
        "InvalidGangDeclaration",
        (K + "min-available", "(5000 characters)", "<= 2147483647"),
    ),
    "min-int32-0": (
        {K + "name": "min-int32", K + "min-available": "2147483648"},
        "InvalidGangDeclaration",
        (K + "min-available", '"2147483648"', "<= 2147483647"),
    ),
    "index-huge-0": (
        {K + "name": "index-huge", K + "min-available": "1", K + "network-topology-index": HUGE},
        "InvalidGangDeclaration",
        (K + "network-topology-index", "(5000 characters)", "non-negative integer <= 2147483647"),
    ),
    "wait-huge-0": (
        {K + "name": "wait-huge", K + "min-available": "1", K + "waiting-time": "9999999999999h"},
        "InvalidGangDeclaration",
        (K + "waiting-time", '"9999999999999h"', "at most 2147483647s"),
    ),
    "wait-inf-0": (
        {K + "name": "wait-inf", K + "min-available": "1", K + "waiting-time": "1" * 400 + "s"},
        "InvalidGangDeclaration",
        (K + "waiting-time", "(401 characters)", "at most 64 characters"),
    ),
    "size-huge-0": (
        {K + "name": "size-huge", K + "min-available": "1", "scheduling.gangsched.io/group-size": HUGE},
        "InvalidGangDeclaration",
        ("scheduling.gangsched.io/group-size", "(5000 characters)", "<= 2147483647"),
    ),
}

# refused by the CRD's schema: kubectl reports the server's message and nothing is stored
SCHEMA_REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"minMember": 0}, "spec.minMember in body should be greater than or equal to 1"),
    ({"minMember": 1, "mode": "Loose"}, 'spec.mode: Unsupported value: "Loose"'),
    ({"minMember": 1, "networkTopology": {"mode": "medium"}}, 'spec.networkTopology.mode: Unsupported value: "medium"'),
    ({"minMember": 1, "totalMember": -1}, "spec.totalMember in body should be greater than or equal to 1"),
]


async def warnings_for(client: KubeClient, name: str, namespace: str = "default") -> list[dict[str, Any]]:
    items = (await client.get(f"/api/v1/namespaces/{namespace}/events"))["items"]
    return [e for e in items if e["involvedObject"]["name"] == name and e.get("type") == "Warning"]


async def warned(client: KubeClient, name: str, reason: str, *words: str, namespace: str = "default") -> str:
    """The message of the Warning `reason` on object `name` once it carries every word (waited for)."""

    async def probe() -> str | None:
        for event in await warnings_for(client, name, namespace):
            if event["reason"] == reason and all(w in event["message"] for w in words):
                return str(event["message"])
        return None

    return await eventually(probe, what=f"Warning {reason} on {name} with {words}")


async def invalid_condition(client: KubeClient, name: str, *words: str) -> str:
    async def probe() -> str | None:
        pg = await get_podgroup(client, name)
        for cond in ((pg or {}).get("status") or {}).get("conditions") or []:
            if cond["type"] == "Invalid" and cond["status"] == "True" and all(w in cond["message"] for w in words):
                return str(cond["message"])
        return None

    try:
        return await eventually(probe, what=f"Invalid condition on PodGroup {name} with {words}")
    except AssertionError:
        print(f"PodGroup {name} as last seen:", json.dumps(await get_podgroup(client, name), indent=1))
        raise


async def test_bad_input_corpus_survives_a_restart_and_a_valid_gang_is_scheduled_after(cluster: Cluster) -> None:
    client = cluster.client
    for spec, message in SCHEMA_REFUSED:
        refused = await kubectl(cluster, "apply", "-f", "-", input=json.dumps(podgroup("schema-bad", spec)))
        assert refused.returncode != 0 and message in refused.stderr, (spec, refused.stderr)
    assert await get_podgroup(client, "schema-bad") is None

    async with replica(cluster.kubeconfig) as operator:
        # a running member (6 of node-0's 8 cpus), then annotated with an invalid value while it runs
        await apply(
            cluster,
            gang_pod(
                "runner-0",
                {K + "name": "runner", K + "min-available": "1"},
                cpu="6",
                nodeSelector={"kubernetes.io/hostname": "node-0"},
            ),
        )

        async def runner_running() -> bool:
            phase = (await pods(client)).get("runner-0", {}).get("status", {}).get("phase")
            return bool(phase == "Running")

        await eventually(runner_running, what="runner-0 Running")
        annotated = await kubectl(cluster, "annotate", "pod", "runner-0", "--overwrite", K + "min-available=abc")
        assert annotated.returncode == 0, annotated.stderr
        await warned(client, "runner-0", "InvalidGangDeclaration", K + "min-available", '"abc"', ">= 1")

        def node0_cpu() -> int:
            return int(operator.cluster.used.get("node-0", {}).get("cpu", 0))

        assert on_replica(operator, node0_cpu) == 6000, "the invalid declaration dropped the running pod's usage"

        # the corpus of bad pods, bad gang groups, a mismatch, an oversize groupSize, bad topologies
        await apply(cluster, *(gang_pod(name, annotations) for name, (annotations, _, _) in BAD_PODS.items()))
        await apply(
            cluster,
            *(
                gang_pod(
                    f"cyc-{a}-0",
                    {K + "name": f"cyc-{a}", K + "min-available": "1", K + "groups": groups(f"cyc-{a}", f"cyc-{b}")},
                )
                for a, b in (("a", "b"), ("b", "c"), ("c", "a"))
            ),
        )
        await apply(
            cluster,
            podgroup("lone-b", {"minMember": 1}),
            gang_pod(
                "lone-a-0", {K + "name": "lone-a", K + "min-available": "1", K + "groups": groups("lone-a", "lone-b")}
            ),
            podgroup("wide", {"minMember": 2, "networkTopology": {"mode": "soft", "groupSize": 8}}),
            podgroup("timeout-int32", {"minMember": 1, "scheduleTimeoutSeconds": 9999999999}),
            gang_pod("mix-0", {K + "name": "mix", K + "min-available": "2"}),
        )
        await apply(cluster, gang_pod("mix-1", {K + "name": "mix", K + "min-available": "3", K + "mode": "NonStrict"}))
        ghost_topology = json.dumps(
            [{"layer": 1, "name": "unit-0", "children": ["node-0", "node-1", "node-2", "ghost-7"]}]
        )
        await apply(cluster, topology(ghost_topology))
        await warned(client, "gangsched-topology", "UnknownTopologyNodes", "ghost-7", namespace=OPERATOR_NS)
        # a domain name with 5,000 digits (sorting names naturally used to convert them): refused, and left in place
        # for the restart below
        huge_topology = json.dumps([{"layer": 1, "name": "unit-" + HUGE, "children": ["node-0"]}])
        await apply(cluster, topology(huge_topology))
        await warned(
            client,
            "gangsched-topology",
            "InvalidTopology",
            "topology.json[0].name",
            "at most 253",
            namespace=OPERATOR_NS,
        )

        for name, (_, reason, words) in BAD_PODS.items():
            message = await warned(client, name, reason, *words)
            assert len(message) < 400, message
        for gang in ("cyc-a", "cyc-b", "cyc-c"):
            await invalid_condition(client, gang, K + "groups", "declares another group")
        await warned(client, "cyc-a", "InvalidGangGroup", K + "groups")
        await invalid_condition(client, "lone-a", "gang default/lone-b does not list this group back")
        await warned(client, "wide", "GroupSizeTooLarge", "spec.networkTopology.groupSize: 8", "(2 members")
        await invalid_condition(client, "timeout-int32", "spec.scheduleTimeoutSeconds", "9999999999", "<= 2147483647")
        await warned(client, "mix-1", "GangDeclarationMismatch", "min-available 2 (pod mix-0) vs 3 (pod mix-1)")
        assert not operator.liveness_problems()
        for gang in ("wait-huge", "wait-inf"):  # never written back as a PodGroup the operator would then refuse
            assert await get_podgroup(client, gang) is None
        for gang in ("cyc-a", "cyc-b", "cyc-c", "lone-a"):
            assert f"{gang}-0" not in bound(await pods(client)), f"{gang} bound while its group is invalid"

    # the restart: the initial list holds every bad object; the operator must start and keep scheduling
    async with replica(cluster.kubeconfig, identity="replica-2") as operator:
        assert on_replica(operator, node0_cpu) == 6000, "after the restart the running pod's usage is lost"
        await apply(
            cluster,
            gang_pod("ok-0", {K + "name": "ok", K + "min-available": "2"}, cpu="3"),
            gang_pod("ok-1", {K + "name": "ok", K + "min-available": "2"}, cpu="3"),
        )

        async def ok_bound() -> dict[str, str] | None:
            placed = {n: node for n, node in bound(await pods(client)).items() if n.startswith("ok-")}
            return placed if len(placed) == 2 else None

        placed = await eventually(ok_bound, what="the valid gang ok bound after the restart")
        assert "node-0" not in placed.values(), f"node-0 over-committed: the running pod's 6 cpus forgotten {placed}"
        assert not operator.liveness_problems()
        await invalid_condition(client, "cyc-b", K + "groups")
        for gang in ("cyc-a", "cyc-b", "cyc-c", "lone-a"):
            assert f"{gang}-0" not in bound(await pods(client)), f"{gang} bound after the restart"
