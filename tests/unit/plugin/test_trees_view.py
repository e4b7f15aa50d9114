"""`kubectl gang` shows gang trees (issue 25 item 4): one line per node, indented per level, each with its minimum
and its counts; the objects built as the Kubernetes docs (kubernetes.io/docs/concepts/workloads/
compositepodgroup-api/) and Grove (ai-dynamo/grove scheduler/api/core/v1alpha1/podgang.go) build them."""

from __future__ import annotations

from typing import Any

from gangsched.plugin.trees import render_trees, tree_nodes, trees_of, trees_record
from tests.unit.state.test_trees_state import cpg, pg, podgang


def _pod(name: str, group: str | None = None, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "gangsched"}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_three_levels_indented_with_minimum_and_counts() -> None:
    composites = [cpg("root", 2), cpg("mid", 1, "root")]
    native = [pg("a", 2, "mid"), pg("c", 1, "root"), pg("alone", 1, None)]
    pods = [_pod("a-0", "a", "n1"), _pod("a-1", "a", "n2"), _pod("c-0", "c")]
    trees = trees_of(composites, native, [], pods)
    text = render_trees(trees, [])
    lines = text.splitlines()
    assert lines[0] == "tree (CompositePodGroup)"
    assert lines[1].startswith("  composite ns/root  minGroupCount 2  groups 1/2 ready  not ready")
    assert lines[2] == "    podgroup ns/c  minCount 1  pods 0/1 bound  not ready"  # (children in name order)
    assert lines[3] == "      - c-0  node=-  Pending"
    assert lines[4] == "    composite ns/mid  minGroupCount 1  groups 1/1 ready  ready"
    assert lines[5] == "      podgroup ns/a  minCount 2  pods 2/2 bound  ready"
    assert lines[6] == "        - a-0  node=n1  Running"
    assert "alone" not in text  # a PodGroup in no tree is in the gang list, not here
    assert "mid" in tree_nodes(trees) and "ns/root" in tree_nodes(trees)


def test_missing_parent_is_shown_as_such() -> None:
    text = render_trees(trees_of([cpg("mid", 1, "gone")], [], [], []), [])
    assert "composite ns/mid" in text and "(parent ns/gone not found)" in text


def test_podgang_tree_and_record() -> None:
    pods = [_pod("router-0", node="n0")] + [_pod(f"decode-{i}", node="n1" if i < 3 else None) for i in range(4)]
    trees = trees_of([], [], [podgang()], pods)
    text = render_trees(trees, ["serve-0"])
    assert "  podgang ns/serve-0  minGroupCount 2  groups 1/2 ready  not ready" in text
    assert "    podgroup ns/serve-0-decode  minCount 4  pods 3/4 bound  not ready" in text
    record = trees_record(trees, [])
    assert record[0]["source"] == "PodGang" and record[0]["root"]["children"][1]["bound"] == 3
    assert render_trees(trees, ["other"]) == ""
