"""The real kubectl against the emulator: apply with default (server-side) validation, printer columns,
rejections with the server's messages, patch, delete, nodes, and pods placed on nodes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.kubelet import SimKubelet
from tests.e2e.conftest import AsyncKubectl, wait_for_pod

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"
EXAMPLE = ROOT / "manifests" / "examples" / "gang-fits.yaml"

NAMESPACE_AND_PODGROUP = """
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: job1
  namespace: team-a
spec:
  minMember: 2
---
apiVersion: v1
kind: Pod
metadata:
  name: job1-0
  namespace: team-a
  labels:
    scheduling.x-k8s.io/pod-group: job1
spec:
  containers:
    - name: main
      image: busybox
"""


def _table(stdout: str) -> list[dict[str, str]]:
    """kubectl's table output as rows keyed by header (columns are separated by two or more spaces)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"(?:(?<=\s\s)|^)\S", header)]
    names = [header[s:e].strip() for s, e in zip(starts, [*starts[1:], len(header) + 1000], strict=True)]
    return [
        {n: line[s:e].strip() for n, s, e in zip(names, starts, [*starts[1:], len(line) + 1000], strict=True)}
        for line in lines[1:]
    ]


async def _install_crds(kctl: AsyncKubectl) -> None:
    result = await kctl("apply", "-f", str(CRDS), check=True)
    assert "podgroups.scheduling.x-k8s.io created" in result.stdout


async def test_apply_get_patch_delete_podgroups(kctl: AsyncKubectl, kube: KubeClient) -> None:
    await _install_crds(kctl)
    first = await kctl("apply", "-f", "-", input=NAMESPACE_AND_PODGROUP, check=True)
    assert first.stdout.splitlines() == [
        "namespace/team-a created",
        "podgroup.scheduling.x-k8s.io/job1 created",
        "pod/job1-0 created",
    ]
    second = await kctl("apply", "-f", "-", input=NAMESPACE_AND_PODGROUP, check=True)
    assert second.stdout.splitlines() == [
        "namespace/team-a unchanged",
        "podgroup.scheduling.x-k8s.io/job1 unchanged",
        "pod/job1-0 unchanged",
    ]

    await kube.patch(
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team-a/podgroups/job1/status",
        {"status": {"phase": "Running", "scheduled": 2, "running": 1}},
    )
    listing = await kctl("get", "podgroups.scheduling.x-k8s.io", "-n", "team-a", check=True)
    header = listing.stdout.splitlines()[0].split()
    for column in ("NAME", "PHASE", "MINMEMBER", "SCHEDULED", "RUNNING", "SUCCEEDED", "FAILED", "AGE"):
        assert column in header
    (row,) = _table(listing.stdout)
    assert (row["NAME"], row["PHASE"], row["MINMEMBER"], row["SCHEDULED"], row["RUNNING"]) == (
        "job1",
        "Running",
        "2",
        "2",
        "1",
    )
    assert row["SUCCEEDED"] == ""  # absent from status: the server sends null, kubectl prints nothing
    assert re.fullmatch(r"\d+s", row["AGE"])

    short = await kctl("get", "pg", "-n", "team-a", "-o", "name", check=True)
    assert short.stdout.strip() == "podgroup.scheduling.x-k8s.io/job1"

    patched = await kctl(
        "patch", "pg", "job1", "-n", "team-a", "--type=merge", "-p", '{"spec":{"minMember":3}}', check=True
    )
    assert "patched" in patched.stdout
    value = await kctl("get", "pgs", "job1", "-n", "team-a", "-o", "jsonpath={.spec.minMember}", check=True)
    assert value.stdout == "3"

    deleted = await kctl("delete", "podgroups.scheduling.x-k8s.io", "job1", "-n", "team-a", check=True)
    assert 'podgroup.scheduling.x-k8s.io "job1" deleted' in deleted.stdout
    missing = await kctl("get", "pg", "job1", "-n", "team-a")
    assert missing.returncode != 0
    assert 'podgroups.scheduling.x-k8s.io "job1" not found' in missing.stderr


BAD_PODGROUPS = [
    pytest.param(
        "spec: {minMember: 0}",
        '"bad" is invalid: spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal '
        "to 1",
        id="min-member-zero",
    ),
    pytest.param("spec: {minMember: 1, foo: 1}", 'unknown field "spec.foo"', id="unknown-field"),
    pytest.param("spec: {minMember: 2, mode: Loose}", 'spec.mode: Unsupported value: "Loose"', id="bad-enum"),
]


@pytest.mark.parametrize(("spec", "message"), BAD_PODGROUPS)
async def test_bad_podgroup_is_rejected_with_the_servers_message(kctl: AsyncKubectl, spec: str, message: str) -> None:
    await _install_crds(kctl)
    manifest = (
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
        f"metadata: {{name: bad, namespace: default}}\n{spec}\n"
    )
    result = await kctl("apply", "-f", "-", input=manifest)
    assert result.returncode != 0
    assert message in result.stderr
    assert "failed to download openapi" not in result.stderr  # validation was left to the server
    gone = await kctl("get", "pg", "bad", "-n", "default")
    assert gone.returncode != 0


