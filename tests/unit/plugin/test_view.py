"""plugin/view.py: what `kubectl gang` computes from API objects (the e2e test runs it through the real kubectl).

Oracles: the gang name sources and Koordinator's `gang.scheduling.koordinator.sh/groups` annotation (a JSON list of
"namespace/name", koordinator apis/extension/coscheduling.go AnnotationGangGroups) are the operator's own
(models/gang.py); the PodScheduled condition with reason SchedulingGated is the apiserver's for gated pods
(pkg/registry/core/pod/strategy.go, KEP-3521).
"""

from __future__ import annotations

from typing import Any

from gangsched.plugin.view import explain_pod, gangs_of, render_top, render_tree, unmatched

KOORD = "gang.scheduling.koordinator.sh/"


def pod(
    name: str, *, annotations: dict[str, str] | None = None, node: str | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"}
    if annotations:
        meta["annotations"] = annotations
    body: dict[str, Any] = {"schedulerName": "gangsched", **spec}
    if node:
        body["nodeName"] = node
    return {"metadata": meta, "spec": body, "status": {"phase": "Running" if node else "Pending"}}


def podgroup(name: str, phase: str, start: str, message: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": 2},
        "status": {
            "phase": phase,
            "scheduleStartTime": start,
            "conditions": [{"type": "Scheduled", "status": "False", "reason": "Waiting", "message": message}],
        },
    }


def test_annotation_gangs_and_their_koordinator_group_are_found_without_podgroups() -> None:
    groups = '["ns/a", "ns/b"]'
    pods = [
        pod("a-0", annotations={KOORD + "name": "a", KOORD + "min-available": "1", KOORD + "groups": groups}),
        pod("b-0", annotations={KOORD + "name": "b", KOORD + "min-available": "1", KOORD + "groups": groups}),
        pod("alone"),
    ]
    gangs = gangs_of([], pods)
    assert sorted(gangs) == ["ns/a", "ns/b"]
    assert gangs["ns/a"].group == ("ns/a", "ns/b") and gangs["ns/a"].min_member == 1
    tree = render_tree(gangs, ["a"], {})
    assert tree.splitlines()[0] == "group [ns/a, ns/b]"
    assert tree.count("(no PodGroup)") == 2 and "- b-0  node=-  Pending" in tree


def test_top_lists_waiting_gangs_longest_first_with_their_blocker() -> None:
    gangs = gangs_of(
        [
            podgroup("new", "Pending", "2026-01-01T00:59:00Z", "1 of 2 members present"),
            podgroup("old", "Scheduling", "2026-01-01T00:00:00Z", "needs 16 nvidia.com/gpu"),
            podgroup("done", "Running", "2026-01-01T00:00:00Z", ""),
        ],
        [pod("old-0", annotations={KOORD + "name": "old"}, node="n1")],
    )
    now = 1767229200.0  # 2026-01-01T01:00:00Z
    lines = render_top(gangs, now).splitlines()
    assert [line.split()[0] for line in lines] == ["GANG", "ns/old", "ns/new"]
    assert lines[1].split()[1:4] == ["Scheduling", "1/2", "60m"] and lines[1].endswith("needs 16 nvidia.com/gpu")
    assert lines[2].split()[3] == "60s"
    assert render_top(gangs_of([], []), now) == "No waiting gangs."


def test_why_names_gates_condition_and_recent_warnings() -> None:
    gated = pod("g-0", annotations={KOORD + "name": "g", KOORD + "min-available": "2"}, schedulingGates=[{"name": "q"}])
    gated["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": "gated"}
    ]
    gangs = gangs_of([], [gated])
    events = [
        {"type": "Normal", "reason": "Scheduled", "message": "ok", "involvedObject": {"kind": "Pod", "name": "g-0"}},
        {"type": "Warning", "reason": "Unsupported", "message": "x", "involvedObject": {"kind": "Pod", "name": "g-0"}},
    ]
    text = explain_pod(gated, gangs["ns/g"], events)
    assert text.splitlines() == [
        "pod ns/g-0 is pending (schedulerName gangsched).",
        "scheduling gates: q (never scheduled until they are removed)",
        "PodScheduled=False SchedulingGated: gated",
        "gang ns/g: (no status); no PodGroup yet",
        "event Pod/g-0 Unsupported: x",
    ]
    assert (
        explain_pod(pod("b", node="n0"), None, []) == "pod ns/b is bound to n0 (Running).\ngang: none (scheduled alone)"
    )


def test_top_cuts_blocked_by_to_the_width_unless_told_not_to() -> None:
    long = "needs 16 nvidia.com/gpu in one unit; " * 10
    gangs = gangs_of([podgroup("old", "Scheduling", "2026-01-01T00:00:00Z", long)], [])
    now = 1767229200.0
    cut = render_top(gangs, now).splitlines()
    assert all(len(line) <= 120 for line in cut) and cut[1].endswith("...") and long[:30] in cut[1], cut
    assert render_top(gangs, now, None).splitlines()[1].endswith(long), "no width: the whole message"
    narrow = render_top(gangs, now, 40).splitlines()[1]
    assert narrow.endswith(" needs 16 nvidia.c..."), narrow  # MIN_BLOCKER (20) characters kept, however narrow


def test_unmatched_names_are_the_ones_no_gang_has() -> None:
    gangs = gangs_of([podgroup("a", "Pending", "2026-01-01T00:00:00Z", "")], [])
    assert unmatched(gangs, ["a", "ns/a", "b", "other/a"]) == ["b", "other/a"]
