"""Simulated nodes: their manifests, the `--node-resources` and topology-file parsing, and their creation.

Contract:
- `parse_node_resources("cpu=32,memory=256Gi,nvidia.com/gpu=8")`: `name=quantity` items; a bad item raises
  InvalidField (field `--node-resources`) naming it.
- `node_manifest(name, *, resources, labels={}, taints=(), address=None, now=None) -> dict`: a Ready v1 Node as a
  1.37 kubelet registers it (capacity == allocatable, `pods: "110"` by default, hostname/os/arch labels).
- `read_topology(path_or_list)`, `node_names_from_topology(...)`, `topology_labels(...)`: the topology ConfigMap's
  format, its nodes in file order, and each node's `topology.gangsched.io/tier-<layer>` labels.
- `async create_nodes(client, names, resources, *, labels_for_name=None, concurrency=32) -> list[str]`: creates
  the missing nodes through the API (then their status if dropped); returns the names created.
More: docs/modules.md#simclusterpy.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gangsched.core import InvalidField, parse_quantity
from gangsched.k8s.client import ApiError, KubeClient
from gangsched.models.timestamps import format_time

KUBELET_VERSION = "v1.37.0-sim"
TOPOLOGY_LABEL_PREFIX = "topology.gangsched.io/tier-"
DEFAULT_PODS = "110"
_RESOURCE_ALLOWED = (
    "must be a comma-separated list of name=quantity items, e.g. cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110"
)


def parse_node_resources(text: str) -> dict[str, str]:
    """`name=quantity` items separated by commas, as a ResourceList (see module docstring)."""
    resources: dict[str, str] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, quantity = item.partition("=")
        name, quantity = name.strip(), quantity.strip()
        if not sep or not name or not quantity:
            raise InvalidField("--node-resources", item, _RESOURCE_ALLOWED)
        if name in resources:
            raise InvalidField("--node-resources", item, f"resource {name!r} is given twice; {_RESOURCE_ALLOWED}")
        parse_quantity(quantity, field=f"--node-resources {name}")
        resources[name] = quantity
    return resources


def _timestamp(now: datetime.datetime | None) -> str:
    when = now or datetime.datetime.now(datetime.UTC)
    return format_time(when)


def default_address(name: str) -> str:
    """A stable fake InternalIP for a node name (10.250.0.0/16)."""
    crc = zlib.crc32(name.encode())
    return f"10.250.{(crc >> 8) & 255}.{crc & 255 or 1}"


def node_manifest(
    name: str,
    *,
    resources: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    address: str | None = None,
    now: datetime.datetime | None = None,
) -> dict[str, Any]:
    """A v1 Node object as a kubelet registers it (see module docstring)."""
    capacity = dict(resources)
    capacity.setdefault("pods", DEFAULT_PODS)
    stamp = _timestamp(now)

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
        }

    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "gangsched-sim",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                condition(
                    "MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
                ),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status (simulated)"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": address or default_address(name)},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "osImage": "gangsched simulated node",
                "kernelVersion": "6.0.0-sim",
                "containerRuntimeVersion": "sim://1.0.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "machineID": f"{zlib.crc32(name.encode()):08x}",
                "systemUUID": f"{zlib.crc32(name.encode()):08x}-sim",
                "bootID": f"{zlib.crc32(name.encode()):08x}-boot",
            },
            "phase": "Running",
        },
    }


def _check_names(entry: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = entry.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidField(f"{where}.{key}", value, "must be a list of non-empty names")
    return list(value)


def read_topology(source: str | Path | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The entries of a topology file (or of an already-parsed list), checked (see module docstring)."""
    where = "topology"
    if isinstance(source, (str, Path)):
        where = str(source)
        try:
            data: Any = json.loads(Path(source).read_text())
        except OSError as exc:
            raise InvalidField("--topology", str(source), f"must be a readable file ({exc.strerror})") from exc
        except json.JSONDecodeError as exc:
            raise InvalidField("--topology", str(source), f"must be JSON ({exc.msg} at line {exc.lineno})") from exc
    else:
        data = source
    if not isinstance(data, list):
        raise InvalidField(
            where, type(data).__name__, 'must be a JSON list of {"layer", "name", "parents", "children"} entries'
        )
    entries = []
    for index, entry in enumerate(data):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise InvalidField(at, entry, 'must be an object with "layer", "name", "parents" and "children"')
        layer = entry.get("layer")
        if isinstance(layer, bool) or not isinstance(layer, int) or layer < 1:
            raise InvalidField(f"{at}.layer", layer, "must be an integer >= 1 (1 = the tier right above the nodes)")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidField(f"{at}.name", name, "must be a non-empty string")
        entries.append(
            {
                "layer": layer,
                "name": name,
                "parents": _check_names(entry, "parents", at),
                "children": _check_names(entry, "children", at),
            }
        )
    return entries


