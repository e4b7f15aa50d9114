"""sim/cluster.py (node manifests, --node-resources, topology files) and the kubelet's status documents."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.sim.cluster import (
    node_manifest,
    node_names_from_topology,
    parse_node_resources,
    read_topology,
    topology_labels,
)
from gangsched.sim.kubelet import pod_ip, running_status, succeeded_status

SEED_TOPOLOGY: list[dict[str, Any]] = [
    {"layer": 2, "name": "s2", "children": ["s0", "s1"]},
    {"layer": 1, "name": "s0", "parents": ["s2"], "children": ["node0", "node1"]},
    {"layer": 1, "name": "s1", "parents": ["s2"], "children": ["node2", "node3"]},
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110",
            {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"},
            id="full",
        ),
        pytest.param(" cpu = 500m , ", {"cpu": "500m"}, id="spaces-and-trailing-comma"),
        pytest.param("", {}, id="empty"),
    ],
)
def test_parse_node_resources(text: str, expected: dict[str, str]) -> None:
    assert parse_node_resources(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("cpu", 'invalid value "cpu"', id="no-equals"),
        pytest.param("=4", 'invalid value "=4"', id="no-name"),
        pytest.param("cpu=", 'invalid value "cpu="', id="no-quantity"),
        pytest.param("cpu=abc", '--node-resources cpu: invalid value "abc"', id="bad-quantity"),
        pytest.param("cpu=-1", '--node-resources cpu: invalid value "-1"', id="negative"),
        pytest.param("cpu=1,cpu=2", "given twice", id="duplicate"),
    ],
)
def test_parse_node_resources_names_the_bad_item(text: str, fragment: str) -> None:
    with pytest.raises(InvalidField, match="--node-resources") as info:
        parse_node_resources(text)
    assert fragment in str(info.value)


def test_node_manifest() -> None:
    now = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    node = node_manifest(
        "n1",
        resources={"cpu": "32", "nvidia.com/gpu": "8"},
        labels={"zone": "a"},
        taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        address="10.1.2.3",
        now=now,
    )
    status = node["status"]
    assert status["capacity"] == status["allocatable"] == {"cpu": "32", "nvidia.com/gpu": "8", "pods": "110"}
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    assert status["nodeInfo"]["kubeletVersion"] == "v1.37.0-sim"  # the emulator is a 1.37 cluster
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1" and node["metadata"]["labels"]["zone"] == "a"
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    assert {"type": "InternalIP", "address": "10.1.2.3"} in status["addresses"]
    assert status["conditions"][0]["lastHeartbeatTime"] == "2025-01-01T00:00:00Z"


def test_topology_from_a_file_and_from_a_list(tmp_path: Path) -> None:
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(SEED_TOPOLOGY))
    assert node_names_from_topology(str(path)) == ["node0", "node1", "node2", "node3"]
    assert node_names_from_topology(SEED_TOPOLOGY) == ["node0", "node1", "node2", "node3"]
    assert topology_labels(SEED_TOPOLOGY)["node2"] == {
        "topology.gangsched.io/tier-1": "s1",
        "topology.gangsched.io/tier-2": "s2",
    }


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        pytest.param({"layer": 1}, "must be a JSON list", id="not-a-list"),
        pytest.param([{"layer": "one", "name": "s0", "children": []}], "topology[0].layer", id="bad-layer"),
        pytest.param([{"layer": 1, "children": ["n"]}], "topology[0].name", id="no-name"),
        pytest.param([{"layer": 1, "name": "s0", "children": "n0"}], "topology[0].children", id="children-not-a-list"),
        pytest.param([{"layer": 2, "name": "s2", "children": ["s0"]}], "layer-1 entries", id="no-nodes"),
    ],
)
def test_bad_topology_names_the_entry(data: Any, fragment: str) -> None:
    with pytest.raises(InvalidField) as info:
        node_names_from_topology(data)
    assert fragment in str(info.value)


def test_unreadable_or_non_json_topology_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidField, match=r"--topology.*readable"):
        read_topology(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(InvalidField, match=r"--topology.*must be JSON"):
        read_topology(str(bad))


def test_pod_ips_are_unique() -> None:
    ips = {pod_ip(i) for i in range(1, 70_000)}
    assert len(ips) == 69_999


def test_kubelet_status_documents() -> None:
    now = datetime.datetime(2025, 1, 1, 12, tzinfo=datetime.UTC)
    pod = {
        "metadata": {"name": "p", "namespace": "d"},
        "spec": {"nodeName": "n", "containers": [{"name": "a", "image": "busybox"}, {"name": "b"}]},
    }
    running = running_status(pod, pod_ip="10.128.0.1", host_ip="10.250.0.1", now=now)
    assert (
        running["phase"] == "Running"
        and running["podIP"] == "10.128.0.1"
        and running["startTime"] == "2025-01-01T12:00:00Z"
    )
    assert {c["type"] for c in running["conditions"] if c["status"] == "True"} >= {
        "Ready",
        "ContainersReady",
        "Initialized",
        "PodScheduled",
    }
    assert [(c["name"], c["ready"], list(c["state"])) for c in running["containerStatuses"]] == [
        ("a", True, ["running"]),
        ("b", True, ["running"]),
    ]
    done = succeeded_status({**pod, "status": running}, now=now + datetime.timedelta(seconds=30))
    assert done["phase"] == "Succeeded"
    assert {c["type"]: c["status"] for c in done["conditions"]}["Ready"] == "False"
    terminated = [c["state"]["terminated"] for c in done["containerStatuses"]]
    assert [(t["exitCode"], t["reason"], t["finishedAt"]) for t in terminated] == [
        (0, "Completed", "2025-01-01T12:00:30Z")
    ] * 2