async def test_apply_the_example_manifests(kctl: AsyncKubectl) -> None:
    await kctl("apply", "-f", str(CRDS), check=True)
    result = await kctl("apply", "-f", str(EXAMPLE), check=True)
    assert "podgroup.scheduling.x-k8s.io/train-small created" in result.stdout
    pods = _table((await kctl("get", "pods", "-n", "default", check=True)).stdout)
    assert {p["NAME"] for p in pods} >= {"train-small-0", "train-small-1"}
    assert {p["STATUS"] for p in pods} == {"Pending"}


async def test_get_nodes(kctl: AsyncKubectl, cluster_nodes: list[str]) -> None:
    result = await kctl("get", "nodes", check=True)
    assert result.stdout.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = _table(result.stdout)
    assert [(r["NAME"], r["STATUS"], r["ROLES"], r["VERSION"]) for r in rows] == [
        (name, "Ready", "<none>", "v1.37.0-sim") for name in cluster_nodes
    ]
    capacity = await kctl("get", "node", "node-1", "-o", "jsonpath={.status.allocatable.cpu}", check=True)
    assert capacity.stdout == "8"


def _pod_manifest(name: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def _create_and_bind(kube: KubeClient, name: str, node: str, **annotations: str) -> None:
    await kube.create("/api/v1/namespaces/default/pods", _pod_manifest(name, **annotations))
    await kube.create(
        f"/api/v1/namespaces/default/pods/{name}/binding",
        {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}},
    )


def _phase(phase: str) -> Any:
    return lambda pod: (pod.get("status") or {}).get("phase") == phase


async def test_bound_pod_runs_and_kubectl_shows_its_node(
    kctl: AsyncKubectl, kube: KubeClient, sim_kubelet: SimKubelet
) -> None:
    await _create_and_bind(kube, "web-0", "node-2")
    await kube.create("/api/v1/namespaces/default/pods", _pod_manifest("unbound"))
    pod = await wait_for_pod(kube, "default", "web-0", _phase("Running"))
    status = pod["status"]
    assert status["hostIP"] == "10.250.0.3"  # node-2, the third node created
    assert {c["type"] for c in status["conditions"] if c["status"] == "True"} >= {
        "Ready",
        "ContainersReady",
        "Initialized",
        "PodScheduled",
    }
    assert [c["ready"] for c in status["containerStatuses"]] == [True]

    wide = await kctl("get", "pods", "-o", "wide", check=True)
    rows = {r["NAME"]: r for r in _table(wide.stdout)}
    assert (rows["web-0"]["READY"], rows["web-0"]["STATUS"], rows["web-0"]["NODE"], rows["web-0"]["IP"]) == (
        "1/1",
        "Running",
        "node-2",
        status["podIP"],
    )
    assert (rows["unbound"]["STATUS"], rows["unbound"]["NODE"], rows["unbound"]["NOMINATED NODE"]) == (
        "Pending",
        "<none>",
        "<none>",
    )
    narrow = await kctl("get", "pods", check=True)
    assert narrow.stdout.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]


async def test_duration_annotation_makes_the_pod_succeed(
    kctl: AsyncKubectl, kube: KubeClient, sim_kubelet: SimKubelet
) -> None:
    await _create_and_bind(kube, "batch-0", "node-0", **{"sim.gangsched.io/duration": "200ms"})
    pod = await wait_for_pod(kube, "default", "batch-0", _phase("Succeeded"))
    (terminated,) = [c["state"]["terminated"] for c in pod["status"]["containerStatuses"]]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert sim_kubelet.succeeded == 1
    rows = _table((await kctl("get", "pods", check=True)).stdout)
    assert [(r["NAME"], r["READY"], r["STATUS"]) for r in rows] == [("batch-0", "0/1", "Completed")]


async def test_pod_on_a_node_that_appears_later_starts_then(kube: KubeClient, sim_kubelet: SimKubelet) -> None:
    from gangsched.sim.cluster import create_nodes

    await _create_and_bind(kube, "early", "node-late")
    await _create_and_bind(kube, "other", "node-1")
    await wait_for_pod(kube, "default", "other", _phase("Running"))
    early = await kube.get("/api/v1/namespaces/default/pods/early")
    assert early["status"]["phase"] == "Pending"  # no such node (yet): no kubelet runs it
    await create_nodes(kube, ["node-late"], {"cpu": "1"})
    await wait_for_pod(kube, "default", "early", _phase("Running"))


async def test_bad_duration_keeps_the_pod_running(kube: KubeClient, sim_kubelet: SimKubelet) -> None:
    await _create_and_bind(kube, "odd", "node-0", **{"sim.gangsched.io/duration": "forever"})
    await _create_and_bind(kube, "quick", "node-0", **{"sim.gangsched.io/duration": "100ms"})
    await wait_for_pod(kube, "default", "quick", _phase("Succeeded"))
    odd = await kube.get("/api/v1/namespaces/default/pods/odd")
    assert odd["status"]["phase"] == "Running"


async def test_explain_reads_the_crd_schema_from_openapi_v3(kctl: AsyncKubectl) -> None:
    await _install_crds(kctl)
    result = await kctl("explain", "podgroups.spec", "--api-version=scheduling.x-k8s.io/v1alpha1", check=True)
    assert "KIND:       PodGroup" in result.stdout
    assert re.search(r"^\s+minMember\s+<integer>", result.stdout, re.MULTILINE)
