"""What `kubectl gang` shows of gang trees (Kubernetes 1.37 CompositePodGroups, Grove PodGangs), from raw API objects.

Contract (no I/O):
- `trees_of(composites, native_podgroups, podgangs, pods) -> list[TreeView]`: one per root CompositePodGroup (the
  groups below it) and per PodGang (its group configs as middle nodes, its pod groups as leaves), leaves with pods.
- `render_trees(trees, names) -> str`: the trees with a node in `names` (all when empty), one line per node indented
  by level: minimums, ready children, a leaf's pods (bound / existing, node, phase, gated); a node whose parent is
  not in sight is a root with "(parent X not found)".
- `tree_nodes(trees)`: every node's name and namespace/name; `trees_record(trees, names)`: the same as data.
More: docs/modules.md#plugintreespy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Obj = Mapping[str, Any]


@dataclass(slots=True)
class Node:
    key: str
    kind: str  # "composite" | "podgroup" | "podgang" | "group"
    minimum: int
    children: list[Node] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    note: str = ""

    def bound(self) -> int:
        return sum(1 for p in self.pods if (p.get("spec") or {}).get("nodeName"))

    def ready(self) -> bool:
        if self.kind == "podgroup":
            return self.bound() >= max(self.minimum, 1)
        return sum(1 for c in self.children if c.ready()) >= self.minimum

    def walk(self) -> Iterable[Node]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(slots=True)
class TreeView:
    source: str  # "CompositePodGroup" | "PodGang"
    root: Node


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _policy_min(obj: Obj, field_name: str) -> int:
    gang = (_spec(obj).get("schedulingPolicy") or {}).get("gang")
    value = gang.get(field_name) if isinstance(gang, Mapping) else None
    return value if isinstance(value, int) else 0


def _parent(obj: Obj) -> str | None:
    name = _spec(obj).get("parentCompositePodGroupName")
    return f"{_key(obj).partition('/')[0]}/{name}" if isinstance(name, str) and name else None


def trees_of(
    composites: Iterable[Obj], native: Iterable[Obj], podgangs: Iterable[Obj], pods: Iterable[Obj]
) -> list[TreeView]:
    pods = list(pods)
    by_group: dict[str, list[Obj]] = {}
    by_name = {_key(p): p for p in pods}
    for pod in pods:
        group = _spec(pod).get("schedulingGroup")
        name = group.get("podGroupName") if isinstance(group, Mapping) else None
        if isinstance(name, str) and name:
            by_group.setdefault(f"{_key(pod).partition('/')[0]}/{name}", []).append(pod)
    nodes: dict[str, Node] = {}
    parents: dict[str, str | None] = {}
    for obj in composites:
        nodes[_key(obj)] = Node(_key(obj), "composite", _policy_min(obj, "minGroupCount"))
        parents[_key(obj)] = _parent(obj)
    for obj in native:
        if _parent(obj) is None:
            continue  # a PodGroup in no tree: the gang list shows it
        nodes[_key(obj)] = Node(_key(obj), "podgroup", _policy_min(obj, "minCount"), pods=by_group.get(_key(obj), []))
        parents[_key(obj)] = _parent(obj)
    roots: list[Node] = []
    for key in sorted(nodes):
        parent = parents[key]
        if parent is None:
            roots.append(nodes[key])
        elif parent in nodes and not _above(parents, parent, key):
            nodes[parent].children.append(nodes[key])
        else:
            nodes[key].note = f"(parent {parent} not found)" if parent not in nodes else "(in a cycle)"
            roots.append(nodes[key])
    views = [TreeView("CompositePodGroup", root) for root in roots]
    views.extend(TreeView("PodGang", _podgang(obj, by_name)) for obj in podgangs)
    return views


def _above(parents: Mapping[str, str | None], start: str, key: str) -> bool:
    """Whether `key` is an ancestor of `start` (a cycle), walking at most len(parents) steps."""
    up: str | None = start
    for _ in range(len(parents) + 1):
        if up is None:
            return False
        if up == key:
            return True
        up = parents.get(up)
    return True


def _podgang(obj: Obj, pods: Mapping[str, Obj]) -> Node:
    namespace = _key(obj).partition("/")[0]
    spec = _spec(obj)
    leaves: dict[str, Node] = {}
    for group in spec.get("podgroups") or []:
        if not isinstance(group, Mapping):
            continue
        refs = [f"{r.get('namespace') or namespace}/{r.get('name')}" for r in group.get("podReferences") or []]
        count = group.get("minReplicas")
        name = str(group.get("name"))
        members = [pods[r] for r in refs if r in pods]
        leaves[name] = Node(f"{namespace}/{name}", "podgroup", count if isinstance(count, int) else 0, pods=members)
    root = Node(_key(obj), "podgang", 0)
    grouped: set[str] = set()
    for config in spec.get("topologyConstraintGroupConfigs") or []:
        names = [n for n in (config.get("podGroupNames") or []) if n in leaves] if isinstance(config, Mapping) else []
        if names:
            grouped.update(names)
            root.children.append(
                Node(f"{_key(obj)}/{config.get('name')}", "group", len(names), [leaves[n] for n in names])
            )
    root.children.extend(leaf for name, leaf in leaves.items() if name not in grouped)
    root.minimum = len(root.children)
    return root


def _lines(node: Node, depth: int) -> list[str]:
    indent = "  " * depth
    if node.kind == "podgroup":
        head = f"{indent}podgroup {node.key}  minCount {node.minimum}  pods {node.bound()}/{len(node.pods)} bound"
    else:
        ready = sum(1 for c in node.children if c.ready())
        what = {"composite": "composite", "podgang": "podgang", "group": "group"}[node.kind]
        head = f"{indent}{what} {node.key}  minGroupCount {node.minimum}  groups {ready}/{len(node.children)} ready"
    out = [f"{head}  {'ready' if node.ready() else 'not ready'}" + (f"  {node.note}" if node.note else "")]
    for pod in node.pods:
        spec = pod.get("spec") or {}
        phase = str((pod.get("status") or {}).get("phase") or "Pending")
        gated = "  gated" if spec.get("schedulingGates") else ""
        out.append(
            f"{indent}  - {(pod.get('metadata') or {}).get('name')}  node={spec.get('nodeName') or '-'}  {phase}{gated}"
        )
    for child in node.children:
        out.extend(_lines(child, depth + 1))
    return out


def _wanted(trees: Sequence[TreeView], names: Sequence[str]) -> list[TreeView]:
    if not names:
        return list(trees)
    return [t for t in trees if any(n.key in names or n.key.partition("/")[2] in names for n in t.root.walk())]


def render_trees(trees: Sequence[TreeView], names: Sequence[str]) -> str:
    lines: list[str] = []
    for tree in _wanted(trees, names):
        lines.append(f"tree ({tree.source})")
        lines.extend(_lines(tree.root, 1))
    return "\n".join(lines)


def tree_nodes(trees: Sequence[TreeView]) -> set[str]:
    return {name for t in trees for n in t.root.walk() for name in (n.key, n.key.partition("/")[2])}


def _record(node: Node) -> dict[str, Any]:
    return {
        "name": node.key,
        "kind": node.kind,
        "minimum": node.minimum,
        "ready": node.ready(),
        "bound": node.bound() if node.kind == "podgroup" else None,
        "pods": [str((p.get("metadata") or {}).get("name")) for p in node.pods],
        "children": [_record(c) for c in node.children],
    }


def trees_record(trees: Sequence[TreeView], names: Sequence[str]) -> list[dict[str, Any]]:
    return [{"source": t.source, "root": _record(t.root)} for t in _wanted(trees, names)]
