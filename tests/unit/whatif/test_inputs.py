"""whatif/inputs: node inventories, the synthetic topology, the trace format and the openb pod lists.

Oracles: the published inventories' own counts (alibaba/clusterdata README: 4,278 nodes in
cluster-trace-v2026-spot-gpu, 1,213 GPU nodes in openb_node_list_gpu_node.csv; the GPU totals are summed here
independently with the csv module); Kubernetes quantities as apimachinery's resource.Quantity reads them
(k8s.io/apimachinery/pkg/api/resource/quantity_test.go: "500m", "16Gi"); the topology format of the
network-topology-aware PodGroup design (models/topology.py), checked by core/topology/tree.py.
"""

from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.core.topology import TopologyTree
from gangsched.whatif.inputs.files import InputError
from gangsched.whatif.inputs.node_events import failure_events, read_node_events
from gangsched.whatif.inputs.nodes import GPU_MODEL_LABEL, load_nodes, nodes_from_api, nodes_from_topology, shipped
from gangsched.whatif.inputs.openb import openb_jobs
from gangsched.whatif.inputs.synthetic import WorkloadModel
from gangsched.whatif.inputs.topogen import synthetic_topology
from gangsched.whatif.inputs.traces import read_trace, write_trace
from gangsched.whatif.inputs.workload import build_workload, load_inventory
from gangsched.whatif.model import JobSpec, NodeSpec, RoleSpec

ROOT = Path(__file__).resolve().parents[3]
SHARED = next((p for p in (ROOT.parent / "shared" / "traces", Path("/work/shared/traces")) if p.is_dir()), None)
SPOT = "alibaba-2026-spot-gpu-nodes.csv"
OPENB_NODES = "alibaba-2023-openb-gpu-nodes.csv"


def _shared(name: str) -> Path:
    if SHARED is None or not (SHARED / name).exists():
        pytest.skip(f"the public traces directory (../shared/traces/{name}) is not on this machine")
    return SHARED / name


def _gpu_total(path: Path, column: str) -> tuple[int, int]:
    with path.open() as f:
        rows = list(csv.DictReader(f))
    return len(rows), sum(int(r[column]) for r in rows)


@pytest.mark.parametrize("where", ["shipped", "shared"])
def test_spot_inventory_loads_as_published(where: str) -> None:
    path = shipped(SPOT) if where == "shipped" else _shared(SPOT)
    count, gpus = _gpu_total(path, "gpu_capacity_num")
    nodes = load_nodes(path)
    assert (len(nodes), sum(n.gpus for n in nodes)) == (count, gpus) == (4278, 10412)
    first = nodes[0]  # GPU-series-1,4,192,0
    assert (first.name, first.gpus, first.cpu_milli, first.gpu_model) == ("0", 4, 192_000, "GPU-series-1")
    assert first.memory_mib == 192 * 8 * 1024  # derived: 8 GiB per core (docs/whatif.md)
    assert first.labels == {GPU_MODEL_LABEL: "GPU-series-1"}
    assert load_nodes(path, memory_gib_per_cpu=4)[0].memory_mib == 192 * 4 * 1024


@pytest.mark.parametrize("where", ["shipped", "shared"])
def test_openb_inventory_loads_as_published(where: str) -> None:
    path = shipped(OPENB_NODES) if where == "shipped" else _shared(OPENB_NODES)
    nodes = load_nodes(path)
    assert (len(nodes), sum(n.gpus for n in nodes)) == _gpu_total(path, "gpu") == (1213, 6212)
    assert nodes[0] == NodeSpec("openb-node-0000", 64000, 262144, 2, "P100", {GPU_MODEL_LABEL: "P100"})


def test_shipped_copies_equal_the_published_files() -> None:
    for name in (SPOT, OPENB_NODES, "philly-runtime.csv"):
        assert shipped(name).read_bytes() == _shared(name).read_bytes(), name


