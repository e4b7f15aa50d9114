"""sim/table.py: the Table documents behind `kubectl get` columns."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from gangsched.sim.table import eval_jsonpath, human_duration, to_table
from gangsched.sim.types import ResourceType

NOW = datetime.datetime(2025, 1, 10, 12, 0, 0, tzinfo=datetime.UTC)
FIVE_MIN_AGO = "2025-01-10T11:55:00Z"

POD = ResourceType("", "v1", "Pod", "pods", "pod", True, ("po",), frozenset({"status", "binding", "eviction"}))
NODE = ResourceType("", "v1", "Node", "nodes", "node", False, ("no",))
NAMESPACE = ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",))
EVENT = ResourceType("", "v1", "Event", "events", "event", True, ("ev",))
SECRET = ResourceType("", "v1", "Secret", "secrets", "secret", True)
PODGROUP = ResourceType(
    "scheduling.x-k8s.io",
    "v1alpha1",
    "PodGroup",
    "podgroups",
    "podgroup",
    True,
    ("pg", "pgs"),
    frozenset({"status"}),
    printer_columns=(
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status', "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ),
    is_crd=True,
)
PLAIN_CRD = ResourceType("example.com", "v1", "Thing", "things", "thing", True, is_crd=True)


def _pod(
    name: str = "p", *, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": FIVE_MIN_AGO, **meta},
        "spec": {"containers": [{"name": "main"}], **(spec or {})},
        "status": status or {"phase": "Pending"},
    }


def _cells(rtype: ResourceType, obj: dict[str, Any]) -> list[Any]:
    return list(to_table(rtype, [obj], now=NOW)["rows"][0]["cells"])


def _names(rtype: ResourceType) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in to_table(rtype, [], now=NOW)["columnDefinitions"]]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        pytest.param(-5, "<invalid>", id="future"),
        pytest.param(-1, "0s", id="clock-skew"),
        pytest.param(45, "45s", id="seconds"),
        pytest.param(119, "119s", id="under-two-minutes"),
        pytest.param(5 * 60 + 10, "5m10s", id="minutes-seconds"),
        pytest.param(5 * 60, "5m", id="whole-minutes"),
        pytest.param(42 * 60, "42m", id="minutes"),
        pytest.param(3 * 3600 + 20 * 60, "3h20m", id="hours-minutes"),
        pytest.param(20 * 3600, "20h", id="hours"),
        pytest.param(2 * 86400 + 3 * 3600, "2d3h", id="days-hours"),
        pytest.param(30 * 86400, "30d", id="days"),
        pytest.param(3 * 365 * 86400 + 20 * 86400, "3y20d", id="years-days"),
    ],
)
def test_human_duration_matches_apimachinery(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_pod_columns_and_wide_columns() -> None:
    assert _names(POD) == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]
    wide = to_table(POD, [], now=NOW, wide=True)["columnDefinitions"]
    assert {c["priority"] for c in wide} == {0}


@pytest.mark.parametrize(
    ("pod", "cells"),
    [
        pytest.param(_pod(), ["p", "0/1", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"], id="pending"),
        pytest.param(
            _pod(
                spec={"nodeName": "n1"},
                status={
                    "phase": "Running",
                    "podIP": "10.0.0.7",
                    "containerStatuses": [{"ready": True, "restartCount": 2, "state": {"running": {}}}],
                },
            ),
            ["p", "1/1", "Running", "2", "5m", "10.0.0.7", "n1", "<none>", "<none>"],
            id="running-on-node",
        ),
        pytest.param(
            _pod(status={"phase": "Pending", "nominatedNodeName": "n2"}),
            ["p", "0/1", "Pending", "0", "5m", "<none>", "<none>", "n2", "<none>"],
            id="nominated",
        ),
        pytest.param(
            _pod(
                status={
                    "phase": "Succeeded",
                    "containerStatuses": [{"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                }
            ),
            ["p", "0/1", "Completed", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="completed",
        ),
        pytest.param(
            _pod(
                status={
                    "phase": "Pending",
                    "containerStatuses": [{"state": {"waiting": {"reason": "ContainerCreating"}}}],
                }
            ),
            ["p", "0/1", "ContainerCreating", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="waiting-reason",
        ),
        pytest.param(
            _pod(deletionTimestamp="2025-01-10T11:59:00Z", status={"phase": "Running"}),
            ["p", "0/1", "Terminating", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="terminating",
        ),
        pytest.param(
            _pod(
                spec={"readinessGates": [{"conditionType": "x"}]},
                status={"phase": "Running", "conditions": [{"type": "x", "status": "True"}]},
            ),
            ["p", "0/1", "Running", "0", "5m", "<none>", "<none>", "<none>", "1/1"],
            id="readiness-gates",
        ),
    ],
)
def test_pod_rows(pod: dict[str, Any], cells: list[Any]) -> None:
    assert _cells(POD, pod) == cells


@pytest.mark.parametrize(
    ("node", "cells"),
    [
        pytest.param(
            {
                "metadata": {
                    "name": "n1",
                    "creationTimestamp": FIVE_MIN_AGO,
                    "labels": {"node-role.kubernetes.io/worker": ""},
                },
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "nodeInfo": {"kubeletVersion": "v1.32.0-sim"},
                    "addresses": [{"type": "InternalIP", "address": "10.250.0.1"}],
                },
            },
            [
                "n1",
                "Ready",
                "worker",
                "5m",
                "v1.32.0-sim",
                "10.250.0.1",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>",
            ],
            id="ready-worker",
        ),
        pytest.param(
            {
                "metadata": {"name": "n2", "creationTimestamp": FIVE_MIN_AGO},
                "spec": {"unschedulable": True},
                "status": {"conditions": [{"type": "Ready", "status": "False"}]},
            },
            [
                "n2",
                "NotReady,SchedulingDisabled",
                "<none>",
                "5m",
                "",
                "<none>",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>",
            ],
            id="not-ready-cordoned",
        ),
    ],
)
def test_node_rows(node: dict[str, Any], cells: list[Any]) -> None:
    assert [n for n, p in _names(NODE) if p == 0] == ["Name", "Status", "Roles", "Age", "Version"]
    assert _cells(NODE, node) == cells


def test_event_and_namespace_and_default_columns() -> None:
    assert [n for n, _ in _names(EVENT)] == ["Last Seen", "Type", "Reason", "Object", "Message"]
    event = {
        "metadata": {"name": "e"},
        "lastTimestamp": FIVE_MIN_AGO,
        "type": "Warning",
        "reason": "FailedScheduling",
        "involvedObject": {"kind": "Pod", "name": "p"},
        "message": "0/4 nodes are available",
    }
    assert _cells(EVENT, event) == ["5m", "Warning", "FailedScheduling", "pod/p", "0/4 nodes are available"]
    assert [n for n, _ in _names(NAMESPACE)] == ["Name", "Status", "Age"]
    assert _cells(NAMESPACE, {"metadata": {"name": "default", "creationTimestamp": FIVE_MIN_AGO}}) == [
        "default",
        "Active",
        "5m",
    ]
    assert [n for n, _ in _names(SECRET)] == ["Name", "Age"]


def test_crd_printer_columns_with_missing_values_sent_as_null() -> None:
    assert _names(PODGROUP) == [("Name", 0), ("Phase", 0), ("MinMember", 0), ("Ready", 1), ("Age", 0)]
    table = to_table(
        PODGROUP,
        [
            {
                "metadata": {"name": "g1", "creationTimestamp": "2025-01-08T09:00:00Z"},
                "spec": {"minMember": 4},
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}],
                },
            },
            {"metadata": {"name": "g2", "creationTimestamp": FIVE_MIN_AGO}, "spec": {"minMember": 2}},
        ],
        now=NOW,
    )
    assert [r["cells"] for r in table["rows"]] == [["g1", "Running", 4, "True", "2d3h"], ["g2", None, 2, None, "5m"]]
    assert table["columnDefinitions"][-1]["type"] == "date"


def test_crd_without_printer_columns_gets_age() -> None:
    assert _names(PLAIN_CRD) == [("Name", 0), ("Age", 0)]
    assert _cells(PLAIN_CRD, {"metadata": {"name": "t", "creationTimestamp": FIVE_MIN_AGO}}) == ["t", "5m"]


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        pytest.param(
            "Metadata",
            {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "p", "namespace": "default", "creationTimestamp": FIVE_MIN_AGO},
            },
            id="metadata",
        ),
        pytest.param("Object", _pod(), id="object"),
        pytest.param("None", None, id="none"),
    ],
)
def test_include_object(include: str, expected: Any) -> None:
    row = to_table(POD, [_pod()], now=NOW, include_object=include)["rows"][0]
    assert row.get("object") == expected


def test_bad_include_object_names_the_parameter() -> None:
    with pytest.raises(ValueError, match='includeObject: invalid value "All"'):
        to_table(POD, [], now=NOW, include_object="All")


def test_table_envelope() -> None:
    table = to_table(POD, [_pod("a"), _pod("b")], now=NOW)
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [r["cells"][0] for r in table["rows"]] == ["a", "b"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(".spec.minMember", [3], id="dotted"),
        pytest.param("spec.minMember", [3], id="no-leading-dot"),
        pytest.param("{.spec.minMember}", [3], id="braces"),
        pytest.param(".spec.items[1].n", ["b"], id="index"),
        pytest.param(".spec.items[*].n", ["a", "b"], id="wildcard"),
        pytest.param('.status.conditions[?(@.type=="Ready")].status', ["True"], id="filter"),
        pytest.param(".spec.absent", [], id="missing"),
        pytest.param(".spec.items[9].n", [], id="index-out-of-range"),
    ],
)
def test_jsonpath_subset(path: str, expected: list[Any]) -> None:
    obj = {
        "spec": {"minMember": 3, "items": [{"n": "a"}, {"n": "b"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert eval_jsonpath(obj, path) == expected
