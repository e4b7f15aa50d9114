"""The writers against failing and real API servers (k8s/coalescing.py).

- PatchWriter, against the scripted stub server (real HTTP): a status write is retried until it is accepted
  however many 503s come first (no give-up after 5), after Retry-After, with newer content merged in, and counts as
  written only after success; a 404 drops it. Time is a fake clock: flush() sends only what is due.
- EventRecorder, against the emulator: client-go's event broadcaster as kube-scheduler uses it —
  k8s.io/client-go/tools/record/event.go (`makeEvent`: an object without a namespace gets its events in
  `default`; `recordToSink`: a patch answered NotFound creates the event anew; maxTriesPerEvent = 12) and
  k8s.io/client-go/tools/record/events_cache.go (`EventAggregator`: 10 distinct messages of similar events within
  10 minutes -> one "(combined from similar events): ..." event; `eventLogger.eventObserve`: a repeat patches
  count and lastTimestamp).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from gangsched.k8s.client import STRATEGIC_MERGE_PATCH, ConnectionSettings, KubeClient
from gangsched.k8s.coalescing import COMBINED, EventAggregator, EventRecorder, ObjectRef, PatchWriter
from tests.integration.harness import eventually
from tests.integration.stub_server import FakeTime, Script, json_answer, server, text

__all__ = ["server"]  # a fixture

PODS = "/api/v1/namespaces/default/pods"
PG_STATUS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/g/status"


def _idle(writer: PatchWriter) -> bool:
    return writer.idle


def _writer(kube: KubeClient, t: FakeTime) -> PatchWriter:
    return PatchWriter(kube, clock=t.clock, rand=lambda: 1.0, min_gap=0.0, settle=0.0)


async def test_a_status_write_is_retried_until_it_lands(server: tuple[Script, str]) -> None:
    """Eight 503s (more than the old give-up at 5), one with Retry-After: 3; then accepted. Nothing counts as
    written before that."""
    script, url = server
    busy = text(503, "upstream overloaded")
    script.answers = [busy, busy, text(503, "slow down", **{"Retry-After": "3"}), *[busy] * 5, json_answer(200, {})]
    t = FakeTime()
    async with KubeClient(ConnectionSettings(server=url), qps=None) as kube:
        writer = _writer(kube, t)
        writer.patch(PG_STATUS, {"status": {"phase": "Scheduled"}})
        await writer.flush()
        await writer.flush()  # a backoff is running: nothing is sent again yet
        assert len(script.seen) == 1 and writer.retrying == 1 and not writer.idle and writer.writes == 0
        t.now += 0.2  # PERSISTENT: full jitter up to 0.2 s for the first retry (rand = 1.0)
        await writer.flush()
        t.now += 0.4
        await writer.flush()
        assert len(script.seen) == 3  # the third answer asked for 3 s
        t.now += 2.9
        await writer.flush()
        assert len(script.seen) == 3
        t.now += 0.1
        await writer.flush()
        assert len(script.seen) == 4
        while not _idle(writer):  # (a function: mypy would keep the narrowing of the assert above)
            t.now += 60
            await writer.flush()
        assert len(script.seen) == 9 and writer.writes == 1 and writer.errors == 8 and writer.retrying == 0


async def test_newer_content_merges_over_a_failed_write(server: tuple[Script, str]) -> None:
    script, url = server
    bodies: list[Any] = []

    async def record(request: web.Request) -> web.StreamResponse:
        bodies.append(orjson.loads(await request.read()))
        return web.json_response({}, status=503 if len(bodies) == 1 else 200)

    script.answers = [record]
    t = FakeTime()
    async with KubeClient(ConnectionSettings(server=url), qps=None) as kube:
        writer = _writer(kube, t)
        writer.patch(PG_STATUS, {"status": {"phase": "Scheduling", "scheduled": 3}})
        await writer.flush()
        writer.patch(PG_STATUS, {"status": {"scheduled": 8, "phase": "Scheduled"}})
        t.now += 60
        await writer.flush()
        await writer.flush()  # written and equal to what was written: not sent again
    assert bodies == [
        {"status": {"phase": "Scheduling", "scheduled": 3}},
        {"status": {"phase": "Scheduled", "scheduled": 8}},
    ]
    assert writer.writes == 1


async def test_a_write_to_an_object_that_is_gone_is_dropped(server: tuple[Script, str]) -> None:
    script, url = server
    script.answers = [json_answer(404, {"kind": "Status", "reason": "NotFound", "code": 404, "message": "gone"})]
    async with KubeClient(ConnectionSettings(server=url), qps=None) as kube:
        writer = _writer(kube, FakeTime())
        writer.patch(f"{PODS}/p/status", {"status": {"nominatedNodeName": None}})
        await writer.flush()
    assert writer.idle and writer.retrying == 0 and len(script.seen) == 1 and writer.writes == 0


async def test_writes_to_one_path_within_the_gap_are_coalesced(server: tuple[Script, str]) -> None:
    """A gang's status changing as its members turn Running one by one: one write per gap, the latest content."""
    script, url = server
    bodies: list[Any] = []

    async def record(request: web.Request) -> web.StreamResponse:
        bodies.append(orjson.loads(await request.read()))
        return web.json_response({})

    script.answers = [record]
    t = FakeTime()
    async with KubeClient(ConnectionSettings(server=url), qps=None) as kube:
        writer = PatchWriter(kube, clock=t.clock, min_gap=0.5, settle=0.0)
        writer.patch(PG_STATUS, {"status": {"running": 1}})
        await writer.flush()
        for running in range(2, 9):
            writer.patch(PG_STATUS, {"status": {"running": running}})
            t.now += 0.05
            await writer.flush()
        assert bodies == [{"status": {"running": 1}}]
        t.now += 0.5
        await writer.flush()
    assert bodies == [{"status": {"running": 1}}, {"status": {"running": 8}}]


