"""Keep-alive connections to the emulator survive other code in the same event loop cancelling the server's tasks.

Kopf, when it stops, cancels every asyncio task created in the loop while it ran ("hung tasks", kopf
running.run_tasks), the in-process emulator's per-connection tasks included. aiohttp's connection task, cancelled
while idle between two requests, used to exit and leave the socket open with nobody reading it: the next request a
long-lived client sent on that pooled connection was never answered (it hung until the client's timeout) while a
fresh connection worked at once. Everything here goes through real HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import kopf
import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.apiserver import ApiServer

CMS = "/api/v1/namespaces/default/configmaps"


async def cancel_tasks_created_during(
    work: Callable[[], Awaitable[Any]], *, spare: Collection[asyncio.Task[Any]] = ()
) -> int:
    """What Kopf does when it stops: cancel every task created since a snapshot (but `spare`), wait until done."""
    existing = {*asyncio.all_tasks(), *spare, asyncio.current_task()}
    await work()
    spawned = {t for t in asyncio.all_tasks() if t not in existing}
    for task in spawned:
        task.cancel()
    await asyncio.wait_for(asyncio.gather(*spawned, return_exceptions=True), 10)
    return len(spawned)


async def test_idle_keepalive_connection_survives_foreign_task_cancellation(
    apiserver: ApiServer, kube: KubeClient
) -> None:
    # the client's first request opens the pooled keep-alive connection; the server's task for it is then cancelled
    assert await cancel_tasks_created_during(lambda: kube.create(CMS, {"metadata": {"name": "before"}})) >= 1
    for i in range(3):  # the same client, the same pooled connection: answered at once, not after a timeout
        created = await kube.create(CMS, {"metadata": {"name": f"after-{i}"}}, timeout=5)
        assert created["metadata"]["name"] == f"after-{i}"
    names = {c["metadata"]["name"] for c in (await kube.get(CMS, timeout=5))["items"]}
    assert names == {"before", "after-0", "after-1", "after-2"}


async def test_watch_cancelled_by_foreign_code_ends_cleanly_and_resumes(apiserver: ApiServer, kube: KubeClient) -> None:
    rv = (await kube.get(CMS))["metadata"]["resourceVersion"]
    events: list[str] = []
    streaming = asyncio.Event()

    async def watch_until_the_stream_ends() -> None:
        async for kind, obj in kube.watch(CMS, resource_version=rv, timeout_seconds=60):
            events.append(f"{kind} {obj['metadata'].get('name')}")
            streaming.set()

    consumer = asyncio.create_task(watch_until_the_stream_ends())  # the client's task: not cancelled below

    async def open_the_watch() -> None:
        await kube.create(CMS, {"metadata": {"name": "first"}})
        await asyncio.wait_for(streaming.wait(), 5)

    assert await cancel_tasks_created_during(open_the_watch, spare={consumer}) >= 1
    # the stream ended at once as a complete response (no torn chunked body, no ConnectionError)
    await asyncio.wait_for(consumer, 5)
    assert events == ["ADDED first"]
    await kube.create(CMS, {"metadata": {"name": "second"}}, timeout=5)
    assert len((await kube.get(CMS, timeout=5))["items"]) == 2


@pytest.mark.looptime  # Kopf waits 5 s for the tasks it did not start (here: the emulator's) on virtual time
async def test_client_connection_opened_while_kopf_ran_still_works_after_kopf_stopped(
    apiserver: ApiServer, kubeconfig: Any
) -> None:
    """The reported scenario with real Kopf: a long-lived client opens a connection while a Kopf operator runs in
    the same loop; after Kopf stopped (and cancelled its "hung" tasks), that client's next request is answered."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=apiserver.url, insecure=True, default_namespace="default")

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.scanning.disabled = True

    @kopf.on.event("configmaps", registry=registry)
    def seen(**_: Any) -> None:
        pass

    long_lived = await KubeClient.connect(str(kubeconfig))
    try:
        await long_lived.get("/version")  # no connection yet in its pool, only a session
        stop, ready = asyncio.Event(), asyncio.Event()
        operator = asyncio.create_task(
            kopf.operator(registry=registry, namespaces=["default"], standalone=True, stop_flag=stop, ready_flag=ready)
        )
        await asyncio.wait_for(ready.wait(), 15)
        # two concurrent requests: the pool opens a second connection, accepted (a server task made) while Kopf runs
        await asyncio.gather(*(long_lived.create(CMS, {"metadata": {"name": f"during-{i}"}}) for i in range(2)))
        stop.set()
        await asyncio.wait_for(operator, 30)
        for i in range(4):  # every pooled connection in turn
            await long_lived.create(CMS, {"metadata": {"name": f"after-{i}"}}, timeout=5)
    finally:
        await long_lived.close()
