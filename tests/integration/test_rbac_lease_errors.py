"""The operator's leader election reports a problem only the user can fix once, as an ERROR naming the fix.

A missing namespace answers 404 `namespaces "X" not found` on the Lease's create (the namespace lifecycle
admission, plugin/pkg/admission/namespace/lifecycle), and a ServiceAccount without the Lease permissions answers
403 (plugin/pkg/auth/authorizer/rbac/rbac.go). Before, both were a WARNING every retry period (2 s by default).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.k8s.lease import LeaderElector
from gangsched.sim.apiserver import ApiServer
from tests.integration.harness import eventually

LOGGER = "gangsched.k8s.lease"


async def _retried_a_few_times(caplog: pytest.LogCaptureFixture, elector: LeaderElector) -> None:
    task = asyncio.create_task(elector.run())
    try:

        async def repeated() -> bool:
            return sum(r.levelno == logging.DEBUG and r.name == LOGGER for r in caplog.records) >= 3

        await eventually(repeated, what="the problem met again on later retries")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_missing_namespace_is_one_error_with_the_fix(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    async with ApiServer() as server:
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "kc"))) as client:
            elector = LeaderElector(
                client,
                namespace="gangsched-system",
                name="gangsched",
                identity="a",
                lease_duration=3,
                renew_deadline=2,
                retry_period=0.01,
            )
            await _retried_a_few_times(caplog, elector)
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == LOGGER]
    assert [r.levelname for r in errors] == ["ERROR"]
    assert "namespace gangsched-system does not exist" in errors[0].getMessage()
    assert "kubectl apply -f manifests/namespace.yaml" in errors[0].getMessage()
    assert elector.problem is not None and not elector.is_leader


async def test_forbidden_lease_is_one_error_with_the_fix(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    async with ApiServer(auth=True) as server:
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "admin"))) as admin:
            await admin.create("/api/v1/namespaces", {"metadata": {"name": "gangsched-system"}})
            await admin.create(
                "/api/v1/namespaces/gangsched-system/serviceaccounts", {"metadata": {"name": "gangsched"}}
            )
            token = (
                await admin.create("/api/v1/namespaces/gangsched-system/serviceaccounts/gangsched/token", {"spec": {}})
            )["status"]["token"]
        async with await KubeClient.connect(str(server.write_kubeconfig(tmp_path / "sa", token=token))) as client:
            elector = LeaderElector(
                client,
                namespace="gangsched-system",
                name="gangsched",
                identity="a",
                lease_duration=3,
                renew_deadline=2,
                retry_period=0.01,
            )
            await _retried_a_few_times(caplog, elector)
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == LOGGER]
    assert [r.levelname for r in errors] == ["ERROR"]
    message = errors[0].getMessage()
    assert 'cannot get resource "leases" in API group "coordination.k8s.io"' in message
    assert "kubectl apply -f manifests/rbac.yaml" in message


async def test_readyz_names_the_problem_of_an_operator_that_cannot_elect() -> None:
    """/readyz (Operator.readiness) is not ready while the Lease cannot be used, and says why and how to fix it."""
    from gangsched.sim.serve import running_cluster
    from tests.integration.harness import on_replica, replica

    async with running_cluster(nodes=1, node_resources={"cpu": "4", "memory": "8Gi", "pods": "110"}) as cluster:
        async with replica(cluster.kubeconfig, leader_election=True, namespace="nowhere") as op:

            async def reported() -> dict[str, object] | None:
                body = on_replica(op, op.readiness)
                return body if body.get("problem") else None

            body = await eventually(reported, what="a leader-election problem on /readyz")
            assert body["ready"] is False and body["leader"] is False
            assert "kubectl apply -f manifests/" in str(body["problem"])