async def test_flush_everything_sends_what_waits(server: tuple[Script, str]) -> None:
    script, url = server
    script.answers = [text(503, "busy"), json_answer(200, {})]
    async with KubeClient(ConnectionSettings(server=url), qps=None) as kube:
        writer = _writer(kube, FakeTime())
        writer.patch(f"{PODS}/p/status", {"status": {"x": 1}}, content_type=STRATEGIC_MERGE_PATCH)
        await writer.flush()
        await writer.flush(everything=True)
    assert writer.idle and writer.writes == 1


# ------------------------------------------------------------------------------------------------ events
async def _events(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    return list((await kube.get(f"/api/v1/namespaces/{namespace}/events"))["items"])


async def test_events_about_nodes_go_to_the_default_namespace(kube: KubeClient) -> None:
    """event.go makeEvent: `namespace := ref.Namespace; if namespace == "" { namespace = metav1.NamespaceDefault }`."""
    recorder = EventRecorder(kube)
    recorder.record(ObjectRef("Node", "v1", "", "node-1", "uid-1"), "Warning", "TopologyLabelMissing", "no rack label")
    await recorder.drain()
    [event] = await _events(kube, "default")
    assert event["involvedObject"] == {
        "kind": "Node",
        "apiVersion": "v1",
        "namespace": "",
        "name": "node-1",
        "uid": "uid-1",
    }
    assert recorder.errors == 0 and recorder.creates == 1


async def test_repeats_patch_the_count_and_queued_repeats_merge(kube: KubeClient) -> None:
    """events_cache.go eventObserve: a repeat of an event (same key and message) patches count + lastTimestamp."""
    recorder = EventRecorder(kube)
    ref = ObjectRef("Pod", "v1", "default", "p", "u")
    for _ in range(3):
        recorder.record(ref, "Warning", "FailedScheduling", "0/4 nodes are available")
    await recorder.drain()
    [event] = await _events(kube, "default")
    assert event["count"] == 3 and recorder.creates == 1 and recorder.patches == 0  # queued repeats: one create
    recorder.record(ref, "Warning", "FailedScheduling", "0/4 nodes are available")
    await recorder.drain()
    [event] = await _events(kube, "default")
    assert event["count"] == 4 and recorder.patches == 1


async def test_similar_events_are_aggregated(kube: KubeClient) -> None:
    """events_cache.go EventAggregator: the 10th distinct message of similar events (same object, type, reason)
    within 10 minutes and later ones become one "(combined from similar events): <latest>" event, counted."""
    recorder = EventRecorder(kube)
    ref = ObjectRef("PodGroup", "scheduling.x-k8s.io/v1alpha1", "default", "g", "u")
    for i in range(14):
        recorder.record(ref, "Warning", "Unschedulable", f"needs {i} more GPUs")
        await recorder.drain()
    events = await _events(kube, "default")
    combined = [e for e in events if e["message"].startswith(COMBINED)]
    assert len(events) == 10 and len(combined) == 1
    assert combined[0]["message"] == COMBINED + "needs 13 more GPUs" and combined[0]["count"] == 5


async def test_an_object_that_stays_unhealthy_is_rate_limited_and_its_skipped_events_still_counted(
    kube: KubeClient,
) -> None:
    """events_cache.go EventSourceObjectSpamFilter (defaultSpamBurst 25, defaultSpamQPS 1/300): a source may record
    25 events about one object at once, then one every 5 minutes; eventObserve counts the skipped ones, so the next
    write carries them. A pod that waits for hours gets its FailedScheduling at every attempt without writing each."""
    t = FakeTime()
    recorder = EventRecorder(kube, clock=t.clock)
    ref = ObjectRef("Pod", "v1", "default", "waits", "u")
    for _ in range(30):
        recorder.record(ref, "Warning", "FailedScheduling", "needs 4 pods")
        await recorder.drain()
    [event] = await _events(kube, "default")
    assert event["count"] == 25 and recorder.creates + recorder.patches == 25 and recorder.spam.filtered == 5
    other = ObjectRef("Pod", "v1", "default", "other", "u2")  # a bucket per object
    recorder.record(other, "Warning", "FailedScheduling", "needs 4 pods")
    await recorder.drain()
    assert recorder.creates == 2
    t.now += 300  # one token back
    recorder.record(ref, "Warning", "FailedScheduling", "needs 4 pods")
    recorder.record(ref, "Warning", "FailedScheduling", "needs 4 pods")  # no token left: merged into the write
    await recorder.drain()
    [event] = [e for e in await _events(kube, "default") if e["involvedObject"]["name"] == "waits"]
    assert event["count"] == 32 and recorder.spam.filtered == 6 and recorder.creates + recorder.patches == 27


def test_aggregation_window_is_ten_minutes() -> None:
    t = FakeTime()
    agg = EventAggregator(clock=t.clock)
    key = ("default", "Pod", "p", "u", "v1", "Warning", "X")
    for i in range(9):
        assert agg.aggregate(key, f"m{i}")[1] == f"m{i}"
    t.now += 601  # the record expired: counting starts again
    assert agg.aggregate(key, "m9")[1] == "m9"


async def test_an_expired_event_is_created_again_and_failed_creates_retried(kube: KubeClient) -> None:
    """event.go recordToSink: a patch answered NotFound (the event was removed: events have a TTL) creates it again."""
    recorder = EventRecorder(kube)
    ref = ObjectRef("Pod", "v1", "default", "p", "u")
    recorder.record(ref, "Normal", "Scheduled", "assigned")
    await recorder.drain()
    [event] = await _events(kube, "default")
    await kube.delete(f"/api/v1/namespaces/default/events/{event['metadata']['name']}")
    recorder.record(ref, "Normal", "Scheduled", "assigned")
    await recorder.drain()
    [again] = await _events(kube, "default")
    assert again["metadata"]["name"] != event["metadata"]["name"] and again["count"] == 1
    assert recorder.creates == 2 and recorder.errors == 0


async def test_event_writes_are_retried_then_dropped(server: tuple[Script, str], tmp_path: Path) -> None:
    """event.go: maxTriesPerEvent = 12; a transient failure requeues the event (with backoff), a 13th is not made."""
    script, url = server
    script.answers = [text(503, "busy")]
    t = FakeTime()
    async with KubeClient(ConnectionSettings(server=url), qps=None) as kube:
        recorder = EventRecorder(kube, clock=t.clock, rand=lambda: 0.0)
        recorder.record(ObjectRef("Pod", "v1", "default", "p"), "Normal", "Scheduled", "assigned")
        task = asyncio.create_task(recorder.run())  # jitter 0: the retries are due at once, no waiting
        try:
            await eventually(_value(lambda: recorder.dropped == 1), what="the event dropped after 12 tries")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert len(script.seen) == 12 and recorder.dropped == 1 and recorder.idle


def _value(fn: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return fn()

    return probe


async def test_a_condition_discarded_within_the_settle_time_is_never_sent(server: tuple[Script, str]) -> None:
    """A pod's PodScheduled=False (its gang still gathering members) is held `settle` seconds; the gang binds
    meanwhile, the operator discards it, and the pod gets no status write at all for that decision."""
    script, url = server
    script.answers = [json_answer(200, {})]
    t = FakeTime()
    async with KubeClient(ConnectionSettings(server=url), qps=None) as kube:
        writer = PatchWriter(kube, clock=t.clock, settle=0.5)
        condition = {
            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "WaitingForGang"}]}
        }
        writer.patch(f"{PODS}/a/status", condition, content_type=STRATEGIC_MERGE_PATCH)
        writer.patch(f"{PODS}/b/status", condition, content_type=STRATEGIC_MERGE_PATCH)
        t.now += 0.3
        await writer.flush()
        writer.discard(f"{PODS}/a/status", content_type=STRATEGIC_MERGE_PATCH)  # a is being bound
        t.now += 0.3
        await writer.flush()
    assert [r.path for r in script.seen] == [f"{PODS}/b/status"]
