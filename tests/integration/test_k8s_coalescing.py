"""The binder's idle signal and the writers' manners toward bindings, over real HTTP against the emulator.

- Binder: `idle` is cleared while bindings are in flight and set again when none is; `in_flight` counts them.
- PatchWriter: `discard` drops a patch not yet sent; with `defer_to` cleared, a batch waits (and is counted in
  `deferrals`) until the event is set, or at most `max_defer` seconds; patches to one path are merged.
- EventRecorder: the same deferral, and events still arrive once bindings are done.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from gangsched.k8s.binder import Binder
from gangsched.k8s.client import STRATEGIC_MERGE_PATCH, KubeClient
from gangsched.k8s.coalescing import EventRecorder, ObjectRef, PatchWriter
from gangsched.k8s.retry import NO_RETRY
from gangsched.sim.apiserver import ApiServer
from gangsched.sim.requestlog import LoggedRequest
from tests.builders import pod_manifest
from tests.integration.harness import eventually

PODS = "/api/v1/namespaces/default/pods"


async def _node(kube: KubeClient, name: str) -> None:
    await kube.create(
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}},
        },
    )


@contextlib.asynccontextmanager
async def _running(coro: Awaitable[Any]) -> AsyncIterator[None]:
    task = asyncio.ensure_future(coro)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_binder_idle_is_cleared_while_bindings_are_in_flight(kube: KubeClient) -> None:
    await _node(kube, "n1")
    for i in range(20):
        await kube.create(PODS, pod_manifest(f"p{i}", scheduler="gangsched"))
    binder = Binder(kube, concurrency=4)
    assert binder.idle.is_set() and binder.in_flight == 0
    seen_busy: list[int] = []

    async def watch_busy() -> None:
        await asyncio.sleep(0)
        seen_busy.append(binder.in_flight)
        assert not binder.idle.is_set()

    results, _ = await asyncio.gather(binder.bind_all([("default", f"p{i}", "n1") for i in range(20)]), watch_busy())
    assert [r.outcome for r in results] == ["bound"] * 20
    assert seen_busy == [20]  # every binding counts, also those waiting for one of the 4 slots
    assert binder.idle.is_set() and binder.in_flight == 0
    assert (await kube.get(f"{PODS}/p7"))["spec"]["nodeName"] == "n1"


async def test_binder_idle_is_set_again_after_failures(kube: KubeClient) -> None:
    binder = Binder(kube, concurrency=2, retry=NO_RETRY)
    [result] = await binder.bind_all([("default", "missing", "n1")])
    assert result.outcome == "gone"
    assert binder.idle.is_set() and binder.in_flight == 0


async def test_discard_drops_a_pending_patch_only(kube: KubeClient) -> None:
    await kube.create(PODS, pod_manifest("a", scheduler="gangsched"))
    await kube.create(PODS, pod_manifest("b", scheduler="gangsched"))
    writer = PatchWriter(kube)
    condition = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    writer.patch(f"{PODS}/a/status", condition, content_type=STRATEGIC_MERGE_PATCH)
    writer.patch(f"{PODS}/b/status", condition, content_type=STRATEGIC_MERGE_PATCH)
    writer.discard(f"{PODS}/a/status")  # another content type: not the same pending patch
    writer.discard(f"{PODS}/a/status", content_type=STRATEGIC_MERGE_PATCH)
    await writer.flush(everything=True)
    a, b = await kube.get(f"{PODS}/a"), await kube.get(f"{PODS}/b")
    assert all(c.get("reason") != "Unschedulable" for c in (a.get("status") or {}).get("conditions") or [])
    assert [c["reason"] for c in b["status"]["conditions"] if c["type"] == "PodScheduled"] == ["Unschedulable"]
    assert writer.writes == 1 and writer.idle


async def test_a_write_in_flight_when_the_object_is_recreated_is_not_remembered(
    apiserver: ApiServer, kube: KubeClient
) -> None:
    """A PodGroup deleted and created again while its status patch is in flight: the patch went to the old object,
    `forget_written` is called for the new one, and the same body must still be sent (it was skipped as "already
    written", so a re-created PodGroup under load kept no status: test_pglife_podgroups). The emulator's request
    listener acts at the moment the first patch arrives (sim/requestlog.py)."""
    await kube.create(PODS, pod_manifest("p", scheduler="gangsched"))
    path = f"{PODS}/p"
    writer = PatchWriter(kube, settle=0.0, min_gap=0.0)
    body = {"metadata": {"labels": {"written": "yes"}}}
    patches: list[LoggedRequest] = []

    def arrived(entry: LoggedRequest) -> None:
        if entry.method == "PATCH" and entry.path == path:
            patches.append(entry)
            if len(patches) == 1:  # in flight: the object is re-created and the same body queued for it
                writer.forget_written(path)
                writer.patch(path, body)

    apiserver.requests.enabled = True
    apiserver.requests.listeners.append(arrived)
    writer.patch(path, body)
    await writer.flush(everything=True)
    await writer.flush(everything=True)
    assert len(patches) == 2 and writer.writes == 2, "the patch queued for the new object was skipped"
    await writer.flush(everything=True)
    assert len(patches) == 2  # (now remembered: no third write of the same body)


async def test_patch_writer_waits_for_bindings_then_writes_merged(kube: KubeClient) -> None:
    await kube.create(PODS, pod_manifest("a", scheduler="gangsched"))
    gate = asyncio.Event()
    writer = PatchWriter(kube, defer_to=gate, max_defer=60.0)
    async with _running(writer.run(min_interval=0.0)):
        writer.patch(f"{PODS}/a", {"metadata": {"labels": {"x": "1"}}})
        await eventually(_value(lambda: writer.deferrals == 1), what="the writer waiting for the gate")
        writer.patch(f"{PODS}/a", {"metadata": {"labels": {"y": "2"}}})  # arrives while it waits: merged
        assert "x" not in ((await kube.get(f"{PODS}/a"))["metadata"].get("labels") or {})
        gate.set()
        labels = await eventually(_labels(kube, "a", "y"), what="the deferred patch written")
    assert labels["x"] == "1" and labels["y"] == "2"
    assert writer.writes == 1


async def test_patch_writer_defers_at_most_max_defer(kube: KubeClient) -> None:
    await kube.create(PODS, pod_manifest("a", scheduler="gangsched"))
    writer = PatchWriter(kube, defer_to=asyncio.Event(), max_defer=0.1)  # the gate is never set
    async with _running(writer.run(min_interval=0.0)):
        writer.patch(f"{PODS}/a", {"metadata": {"labels": {"x": "1"}}})
        await eventually(_labels(kube, "a", "x"), what="the patch written despite the closed gate")
    assert writer.deferrals == 1


@pytest.mark.parametrize("max_defer", [pytest.param(60.0, id="until-bindings-end"), pytest.param(0.1, id="bounded")])
async def test_event_recorder_defers_to_bindings(kube: KubeClient, max_defer: float) -> None:
    await kube.create(PODS, pod_manifest("a", scheduler="gangsched"))
    gate = asyncio.Event()
    recorder = EventRecorder(kube, defer_to=gate, max_defer=max_defer)
    async with _running(recorder.run()):
        recorder.record(ObjectRef("Pod", "v1", "default", "a"), "Normal", "Scheduled", "assigned default/a to n1")
        await eventually(_value(lambda: recorder.deferrals >= 1), what="the recorder waiting for the gate")
        if max_defer > 1:
            assert (await kube.get("/api/v1/namespaces/default/events"))["items"] == []
            gate.set()
        events = await eventually(_events(kube), what="the event written")
    assert [(e["reason"], e["involvedObject"]["name"]) for e in events] == [("Scheduled", "a")]


def _value(fn: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return fn()

    return probe


def _labels(kube: KubeClient, name: str, key: str) -> Callable[[], Awaitable[dict[str, str] | None]]:
    async def probe() -> dict[str, str] | None:
        labels = (await kube.get(f"{PODS}/{name}"))["metadata"].get("labels") or {}
        return labels if key in labels else None

    return probe


def _events(kube: KubeClient) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
    async def probe() -> list[dict[str, Any]]:
        return list((await kube.get("/api/v1/namespaces/default/events"))["items"])

    return probe
