"""Event validation, ported from pkg/apis/core/validation/events_test.go (Kubernetes v1.32).

TestValidateEventForCoreV1Events and TestValidateEventForNewV1beta1Events call ValidateEventCreate
(pkg/apis/core/validation/events.go) on core Events; here the same tables go through the emulator's port of it
(gangsched.sim.validation.rules.validate_event), and a few cases through HTTP.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from gangsched.sim.apiserver import ApiServer
from gangsched.sim.validation.rules import validate_event

SOME_TIME = "2017-09-19T13:49:16.000000Z"  # metav1.MicroTime{Time: time.Unix(1505828956, 0)}


def _core(name: str, ns: str, involved: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "involvedObject": involved, **extra}


# TestValidateEventForCoreV1Events: (event, valid)
CORE_V1_TABLE = [
    (_core("test1", "foo", {"namespace": "bar", "kind": "Pod"}), False),
    (_core("test2", "aoeu-_-aoeu", {"namespace": "aoeu-_-aoeu", "kind": "Pod"}), False),
    (_core("test3", "default", {"apiVersion": "v1", "kind": "Node"}), True),
    (_core("test4", "default", {"apiVersion": "v1", "kind": "Namespace"}), True),
    (_core("test5", "default", {"apiVersion": "apps/v1", "kind": "NoKind", "namespace": "default"}), True),
    (_core("test6", "default", {"apiVersion": "batch/v1", "kind": "Job", "namespace": "foo"}), False),
    (_core("test7", "default", {"apiVersion": "batch/v1", "kind": "Job", "namespace": "default"}), True),
    (_core("test8", "default", {"apiVersion": "other/v1beta1", "kind": "Job", "namespace": "foo"}), False),
    (_core("test9", "foo", {"apiVersion": "other/v1beta1", "kind": "Job", "namespace": "foo"}), True),
    (_core("test10", "default", {"apiVersion": "batch", "kind": "Job", "namespace": "foo"}), False),
    (_core("test11", "foo", {"apiVersion": "batch/v1", "kind": "Job", "namespace": "foo"}), True),
    (_core("test12", "foo", {"apiVersion": "other/v1beta1", "kind": "FooBar", "namespace": "bar"}), False),
    (_core("test13", "", {"apiVersion": "other/v1beta1", "kind": "FooBar", "namespace": "bar"}), False),
    (_core("test14", "foo", {"apiVersion": "other/v1beta1", "kind": "FooBar", "namespace": ""}), False),
]


@pytest.mark.parametrize(("event", "valid"), CORE_V1_TABLE, ids=[e["metadata"]["name"] for e, _ in CORE_V1_TABLE])
def test_core_v1_events_table(event: dict[str, Any], valid: bool) -> None:
    """TestValidateEventForCoreV1Events (legacyValidateEvent: namespace agreement, DNS-1123 namespace)."""
    problems = validate_event(event, namespace=event["metadata"]["namespace"], new_api=False)
    assert (not problems) is valid, problems


NODE = {"apiVersion": "v1", "kind": "Node"}
LONG_INSTANCE = "node-xyz" + "z" * 140
LONG_MESSAGE = "z" * 1100

# TestValidateEventForNewV1beta1Events: (msg, event, valid); v1beta1 is legacy-only, like core/v1
NEW_V1BETA1_TABLE = [
    (
        "Old Event with EventTime should trigger new validation and fail",
        _core("test", "default", NODE, eventTime=SOME_TIME),
        False,
    ),
    (
        "Valid new Event",
        _core(
            "test",
            "kube-system",
            NODE,
            eventTime=SOME_TIME,
            reportingComponent="k8s.io/my-controller",
            reportingInstance="node-xyz",
            action="Do",
            reason="Because",
        ),
        True,
    ),
    (
        "not qualified reportingController",
        _core(
            "test",
            "kube-system",
            NODE,
            eventTime=SOME_TIME,
            reportingComponent="my-contr@ller",
            reportingInstance="node-xyz",
            action="Do",
            reason="Because",
        ),
        False,
    ),
    (
        "too long reporting instance",
        _core(
            "test",
            "kube-system",
            NODE,
            eventTime=SOME_TIME,
            reportingComponent="k8s.io/my-controller",
            reportingInstance=LONG_INSTANCE,
            action="Do",
            reason="Because",
        ),
        False,
    ),
    (
        "missing reason",
        _core(
            "test",
            "kube-system",
            NODE,
            eventTime=SOME_TIME,
            reportingComponent="k8s.io/my-controller",
            reportingInstance="node-xyz",
            action="Do",
        ),
        False,
    ),
    (
        "missing action",
        _core(
            "test",
            "kube-system",
            NODE,
            eventTime=SOME_TIME,
            reportingComponent="k8s.io/my-controller",
            reportingInstance="node-xyz",
            reason="Because",
        ),
        False,
    ),
    (
        "missing namespace",
        _core(
            "test",
            "",
            NODE,
            eventTime=SOME_TIME,
            reportingComponent="k8s.io/my-controller",
            reportingInstance="node-xyz",
            reason="Because",
        ),
        False,
    ),
    (
        "too long message",
        _core(
            "test",
            "",
            NODE,
            eventTime=SOME_TIME,
            reportingComponent="k8s.io/my-controller",
            reportingInstance="node-xyz",
            action="Do",
            reason="Because",
            message=LONG_MESSAGE,
        ),
        False,
    ),
]


@pytest.mark.parametrize(("msg", "event", "valid"), NEW_V1BETA1_TABLE, ids=[m for m, _, _ in NEW_V1BETA1_TABLE])
def test_new_v1beta1_events_table(msg: str, event: dict[str, Any], valid: bool) -> None:
    """TestValidateEventForNewV1beta1Events (an Event with eventTime: reporting fields, lengths)."""
    problems = validate_event(event, namespace=event["metadata"]["namespace"], new_api=False)
    assert (not problems) is valid, (msg, problems)


def _events_v1(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "kube-system"},
        "regarding": NODE,
        "eventTime": SOME_TIME,
        "reportingController": "k8s.io/my-controller",
        "reportingInstance": "node-xyz",
        "action": "Do",
        "reason": "Because",
        "type": "Normal",
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not None}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        pytest.param({}, None, id="valid-new-event"),
        pytest.param({"type": "Bogus"}, 'type: Invalid value: "": has invalid value: Bogus', id="bogus-type"),
        pytest.param({"eventTime": None}, "eventTime: Required value", id="missing-eventTime"),
        pytest.param({"deprecatedCount": 3}, 'count: Invalid value: "": needs to be unset', id="count-set"),
        pytest.param(
            {"note": LONG_MESSAGE}, 'note: Invalid value: "": can have at most 1024 characters', id="long-note"
        ),
        pytest.param({"series": {"count": 1, "lastObservedTime": SOME_TIME}}, "series.count", id="series-count"),
    ],
)
async def test_events_k8s_io_v1_create(apiserver: ApiServer, overrides: dict[str, Any], expected: str | None) -> None:
    """TestValidateEventCreateForNewV1Events: created through events.k8s.io/v1, the strict rules apply
    (eventTime required, type Normal|Warning, deprecated fields unset, series count >= 2)."""
    url = f"{apiserver.url}/apis/events.k8s.io/v1/namespaces/kube-system/events"
    async with aiohttp.ClientSession() as session, session.post(url, json=_events_v1(**overrides)) as resp:
        body = await resp.json()
    if expected is None:
        assert resp.status == 201, body
    else:
        assert resp.status == 422, body
        assert body["reason"] == "Invalid" and expected in body["message"]


async def test_core_v1_event_namespace_mismatch_is_422(apiserver: ApiServer) -> None:
    """legacyValidateEvent: a core/v1 Event about a namespaced object lives in that object's namespace."""
    url = f"{apiserver.url}/api/v1/namespaces/default/events"
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "namespace": "kube-system", "name": "p"},
        "reason": "R",
        "type": "Normal",
    }
    async with aiohttp.ClientSession() as session, session.post(url, json=event) as resp:
        body = await resp.json()
    assert resp.status == 422
    assert 'involvedObject.namespace: Invalid value: "kube-system": does not match event.namespace' in body["message"]


async def test_core_v1_event_any_type_is_accepted(apiserver: ApiServer) -> None:
    """ValidateEventCreate returns after legacyValidateEvent for core/v1: `type` is not checked there."""
    url = f"{apiserver.url}/api/v1/namespaces/default/events"
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node", "name": "n"}, "reason": "R", "type": "Bogus"}
    async with aiohttp.ClientSession() as session, session.post(url, json=event) as resp:
        assert resp.status == 201, await resp.text()
