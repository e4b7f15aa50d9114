"""Kubernetes 1.37's CompositePodGroups (scheduling.k8s.io/v1alpha3), read, and the gang trees they build with the
native PodGroups naming them (spec.parentCompositePodGroupName).

Contract:
- `CompositeGroups.on_event(kind, obj) -> CompositeChange`: keeps each CompositePodGroup by key; `problem` (an
  unreadable policy: it counts as missing) and `unsupported` fields are said once per object and message.
- `tree_for(leaf, links, minimums, tier_keys) -> GangTree | TreeProblem | None`: the tree of native PodGroup `leaf`
  (None without a parent) over the groups observed (`basic` PodGroups left out); checked as kube-scheduler's
  workload forest does (cycle, missing parent, deeper than MAX_DEPTH) plus one Workload per tree: a TreeProblem
  names the group and field, and the gang is not scheduled until fixed.
- `keys(namespace)`, `uids[key]`, `objects[key]` (uid, generation, conditions; `wrote(key, conditions)`).
More: docs/modules.md#statecompositepy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangsched.core import DomainKey, GangTree, InvalidField, TreeNode
from gangsched.models.composite import (
    MAX_DEPTH,
    CompositeInfo,
    GroupLink,
    composite_node,
    unsupported_composite_fields,
)
from gangsched.state.native import NativeObject

KIND = "CompositePodGroup"
PARENT = "spec.parentCompositePodGroupName"


@dataclass(frozen=True, slots=True)
class TreeProblem:
    message: str
    at: str  # the group the problem is found at (a CompositePodGroup's key, or the leaf's)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class CompositeChange:
    key: str
    problem: str | None = None
    unsupported: str | None = None


class CompositeGroups:
    def __init__(self) -> None:
        self.groups: dict[str, CompositeInfo] = {}
        self.uids: dict[str, str] = {}
        self.objects: dict[str, NativeObject] = {}
        self._said: dict[str, tuple[str | None, str | None]] = {}

    def on_event(self, kind: str | None, obj: dict[str, Any]) -> CompositeChange:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        problem = unsupported = None
        if kind == "DELETED":
            self.groups.pop(key, None)
            self.uids.pop(key, None)
            self.objects.pop(key, None)
            self._said.pop(key, None)
            return CompositeChange(key)
        self.uids[key] = str(meta.get("uid") or "")
        status = obj.get("status") or {}
        conditions = status.get("conditions") if isinstance(status, dict) else None
        generation = meta.get("generation")
        self.objects[key] = NativeObject(
            self.uids[key],
            generation if isinstance(generation, int) else 0,
            [dict(c) for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else [],
        )
        try:
            self.groups[key] = composite_node(obj)
        except InvalidField as exc:
            self.groups.pop(key, None)
            problem = f"{exc}: this CompositePodGroup is not used until it is fixed (its subtree waits)"
        fields = unsupported_composite_fields(obj)
        if fields:
            unsupported = (
                f"{', '.join(fields)}: not honoured by gangsched on a CompositePodGroup (the tree is scheduled"
                " without them)"
            )
        said = self._said.get(key, (None, None))
        self._said[key] = (problem, unsupported)
        return CompositeChange(
            key, problem if problem != said[0] else None, unsupported if unsupported != said[1] else None
        )

    def wrote(self, key: str, conditions: list[dict[str, Any]]) -> None:
        """The operator patched these conditions onto the CompositePodGroup (its echo may come later)."""
        found = self.objects.get(key)
        if found is not None:
            found.conditions = conditions

    def keys(self, namespace: str) -> list[str]:
        return [k for k in self.groups if k.partition("/")[0] == namespace]

    def tree_for(
        self, leaf: str, links: Mapping[str, GroupLink], minimums: Mapping[str, int], tier_keys: Sequence[str]
    ) -> GangTree | TreeProblem | None:
        """See module docstring."""
        link = links.get(leaf)
        if link is None or link.parent is None:
            return None
        namespace = leaf.partition("/")[0]
        path = [leaf]
        up: str | None = f"{namespace}/{link.parent}"
        while up is not None:
            if up in path:
                return TreeProblem(f"{PARENT}: cycle detected in hierarchy at CompositePodGroup {up}", up)
            node = self.groups.get(up)
            if node is None:
                child = path[-1]
                why = f"{PARENT}: CompositePodGroup {up} (the parent of {child}) not found; the tree waits for it"
                return TreeProblem(why, child)
            path.append(up)
            up = f"{namespace}/{node.link.parent}" if node.link.parent else None
        root = path[-1]
        return self._build(root, namespace, links, minimums, tier_keys)

    def _build(
        self,
        root: str,
        namespace: str,
        links: Mapping[str, GroupLink],
        minimums: Mapping[str, int],
        tier_keys: Sequence[str],
    ) -> GangTree | TreeProblem:
        children: dict[str, list[str]] = {}
        for key, info in self.groups.items():
            if info.link.parent and key.partition("/")[0] == namespace:
                children.setdefault(f"{namespace}/{info.link.parent}", []).append(key)
        for key, link in links.items():
            if link.parent and key.partition("/")[0] == namespace and minimums.get(key) != 0:
                children.setdefault(f"{namespace}/{link.parent}", []).append(key)
        workload = self.groups[root].link.workload
        nodes: list[TreeNode] = []
        level = [root]
        depth = 0
        while level:
            depth += 1
            if depth > MAX_DEPTH:
                why = f"{PARENT}: hierarchy depth {depth} exceeds maximum allowed depth {MAX_DEPTH} (at {min(level)})"
                return TreeProblem(why, min(level))
            below: list[str] = []
            for key in sorted(level):
                found = self.groups.get(key)
                own = found.link.workload if found is not None else (links[key].workload if key in links else None)
                if workload is not None and own is not None and own != workload:
                    why = (
                        f"spec.workloadRef.workloadName: {own!r} on {key}, but its tree's root {root} belongs to"
                        f" Workload {workload!r}: a tree of groups is built from one Workload's templates"
                    )
                    return TreeProblem(why, key)
                if found is None:
                    nodes.append(TreeNode(key, minimums.get(key, 0)))
                    continue
                kids = tuple(sorted(children.get(key, ())))
                nodes.append(TreeNode(key, found.minimum, kids, _domain(found.topology, tier_keys)))
                below.extend(kids)
            level = below
        return GangTree(root, tuple(nodes), KIND)


def _domain(key: str | None, tier_keys: Sequence[str]) -> DomainKey | None:
    if key is None:
        return None
    if key in tier_keys:
        return DomainKey(tier=list(tier_keys).index(key) + 1)
    return DomainKey(label=key)