def test_generic_csv_yaml_json_agree(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text(
        "name,cpu,memory,gpus,gpu_model,labels\na,64,256Gi,8,H800,zone=z1;rack=r1\nb,500m,1536Mi,0,,\n"
    )
    entries = [
        {
            "name": "a",
            "cpu": "64",
            "memory": "256Gi",
            "gpus": 8,
            "gpuModel": "H800",
            "labels": {"zone": "z1", "rack": "r1"},
        },
        {"name": "b", "cpu": "500m", "memory": "1536Mi", "gpus": 0},
    ]
    (tmp_path / "n.json").write_text(json.dumps({"nodes": entries}))
    (tmp_path / "n.yaml").write_text(
        "- {name: a, cpu: '64', memory: 256Gi, gpus: 8, gpuModel: H800, labels: {zone: z1, rack: r1}}\n"
        "- {name: b, cpu: 500m, memory: 1536Mi, gpus: 0}\n"
    )
    expected = (
        NodeSpec("a", 64_000, 262_144, 8, "H800", {"zone": "z1", "rack": "r1", GPU_MODEL_LABEL: "H800"}),
        NodeSpec("b", 500, 1536, 0, None, {}),
    )
    for ext in ("csv", "json", "yaml"):
        assert load_nodes(tmp_path / f"n.{ext}") == expected, ext


@pytest.mark.parametrize(
    ("name", "text", "line", "column", "fragment"),
    [
        ("n.csv", "name,cpu,memory,gpus\na,64,256Gi,8\nb,lots,1Gi,0\n", 3, "cpu", "quantity"),
        ("n.csv", "name,cpu,memory,gpus\na,64,256Gi,8.5\n", 2, "gpus", "whole"),
        ("n.csv", "name,cpu,memory,gpus\na,1,1Gi,1\na,1,1Gi,1\n", 3, "name", "unique"),
        ("n.csv", "name,cpu,memory,gpus,colour\n", 1, "5", "one of the columns"),
        ("n.csv", "name,cpu,memory,gpus\na,1,1Gi\n", 2, "", "must have 4 fields"),
        ("n.csv", "name,cpu,memory,gpus,labels\na,1,1Gi,0,zone\n", 2, "labels", "key=value"),
        (
            "s.csv",
            "gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\nA10,-1,128,1\n",
            3,
            "gpu_capacity_num",
            "from 0 to 1024",
        ),
        ("o.csv", "sn,cpu_milli,memory_mib,gpu,model\nx,64000,abc,2,P100\n", 2, "memory_mib", "integer"),
        (
            "n.yaml",
            "- {name: a, cpu: '1', memory: 1Gi, gpus: 0}\n- {name: b, cpu: '1', memory: 1Gi}\n",
            2,
            "nodes[1].gpus",
            "required",
        ),
        ("n.yaml", "- {name: a, cpu: '1'\n", 2, "1", "YAML"),
        (
            "n.json",
            '[{"name": "a", "cpu": "1", "memory": "1Gi", "gpus": 0, "zone": "x"}]',
            1,
            "nodes[0].zone",
            "one of the keys",
        ),
        ("n.json", '[{"name": "a",}]', 1, "15", "JSON"),
    ],
)
def test_bad_inventory_names_file_line_column(
    tmp_path: Path, name: str, text: str, line: int, column: str, fragment: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_nodes(path)
    assert (err.value.path, err.value.line, err.value.column) == (str(path), line, column)
    assert fragment in err.value.allowed
    assert f"{path}:{line}" in str(err.value)


def test_topology_file_names_the_nodes(tmp_path: Path) -> None:
    doc = [
        {"layer": 2, "name": "spine", "children": ["t1", "t2"]},
        {"layer": 1, "name": "t1", "children": ["n1", "n2"]},
        {"layer": 1, "name": "t2", "children": ["n3"]},
    ]
    (tmp_path / "topology.json").write_text(json.dumps(doc))
    nodes, domains = nodes_from_topology(tmp_path / "topology.json", "cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110")
    assert [n.name for n in nodes] == ["n1", "n2", "n3"]
    assert {(n.cpu_milli, n.memory_mib, n.gpus) for n in nodes} == {(32_000, 262_144, 8)}
    assert TopologyTree.from_domains(domains).node_path("n3") == ("t2", "spine")
    (tmp_path / "bad.json").write_text(json.dumps([{"layer": 0, "name": "t"}]))
    with pytest.raises(InputError, match="layer"):
        nodes_from_topology(tmp_path / "bad.json", "cpu=1")


def test_api_nodes_use_allocatable_and_leave_out_unschedulable() -> None:
    items = [
        {"metadata": {"name": "g1", "labels": {"nvidia.com/gpu.product": "A100"}},
         "status": {"allocatable": {"cpu": "7900m", "memory": "31Gi", "nvidia.com/gpu": "8"}, "capacity": {"cpu": "8"}},
        },
        {"metadata": {"name": "c1"}, "spec": {"unschedulable": True}, "status": {"allocatable": {"cpu": "4"}}},
    ]  # fmt: skip
    nodes, notes = nodes_from_api(items)
    assert [(n.name, n.cpu_milli, n.memory_mib, n.gpus, n.gpu_model) for n in nodes] == [
        ("g1", 7900, 31 * 1024, 8, "A100")
    ]
    assert notes == ["node c1 left out: spec.unschedulable"]


def test_synthetic_topology_units_and_leaves() -> None:
    nodes = [NodeSpec(f"n{i}", 1000, 1024, 8, "H800") for i in range(130)] + [NodeSpec("a1", 1000, 1024, 1, "A10")]
    domains = synthetic_topology(nodes)
    tree = TopologyTree.from_domains(domains)
    assert tree.tiers == 2 and tree.nodes() == frozenset(n.name for n in nodes)
    units = tree.domains_at(1)
    assert len(units) == 17 + 1  # ceil(130 / 8) H800 units, one A10 unit
    assert tree.node_path("n0") == ("unit-h800-0", "leaf-h800-0") and tree.node_path("n64") == (
        "unit-h800-8",
        "leaf-h800-1",
    )
    assert tree.node_path("a1") == ("unit-a10-0", "leaf-a10-0")
    assert synthetic_topology(reversed(nodes)) == domains  # order-independent
    spot = TopologyTree.from_domains(synthetic_topology(load_nodes(shipped(SPOT))))
    assert len(spot.nodes()) == 4278


JOBS = (
    JobSpec("a", 0.0, 100.5, (RoleSpec(4, 4000, 16384, 8),), 4),
    JobSpec(
        "b", 3.25, 60.0, (RoleSpec(1, 500, 300, 0, "launcher"), RoleSpec(8, 8000, 65536, 1, "worker", 6)), 7,
        priority=5, mode="NonStrict", topology="hard", highest_tier=2, gpu_model="A10", wait_seconds=30.0,
    ),
    JobSpec("c", 3.25, 1e6, (RoleSpec(2, 1500, 1, 2),), 1, priority=-3, topology="soft"),
)  # fmt: skip


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_trace_round_trip(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"trace.{ext}"
    assert write_trace(path, reversed(JOBS)) == 3
    assert read_trace(path) == JOBS


def test_trace_defaults_and_role_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,submit,duration,workers,cpu,memory,gpus,role\nj,5,10,2,1,1Gi,1,ps\nj,5,10,3,2,2Gi,1,worker\n"
    )
    (job,) = read_trace(path)
    assert (job.min_member, job.mode, job.topology, job.priority, job.members, job.gpus) == (
        5,
        "Strict",
        "none",
        0,
        5,
        5,
    )


H = "job_id,submit,duration,workers,cpu,memory,gpus"
J = '{"id":"a","submit":0,"duration":5,"workers":1,"cpu":"1","memory":"1Gi","gpus":1'


@pytest.mark.parametrize(
    ("ext", "text", "line", "column", "fragment"),
    [
        ("csv", f"{H}\nj,0,0,1,1,1Gi,1\n", 2, "duration", "> 0"),
        ("csv", f"{H},mode\nj,0,5,1,1,1Gi,1,Lax\n", 2, "mode", "Strict, NonStrict"),
        ("csv", f"{H},min_member\nj,0,5,2,1,1Gi,1,3\n", 2, "min_member", "from 1 to 2"),
        ("csv", f"{H},role\nj,0,5,1,1,1Gi,1,w\nj,1,5,1,1,1Gi,1,x\n", 3, "submit", "must equal"),
        ("csv", f"{H},highest_tier\nj,0,5,1,1,1Gi,1,2\n", 2, "highest_tier", "topology is none"),
        ("jsonl", J + '}\n{"id":"b"', 2, "10", "JSON object"),
        ("jsonl", '{"id":"a","submit":0,"duration":5,"roles":[{"workers":1,"cpu":"x","memory":"1Gi","gpus":1}]}', 1,
         "roles[0].cpu", "quantity"),
        ("jsonl", J.replace('"workers":1', '"workers":true') + "}", 1, "workers", "integer"),
        ("jsonl", J + ',"colour":1}', 1, "colour", "one of"),
        ("jsonl", J + "}\n\n" + J + "}", 3, "id", "unique"),
    ],
)  # fmt: skip
def test_bad_trace_names_file_line_column(
    tmp_path: Path, ext: str, text: str, line: int, column: str, fragment: str
) -> None:
    path = tmp_path / f"t.{ext}"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert (err.value.line, err.value.column) == (line, column), str(err.value)
    assert fragment in err.value.allowed and str(path) in str(err.value)


def test_openb_pods_are_single_pod_jobs(tmp_path: Path) -> None:
    jobs, notes = openb_jobs(_shared("alibaba-2023-openb-pods-default.csv"))
    assert len(jobs) == 8152 - 897 and notes == ["897 pods never scheduled (no scheduled_time) left out"]
    first = next(j for j in jobs if j.id == "openb-pod-0001")  # 6000,12288,1,460,,LS,Running,427061,12902960,427061
    assert (first.submit, first.duration, first.roles) == (
        427061.0,
        12902960.0 - 427061,
        (RoleSpec(1, 6000, 12288, 1),),
    )
    assert all(j.members == 1 and j.min_member == 1 for j in jobs)
    with pytest.raises(InputError, match="creation_time"):
        openb_jobs(_shared("alibaba-2023-openb-pods-multigpu50.csv"))


_NAME = st.text(alphabet=st.sampled_from("abcXYZ019-_.,\"' /é"), min_size=1, max_size=12).filter(
    lambda s: s == s.strip()
)
_ROLE = st.builds(
    RoleSpec,
    count=st.integers(1, 50),
    cpu_milli=st.integers(0, 10**6),
    memory_mib=st.integers(0, 10**7),
    gpus=st.integers(0, 16),
    name=st.just(""),
    min_count=st.none(),
)


@st.composite
def _jobs(draw: st.DrawFn) -> tuple[JobSpec, ...]:
    ids = draw(st.lists(_NAME, min_size=1, max_size=5, unique=True))
    out = []
    for job_id in ids:
        roles = draw(st.lists(_ROLE, min_size=1, max_size=3))
        names = draw(st.lists(_NAME, min_size=len(roles), max_size=len(roles), unique=True))
        if len(roles) > 1:
            roles = [
                RoleSpec(r.count, r.cpu_milli, r.memory_mib, r.gpus, n, draw(st.none() | st.integers(0, r.count)))
                for r, n in zip(roles, names, strict=True)
            ]
        members = sum(r.count for r in roles)
        topology = draw(st.sampled_from(["none", "soft", "hard"]))
        out.append(
            JobSpec(
                job_id,
                draw(st.floats(0, 1e9, allow_nan=False)),
                draw(st.floats(1e-3, 1e9, allow_nan=False)),
                tuple(roles),
                draw(st.integers(1, members)),
                priority=draw(st.integers(-(2**31), 2**31 - 1)),
                mode=draw(st.sampled_from(["Strict", "NonStrict"])),
                topology=topology,  # type: ignore[arg-type]
                highest_tier=None if topology == "none" else draw(st.none() | st.integers(1, 64)),
                gpu_model=draw(st.none() | _NAME),
                wait_seconds=draw(st.none() | st.floats(1e-3, 1e6, allow_nan=False)),
            )
        )
    return tuple(sorted(out, key=lambda job: (job.submit, job.id)))


@settings(max_examples=60, deadline=None)
@given(jobs=_jobs())
def test_trace_round_trip_property(jobs: tuple[JobSpec, ...]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for ext in ("csv", "jsonl"):
            path = Path(tmp) / f"trace.{ext}"
            write_trace(path, jobs)
            assert read_trace(path) == jobs, ext


def test_inventory_entry_point_shipped_topology_and_trace(tmp_path: Path) -> None:
    spot = load_inventory("alibaba-2026")
    assert len(spot.nodes) == 4278 and TopologyTree.from_domains(spot.domains).tiers == 2
    assert load_inventory("alibaba-2023", synthetic=False).domains == ()
    (tmp_path / "topology.json").write_text(json.dumps([{"layer": 1, "name": "t", "children": ["x", "y"]}]))
    topo = load_inventory(str(tmp_path / "topology.json"), node_resources="cpu=8,nvidia.com/gpu=2")
    assert [(n.name, n.cpu_milli, n.gpus) for n in topo.nodes] == [("x", 8000, 2), ("y", 8000, 2)]
    write_trace(tmp_path / "t.jsonl", JOBS)
    replayed = build_workload(topo, trace=tmp_path / "t.jsonl")
    assert replayed.jobs == JOBS and replayed.nodes == topo.nodes and replayed.domains == topo.domains
    small = build_workload(
        topo, model=WorkloadModel(load=0.5, horizon=3600, seed=1, size_pmf=((1, 1.0),), max_job_share=1)
    )
    assert small.jobs and all(job.gpus == 1 for job in small.jobs)


def test_node_events_read_sorted_and_refused_with_the_line_column_and_rule(tmp_path: Path) -> None:
    nodes = [NodeSpec("n0", 1000, 1024, 8), NodeSpec("n1", 1000, 1024, 8)]
    path = tmp_path / "events.csv"
    path.write_text("time,node,event\n50,n1,up\n30,n1,down\n40,n0,down\n")
    events = read_node_events(path, nodes)
    assert [(e.time, e.node, e.up) for e in events] == [(30, "n1", False), (40, "n0", False), (50, "n1", True)]
    for body, column, rule in (
        ("time,node,event\n10,n9,down\n", "node", "must be a node of the inventory"),
        ("time,node,event\n10,n0,crash\n", "event", "must be down or up"),
        ("time,node,event\n-1,n0,down\n", "time", "must be a number from 0"),
        ("time,node,event\n10,n0,up\n", "event", "node n0 is already up"),
        ("time,node,event\n10,n0,down\n20,n0,down\n", "event", "node n0 is already down"),
    ):
        path.write_text(body)
        with pytest.raises(InputError) as err:
            read_node_events(path, nodes)
        assert err.value.column == column and rule in str(err.value), body


def test_failure_events_alternate_per_node_and_are_reproducible() -> None:
    nodes = [NodeSpec(f"n{i}", 1000, 1024, 8) for i in range(50)]
    events = failure_events(nodes, mtbf_hours=24, repair_hours=1, horizon=7 * 86400, seed=3)
    assert events == failure_events(nodes, mtbf_hours=24, repair_hours=1, horizon=7 * 86400, seed=3)
    assert [e.time for e in events] == sorted(e.time for e in events)
    for node in nodes:  # down, up, down, up, ... for each node
        ups = [e.up for e in events if e.node == node.name]
        assert ups == [i % 2 == 1 for i in range(len(ups))]
    for mtbf, repair in ((0.0, 1.0), (float("inf"), 1.0), (24.0, float("nan"))):
        with pytest.raises(ValueError, match="must be finite and > 0"):
            failure_events(nodes, mtbf_hours=mtbf, repair_hours=repair, horizon=86400, seed=0)
    downs = sum(not e.up for e in events)
    assert 50 * 7 * 0.7 < downs < 50 * 7 * 1.3  # about one failure per node-day of up time (7 days, 50 nodes)
