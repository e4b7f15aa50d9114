"""Node inventories for the what-if simulator: files, topology files, a live cluster, the public Alibaba lists.

Contract (`NodeSpec`s in file order; files.InputError naming the file, line, column, value and what is allowed;
names unique):
- `load_nodes(path, *, memory_gib_per_cpu=SPOT_MEMORY_GIB_PER_CPU)`: CSV `name,cpu,memory,gpus[,gpu_model,labels]`,
  YAML/JSON objects of the same keys, the Alibaba 2026 spot GPU list (memory DERIVED: `memory_gib_per_cpu` GiB per
  core) or the Alibaba 2023 openb list, told by extension and header. A GPU model becomes label GPU_MODEL_LABEL.
- `nodes_from_topology(path, node_resources)`: the nodes a topology file names, each with `node_resources`.
- `nodes_from_api(items)`, `live_nodes(kubeconfig)`: a cluster's schedulable nodes (the others named in notes).
- `shipped(name)`: the path of a file shipped in whatif/data. More: docs/modules.md#whatifinputsnodespy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from gangsched.core import Domain, InvalidField, canonical
from gangsched.models.topology import parse_topology
from gangsched.whatif.inputs.files import InputError, csv_rows, number, read_text, structured_items
from gangsched.whatif.model import NodeSpec

GPU_MODEL_LABEL: Final = "gangsched.io/gpu-model"
GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"  # NVIDIA GPU feature discovery's label
GPU: Final = "nvidia.com/gpu"
SPOT_MEMORY_GIB_PER_CPU: Final = 8
MAX_CPU_MILLI: Final = 100_000_000  # 100,000 cores
MAX_MEMORY_MIB: Final = 1 << 30  # 1 PiB
MAX_GPUS: Final = 1024
MAX_NAME: Final = 253

SPOT_COLUMNS: Final = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
OPENB_COLUMNS: Final = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
GENERIC_COLUMNS: Final = ("name", "cpu", "memory", "gpus")
GENERIC_OPTIONAL: Final = ("gpu_model", "labels")
DATA_DIR: Final = Path(__file__).resolve().parent.parent / "data"


def shipped(name: str) -> Path:
    """A file shipped in whatif/data (e.g. "alibaba-2026-spot-gpu-nodes.csv")."""
    return DATA_DIR / name


def _node(
    name: str, cpu_milli: int, memory_mib: int, gpus: int, model: str | None, labels: Mapping[str, str]
) -> NodeSpec:
    merged = dict(labels)
    if model:
        merged[GPU_MODEL_LABEL] = model
    return NodeSpec(name, cpu_milli, memory_mib, gpus, model or None, merged)


def _name(text: Any, *, path: str | Path, line: int, column: str) -> str:
    if not isinstance(text, str) or not text or len(text) > MAX_NAME or text != text.strip():
        raise InputError(path, line, column, text, f"must be a non-empty name of at most {MAX_NAME} characters")
    return text


def _quantity(resource: str, value: Any, *, path: str | Path, line: int, column: str) -> int:
    """cpu -> millicores, memory -> MiB (rounded up), anything else -> a count."""
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise InputError(path, line, column, value, "must be a Kubernetes quantity such as 64, 500m or 256Gi")
    try:
        amount = canonical(resource, value, field=column)
    except InvalidField as exc:
        raise InputError(path, line, column, value, exc.allowed) from None
    if resource == "memory":
        amount = -(-amount // (1 << 20))
    limit = {"cpu": MAX_CPU_MILLI, "memory": MAX_MEMORY_MIB}.get(resource, MAX_GPUS)
    if amount > limit:
        raise InputError(
            path,
            line,
            column,
            value,
            f"must be at most {limit} ({_UNITS.get(resource, 'devices')})",
        )
    return amount


_UNITS: Final = {"cpu": "millicores", "memory": "MiB"}


def _labels(text: str, *, path: str | Path, line: int) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or len(key) > MAX_NAME or len(value) > 63:
            raise InputError(
                path,
                line,
                "labels",
                item,
                "must be key=value pairs separated by ';' (keys of at most 253, values of at most 63 characters)",
            )
        labels[key.strip()] = value.strip()
    return labels


def _unique(nodes: list[NodeSpec], lines: list[int], path: str | Path, column: str) -> tuple[NodeSpec, ...]:
    seen: set[str] = set()
    for node, line in zip(nodes, lines, strict=True):
        if node.name in seen:
            raise InputError(
                path, line, column, node.name, "must be unique: this node name appears earlier in the file"
            )
        seen.add(node.name)
    return tuple(nodes)


def _spot(path: str | Path, text: str, memory_gib_per_cpu: float) -> tuple[NodeSpec, ...]:
    nodes, lines = [], []
    for line, row in csv_rows(path, required=SPOT_COLUMNS, text=text):
        gpus = int(
            number(
                row["gpu_capacity_num"],
                path=path,
                line=line,
                column="gpu_capacity_num",
                kind="int",
                minimum=0,
                maximum=MAX_GPUS,
            )
        )
        cpus = int(
            number(
                row["cpu_num"],
                path=path,
                line=line,
                column="cpu_num",
                kind="int",
                minimum=1,
                maximum=MAX_CPU_MILLI // 1000,
            )
        )
        name = _name(row["node_name"], path=path, line=line, column="node_name")
        nodes.append(_node(name, cpus * 1000, int(cpus * memory_gib_per_cpu * 1024), gpus, row["gpu_model"], {}))
        lines.append(line)
    return _unique(nodes, lines, path, "node_name")


def _openb(path: str | Path, text: str) -> tuple[NodeSpec, ...]:
    nodes, lines = [], []
    for line, row in csv_rows(path, required=OPENB_COLUMNS, text=text):
        cpu = int(
            number(
                row["cpu_milli"], path=path, line=line, column="cpu_milli", kind="int", minimum=1, maximum=MAX_CPU_MILLI
            )
        )
        mem = int(
            number(
                row["memory_mib"],
                path=path,
                line=line,
                column="memory_mib",
                kind="int",
                minimum=1,
                maximum=MAX_MEMORY_MIB,
            )
        )
        gpus = int(number(row["gpu"], path=path, line=line, column="gpu", kind="int", minimum=0, maximum=MAX_GPUS))
        nodes.append(_node(_name(row["sn"], path=path, line=line, column="sn"), cpu, mem, gpus, row["model"], {}))
        lines.append(line)
    return _unique(nodes, lines, path, "sn")


def _generic_csv(path: str | Path, text: str) -> tuple[NodeSpec, ...]:
    nodes, lines = [], []
    for line, row in csv_rows(path, required=GENERIC_COLUMNS, optional=GENERIC_OPTIONAL, text=text):
        nodes.append(
            _node(
                _name(row["name"], path=path, line=line, column="name"),
                _quantity("cpu", row["cpu"], path=path, line=line, column="cpu"),
                _quantity("memory", row["memory"], path=path, line=line, column="memory"),
                _quantity(GPU, row["gpus"], path=path, line=line, column="gpus"),
                row.get("gpu_model") or None,
                _labels(row.get("labels", ""), path=path, line=line),
            )
        )
        lines.append(line)
    return _unique(nodes, lines, path, "name")


_KEYS: Final = ("name", "cpu", "memory", "gpus", "gpuModel", "labels")


def _structured(path: str | Path) -> tuple[NodeSpec, ...]:
    nodes, lines = [], []
    for i, (line, entry) in enumerate(structured_items(path, key="nodes")):
        at = f"nodes[{i}]"
        if not isinstance(entry, dict):
            raise InputError(path, line, at, entry, f"must be an object with the keys {', '.join(_KEYS)}")
        for key in entry:
            if key not in _KEYS:
                raise InputError(path, line, f"{at}.{key}", key, f"must be one of the keys {', '.join(_KEYS)}")
        for key in GENERIC_COLUMNS:
            if key not in entry:
                raise InputError(path, line, f"{at}.{key}", None, "is required")
        labels = entry.get("labels") or {}
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise InputError(path, line, f"{at}.labels", labels, "must be a mapping of strings to strings")
        model = entry.get("gpuModel")
        if model is not None and not isinstance(model, str):
            raise InputError(path, line, f"{at}.gpuModel", model, "must be a string")
        name = _name(entry["name"], path=path, line=line, column=f"{at}.name")
        cpu = _quantity("cpu", entry["cpu"], path=path, line=line, column=f"{at}.cpu")
        mem = _quantity("memory", entry["memory"], path=path, line=line, column=f"{at}.memory")
        gpus = _quantity(GPU, entry["gpus"], path=path, line=line, column=f"{at}.gpus")
        nodes.append(_node(name, cpu, mem, gpus, model, labels))
        lines.append(line)
    return _unique(nodes, lines, path, "name")


def load_nodes(path: str | Path, *, memory_gib_per_cpu: float = SPOT_MEMORY_GIB_PER_CPU) -> tuple[NodeSpec, ...]:
    """A node inventory file (see the module docstring for the formats)."""
    suffix = Path(path).suffix.lower()
    if suffix in (".yaml", ".yml", ".json"):
        return _structured(path)
    text = read_text(path)
    header = {h.strip() for h in text.split("\n", 1)[0].split(",")}
    if set(SPOT_COLUMNS) <= header:
        return _spot(path, text, memory_gib_per_cpu)
    if set(OPENB_COLUMNS) <= header:
        return _openb(path, text)
    return _generic_csv(path, text)


def parse_resources(text: str, *, path: str | Path = "--node-resources") -> tuple[int, int, int]:
    """`cpu=32,memory=256Gi,nvidia.com/gpu=8` -> (millicores, MiB, GPUs); absent resources are 0."""
    amounts = {"cpu": 0, "memory": 0, GPU: 0}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in (*amounts, "pods"):
            raise InputError(
                path,
                0,
                name.strip(),
                item,
                "must be name=quantity items (cpu, memory, nvidia.com/gpu, pods) separated by commas",
            )
        if name.strip() != "pods":
            amounts[name.strip()] = _quantity(name.strip(), value.strip(), path=path, line=0, column=name.strip())
    return amounts["cpu"], amounts["memory"], amounts[GPU]


def nodes_from_topology(path: str | Path, node_resources: str) -> tuple[tuple[NodeSpec, ...], tuple[Domain, ...]]:
    """The nodes a topology file names, with `node_resources` each, and its domains (see the module docstring)."""
    cpu, mem, gpus = parse_resources(node_resources)
    try:
        tree = parse_topology(read_text(path), field=str(path))
    except InvalidField as exc:
        raise InputError(path, 0, exc.field, exc.value, exc.allowed) from None
    nodes = tuple(NodeSpec(name, cpu, mem, gpus) for name in tree.node_names)
    return nodes, tree.domains


def _amount(resources: Mapping[str, Any], name: str, node: str) -> int:
    value = resources.get(name, 0)
    return _quantity(
        name if name != GPU else GPU, value, path=f"node {node}", line=0, column=f"status.allocatable.{name}"
    )


def nodes_from_api(items: Sequence[Mapping[str, Any]]) -> tuple[tuple[NodeSpec, ...], list[str]]:
    """NodeSpecs of API Node objects, and notes naming the nodes left out (see the module docstring)."""
    nodes: list[NodeSpec] = []
    notes: list[str] = []
    for obj in items:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if (obj.get("spec") or {}).get("unschedulable"):
            notes.append(f"node {name} left out: spec.unschedulable")
            continue
        status = obj.get("status") or {}
        resources = status.get("allocatable") or status.get("capacity") or {}
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        model = labels.get(GPU_MODEL_LABEL) or labels.get(GPU_PRODUCT_LABEL)
        cpu, mem, gpus = (_amount(resources, r, name) for r in ("cpu", "memory", GPU))
        nodes.append(_node(name, cpu, mem, gpus, model, labels))
    return tuple(nodes), notes


async def live_nodes(kubeconfig: str | None) -> tuple[tuple[NodeSpec, ...], list[str]]:
    """A live cluster's nodes (see `nodes_from_api`), read with one paginated LIST."""
    from gangsched.k8s.client import KubeClient

    async with await KubeClient.connect(kubeconfig) as client:
        items, _ = await client.list_all("/api/v1/nodes")
    return nodes_from_api(items)
