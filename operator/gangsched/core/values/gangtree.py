"""Gang trees: a gang's place in a tree of groups (Kubernetes 1.37 CompositePodGroups, Grove PodGangs, gang groups).

Contract (immutable values; their parsers in models/ and state/ validate them: no cycle, every child known):
- `DomainKey(tier=t)`: one domain of tier t of the topology tree; `DomainKey(label=k)`: nodes sharing one value of the
  node label k (a node without it is in no domain). A hard constraint: all pods of a subtree in one such domain.
- `TreeNode(key, minimum, children, domain)`: a group of the tree. A composite node (children set) is admitted when at
  least `minimum` of its children are; a leaf (no children) is a gang whose key is `key`, admitted at its own quorum
  (its GangSpec.min_member; the leaf's `minimum` is shown only). `domain`: the node's hard topology constraint.
- `GangTree(root, nodes, kind)`: `node(key)`, `ancestors(leaf)` (nearest first), `leaves()`, `depth()`.
  `kind` names the declaration ("group" for a gang group, "CompositePodGroup", "PodGang"), for messages.
- `GangTree.flat(keys)`: a gang group as a tree: one root needing every gang of the group.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

GROUP = "group"


@dataclass(frozen=True, slots=True)
class DomainKey:
    tier: int | None = None  # a tier of the topology tree (1 = lowest)
    label: str | None = None  # a node label key (its own one-level domain)

    def __str__(self) -> str:
        return f"tier {self.tier}" if self.tier is not None else f"node label {self.label}"


@dataclass(frozen=True, slots=True)
class TreeNode:
    key: str
    minimum: int
    children: tuple[str, ...] = ()
    domain: DomainKey | None = None

    @property
    def leaf(self) -> bool:
        return not self.children


@dataclass(frozen=True, slots=True)
class GangTree:
    root: str
    nodes: tuple[TreeNode, ...]
    kind: str = "CompositePodGroup"
    _by_key: dict[str, TreeNode] = field(init=False, repr=False, compare=False, hash=False)
    _parent: dict[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_key", {n.key: n for n in self.nodes})
        object.__setattr__(self, "_parent", {c: n.key for n in self.nodes for c in n.children})

    @classmethod
    def flat(cls, keys: Iterable[str]) -> GangTree:
        gangs = tuple(keys)
        root = TreeNode("(gang group)", len(gangs), gangs)
        return cls(root.key, (root, *(TreeNode(k, 0) for k in gangs)), GROUP)

    def node(self, key: str) -> TreeNode | None:
        return self._by_key.get(key)

    def parent(self, key: str) -> str | None:
        return self._parent.get(key)

    def ancestors(self, key: str) -> list[TreeNode]:
        """The nodes above `key`, nearest first (the root last)."""
        out: list[TreeNode] = []
        up = self._parent.get(key)
        while up is not None and len(out) < len(self.nodes):
            out.append(self._by_key[up])
            up = self._parent.get(up)
        return out

    def leaves(self) -> list[str]:
        return [n.key for n in self.nodes if n.leaf]

    def depth(self) -> int:
        """Levels from the root down to the deepest leaf (a lone root is 1)."""
        return max((len(self.ancestors(key)) + 1 for key in self.leaves()), default=1)
