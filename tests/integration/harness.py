"""Helpers of the operator's integration tests: a simulated cluster, operator replicas in-process, manifests.

Everything goes through real HTTP: the emulator serves, the operator (Kopf + its own client) and the tests
talk to it as they would to a cluster. `eventually()` polls a real condition with a deadline; it never
sleeps to make a race pass.

Replicas run as the ServiceAccount of manifests/rbac.yaml (gangsched-system/gangsched) with RBAC enforced, as
in a real installation: `replica()` mints a token for it through the TokenRequest API with the test's admin
kubeconfig and gives the replica a kubeconfig with that token, so a permission the manifests lack fails the
test (403). The test's own client stays the admin. A kubeconfig without a token (an emulator with auth off) is
used as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from gangsched.handlers.thread import OperatorThread
from gangsched.k8s.client import ApiError, KubeClient
from gangsched.models.config import config_from_mapping
from gangsched.runtime.operator import Operator
from tests.builders import member_manifest, podgroup_manifest

T = TypeVar("T")
PG = "/apis/scheduling.x-k8s.io/v1alpha1"
GPU = "nvidia.com/gpu"
OPERATOR_NAMESPACE = "gangsched-system"
SERVICE_ACCOUNT = "gangsched"


async def service_account_kubeconfig(
    admin_kubeconfig: str, *, namespace: str = OPERATOR_NAMESPACE, name: str = SERVICE_ACCOUNT
) -> str:
    """A kubeconfig next to admin_kubeconfig with a fresh token of the ServiceAccount (TokenRequest, as
    `kubectl create token` does); admin_kubeconfig itself when it carries no token (auth off)."""
    doc = yaml.safe_load(Path(admin_kubeconfig).read_text())
    users = doc.get("users") or []
    if not users or not (users[0].get("user") or {}).get("token"):
        return admin_kubeconfig
    async with await KubeClient.connect(admin_kubeconfig) as admin:
        answer = await admin.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
        )
    users[0]["user"] = {"token": answer["status"]["token"]}
    target = Path(f"{admin_kubeconfig}.{namespace}.{name}")
    target.touch(mode=0o600)
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(target)


async def eventually(probe: Callable[[], Awaitable[T | None]], *, timeout: float = 20.0, what: str = "condition") -> T:
    """Await probe() until it returns something truthy; fail with the last value after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = await probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s; last value: {last!r}")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def replica(
    kubeconfig: str,
    *,
    identity: str = "replica-1",
    leader_election: bool = False,
    **settings: Any,
) -> AsyncIterator[Operator]:
    """One operator replica, in a thread and event loop of its own, until the block ends; yields its Operator.
    It runs as the manifests' ServiceAccount (see module docstring), in namespace gangsched-system unless
    `namespace=` says otherwise.

    `stop_replica(operator)` stops it early (e.g. to see a follower take over)."""
    kubeconfig = await service_account_kubeconfig(kubeconfig)
    config = config_from_mapping(
        {
            "namespace": OPERATOR_NAMESPACE,
            "leaderElection": {
                "enabled": leader_election,
                "leaseDurationSeconds": 3,
                "renewDeadlineSeconds": 2,
                "retryPeriodSeconds": 0.2,
            },
            **settings,
        }
    )
    runner = OperatorThread(kubeconfig=kubeconfig, config=config, identity=identity)
    try:
        operator = await runner.start()
        _RUNNERS[id(operator)] = runner
        yield operator
    finally:
        await runner.stop()
        _RUNNERS.pop(id(runner._operator), None)


_RUNNERS: dict[int, OperatorThread] = {}


async def stop_replica(operator: Operator) -> None:
    await _RUNNERS[id(operator)].stop()


async def bindings_counted(operator: Operator, count: int) -> None:
    """Wait until the replica has counted `count` bindings (it counts after the API's answer, which the test may
    see first), then check it is exactly that many."""

    async def probe() -> bool:
        return operator.bound >= count

    await eventually(probe, what=f"{count} bindings counted by the replica")
    assert operator.bound == count, (operator.bound, count)


def on_replica(operator: Operator, fn: Callable[[], T]) -> T:
    """Run fn() on the replica's own event loop (its state is not thread-safe) and return the result."""
    return _RUNNERS[id(operator)].call(fn)


# the integration tests' names for tests.builders.member_manifest and podgroup_manifest
pod = member_manifest
podgroup = podgroup_manifest


async def placed(k: KubeClient, prefix: str, n: int) -> dict[str, str] | None:
    """The nodes of the bound pods named `<prefix>-*` once all `n` of them are bound, else None."""
    got = {name: node for name, node in bound(await pods(k)).items() if name.startswith(prefix + "-")}
    return got if len(got) == n else None


async def create(client: KubeClient, *objs: dict[str, Any]) -> None:
    for obj in objs:
        ns = obj["metadata"].get("namespace", "default")
        kind = obj["kind"]
        if kind == "Pod":
            path = f"/api/v1/namespaces/{ns}/pods"
        elif kind == "PodGroup":
            path = f"{PG}/namespaces/{ns}/podgroups"
        elif kind == "Namespace":
            path = "/api/v1/namespaces"
        elif kind == "PriorityClass":
            path = "/apis/scheduling.k8s.io/v1/priorityclasses"
        elif kind == "ConfigMap":
            path = f"/api/v1/namespaces/{ns}/configmaps"
        elif kind == "PodDisruptionBudget":
            path = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
        else:
            raise ValueError(kind)
        await client.create(path, obj)


async def pods(client: KubeClient, namespace: str | None = None) -> dict[str, dict[str, Any]]:
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    return {p["metadata"]["name"]: p for p in (await client.get(path))["items"]}


async def get_podgroup(client: KubeClient, name: str, namespace: str = "default") -> dict[str, Any] | None:
    try:
        return await client.get(f"{PG}/namespaces/{namespace}/podgroups/{name}")
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


async def phase_of(client: KubeClient, name: str, namespace: str = "default") -> str | None:
    pg = await get_podgroup(client, name, namespace)
    phase: str | None = (pg or {}).get("status", {}).get("phase")
    return phase


async def events_for(client: KubeClient, name: str, namespace: str = "default") -> list[dict[str, Any]]:
    items = (await client.get(f"/api/v1/namespaces/{namespace}/events"))["items"]
    return [e for e in items if e["involvedObject"]["name"] == name]


def bound(objs: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: p["spec"]["nodeName"] for name, p in objs.items() if p["spec"].get("nodeName")}


async def append_all(stream: AsyncIterable[T], into: list[T]) -> None:
    """Append every item of stream to into as it arrives (what came before an error stays in into)."""
    async for item in stream:
        into.append(item)