def node_names_from_topology(source: str | Path | Sequence[Mapping[str, Any]]) -> list[str]:
    """The node names of a topology: the children of its layer-1 entries, in file order, without repeats."""
    entries = read_topology(source)
    names: dict[str, None] = {}
    for entry in entries:
        if entry["layer"] == 1:
            names.update(dict.fromkeys(entry["children"]))
    if not names:
        raise InvalidField(
            "--topology",
            str(source) if isinstance(source, (str, Path)) else "<list>",
            "must have layer-1 entries whose children are node names",
        )
    return list(names)


def topology_labels(source: str | Path | Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Per node, `topology.gangsched.io/tier-<layer>: <domain>` for each domain above it."""
    entries = read_topology(source)
    by_name = {e["name"]: e for e in entries}
    parents_of: dict[str, list[str]] = {e["name"]: list(e["parents"]) for e in entries}
    for entry in entries:  # parents may be declared from either side
        for child in entry["children"]:
            if child in by_name and entry["name"] not in parents_of[child]:
                parents_of[child].append(entry["name"])
    labels: dict[str, dict[str, str]] = {}
    for entry in entries:
        if entry["layer"] != 1:
            continue
        chain: dict[str, str] = {}
        current: str | None = entry["name"]
        seen: set[str] = set()
        while current is not None and current in by_name and current not in seen:
            seen.add(current)
            chain.setdefault(f"{TOPOLOGY_LABEL_PREFIX}{by_name[current]['layer']}", current)
            ups = parents_of.get(current) or []
            current = ups[0] if ups else None
        for node in entry["children"]:
            labels.setdefault(node, {}).update(chain)
    return labels


def node_address(index: int) -> str:
    """The InternalIP of the index-th created node (10.250.0.0/16, unique for 65k nodes)."""
    return f"10.250.{(index >> 8) & 255}.{index & 255}"


async def create_nodes(
    client: KubeClient,
    names: Iterable[str],
    resources: Mapping[str, str],
    *,
    labels_for_name: Callable[[str], Mapping[str, str]] | None = None,
    concurrency: int = 32,
) -> list[str]:
    """Create simulated nodes through the API (see module docstring); returns the names created."""
    limit = asyncio.Semaphore(max(1, concurrency))
    created: list[str] = []

    async def one(index: int, name: str) -> None:
        manifest = node_manifest(
            name,
            resources=resources,
            labels=labels_for_name(name) if labels_for_name else None,
            address=node_address(index + 1),
        )
        async with limit:
            try:
                result = await client.create("/api/v1/nodes", manifest)
            except ApiError as exc:
                if exc.status == 409:
                    return
                raise
            if not (result.get("status") or {}).get("allocatable"):
                await client.patch(f"/api/v1/nodes/{name}/status", {"status": manifest["status"]})
            created.append(name)

    await asyncio.gather(*(one(i, n) for i, n in enumerate(names)))
    return created
