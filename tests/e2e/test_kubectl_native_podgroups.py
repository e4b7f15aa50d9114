"""Two kinds called `podgroups` (issue 25 item 1): real kubectl 1.32 against the emulator serving Kubernetes 1.37.

What is checked, and where the behaviour comes from:
- kubectl's RESTMapper (k8s.io/client-go/restmapper discovery.go NewDiscoveryRESTMapper, wrapped in
  PriorityRESTMapper and kubectl's shortcut expander) resolves a bare resource name present in several groups by the
  order of /apis; kube-apiserver lists built-in groups (aggregator APIService priorities, scheduling.k8s.io 17600)
  before CRD groups (priority 1000). Measured here: with the native API served, `kubectl get podgroups` (and
  `podgroup`) means scheduling.k8s.io/v1beta1, so gangsched's CRD must be named `podgroups.scheduling.x-k8s.io`; its
  short names `pg` and `pgs` stay the CRD's (the native kind declares none).
- Without the native API (the `plain-1.37` profile: GenericWorkload off), a bare `podgroups` is the CRD again.
- `kubectl apply` of a native PodGroup goes through server-side strict validation (the group's /openapi/v3 document
  carries x-kubernetes-group-version-kind and fieldValidation), so unknown fields are 400 as for every built-in kind;
  `kubectl explain podgroups.spec` reads the real v1.37 PodGroupSpec (staging/src/k8s.io/api/scheduling/v1beta1).
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gangsched.sim.apiserver import ApiServer
from gangsched.sim.features import resolve
from tests.e2e.conftest import AsyncKubectl
from tests.tools import need_tool

CRDS = Path(__file__).resolve().parents[2] / "crds"
NATIVE = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: native, namespace: default}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
"""
CRD_PG = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: mine, namespace: default}
spec: {minMember: 2}
"""


async def test_bare_podgroups_is_the_native_group_and_the_crd_is_named_fully(kctl: AsyncKubectl) -> None:
    await kctl("apply", "-f", str(CRDS), check=True)
    applied = await kctl("apply", "-f", "-", input=NATIVE + "---" + CRD_PG, check=True)
    assert applied.stdout.splitlines() == [
        "podgroup.scheduling.k8s.io/native created",
        "podgroup.scheduling.x-k8s.io/mine created",
    ]
    for bare in ("podgroups", "podgroup"):
        names = await kctl("get", bare, "-o", "name", check=True)
        assert names.stdout.split() == ["podgroup.scheduling.k8s.io/native"]
    for crd in ("podgroups.scheduling.x-k8s.io", "pg", "pgs"):
        names = await kctl("get", crd, "-o", "name", check=True)
        assert names.stdout.split() == ["podgroup.scheduling.x-k8s.io/mine"]
    minimum = await kctl(
        "get", "podgroups.scheduling.k8s.io", "native", "-o", "jsonpath={.spec.schedulingPolicy.gang.minCount}"
    )
    assert minimum.stdout == "3"


async def test_native_podgroup_is_validated_strictly(kctl: AsyncKubectl) -> None:
    bad = NATIVE.replace("gang: {minCount: 3}", "gang: {minCount: 3}, minMember: 3")
    result = await kctl("apply", "-f", "-", input=bad)
    assert result.returncode != 0
    assert 'strict decoding error: unknown field "spec.schedulingPolicy.minMember"' in result.stderr
    zero = await kctl("apply", "-f", "-", input=NATIVE.replace("minCount: 3", "minCount: 0"))
    assert zero.returncode != 0 and "spec.schedulingPolicy.gang.minCount: Required value" in zero.stderr
    explained = await kctl("explain", "podgroups.spec", check=True)
    assert "GROUP:      scheduling.k8s.io" in explained.stdout and "schedulingPolicy" in explained.stdout


@pytest.fixture
async def plain_kubectl(tmp_path: Path) -> AsyncIterator[AsyncKubectl]:
    server = ApiServer(history_limit=100, gates=resolve("plain-1.37"))
    await server.start(host="127.0.0.1", port=0)
    kubeconfig = server.write_kubeconfig(tmp_path / "plain.kubeconfig")
    binary = need_tool("kubectl")

    async def run(*args: str, input: str | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        command = [binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", *args]
        result = await asyncio.to_thread(
            subprocess.run, command, input=input, capture_output=True, text=True, timeout=60
        )
        assert not check or result.returncode == 0, result.stderr
        return result

    try:
        yield run
    finally:
        await server.stop()


async def test_plain_profile_bare_podgroups_is_the_crd(plain_kubectl: AsyncKubectl) -> None:
    await plain_kubectl("apply", "-f", str(CRDS), check=True)
    await plain_kubectl("apply", "-f", "-", input=CRD_PG, check=True)
    names = await plain_kubectl("get", "podgroups", "-o", "name", check=True)
    assert names.stdout.split() == ["podgroup.scheduling.x-k8s.io/mine"]
    refused = await plain_kubectl("apply", "-f", "-", input=NATIVE)
    assert (
        refused.returncode != 0
        and 'no matches for kind "PodGroup" in version "scheduling.k8s.io/v1beta1"' in refused.stderr
    )
