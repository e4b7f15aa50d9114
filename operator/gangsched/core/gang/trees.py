"""Admission of a gang that stands in a tree of groups (core/values/gangtree.py): all or nothing at every node.

Contract (over a CycleSession; `tree_of(spec)` is the tree a gang's admission goes through, None when alone; a gang
group is the one-level case):
- `tree_short(session, gang, tree) -> str | None`: before placing, every node on the gang's path to the root must be
  complete (a leaf: minMember live pods or satisfied; a composite: `minimum` complete children); the first short.
- `tree_ready(session, gang, tree) -> list[GangState] | None`: once `gang` reached its quorum, the gangs to bind
  now (`gang` first) when the root and its ancestors are ready; None: keep reservations.
- `roles_short(spec, counts, placeable=False)`: the first role below its minimum; `describe(tree)`: its name in
  messages ("gang group [a, b]", "CompositePodGroup tree ns/root"). More: docs/modules.md#coregangtreespy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from gangsched.core.memory.gangs import GangState
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec
from gangsched.core.values.gangtree import GROUP, GangTree, TreeNode


def roles_short(spec: GangSpec, counts: Counter[str | None], *, placeable: bool = False) -> str | None:
    """The first role of the spec below its minimum in `counts`, described; None when every role has its minimum."""
    for role, minimum in spec.roles:
        if counts.get(role, 0) < minimum:
            if placeable:
                return f"role {role}: {counts.get(role, 0)} of minimum {minimum} placeable"
            return f"role {role}: {counts.get(role, 0)} of {minimum}"
    return None


def tree_of(spec: GangSpec) -> GangTree | None:
    if spec.tree is not None:
        return spec.tree
    return GangTree.flat(spec.group) if spec.group else None


def describe(tree: GangTree) -> str:
    if tree.kind == GROUP:
        return f"gang group {[n.key for n in tree.nodes[1:]]}"
    return f"{tree.kind} tree {tree.root}"


def _leaf_short(session: CycleSession, key: str) -> str | None:
    """What the leaf gang lacks in pods (its live pods do not change within a cycle: memoized in session.memo)."""
    memo = session.memo.setdefault("trees.leaf_short", {})
    if key not in memo:
        memo[key] = _leaf_pods_short(session, key)
    short: str | None = memo[key]
    return short


def _leaf_pods_short(session: CycleSession, key: str) -> str | None:
    other = session.store.gangs.get(key)
    if other is None or other.spec is None:
        return f"{key} does not exist"
    if session.is_satisfied(other):
        return None
    m = session.members(other)
    alive = len(m.bound) + len(m.reserved) + len(m.pending)
    if alive < other.spec.min_member:
        return f"{key} has {alive} of minMember {other.spec.min_member} pods"
    return None


def _complete(session: CycleSession, tree: GangTree, node: TreeNode, seen: dict[str, str | None]) -> str | None:
    """None when the node is complete, else what is short (memoized in `seen`)."""
    if node.key in seen:
        return seen[node.key]
    if node.leaf:
        short = _leaf_short(session, node.key)
    else:
        shorts = [_complete(session, tree, tree.node(c) or TreeNode(c, 0), seen) for c in node.children]
        done = sum(1 for s in shorts if s is None)
        first = next((s for s in shorts if s is not None), None)
        short = None
        if done < node.minimum:
            short = f"{node.key} has {done} of minGroupCount {node.minimum} groups ready" + (
                f": {first}" if first else ""
            )
    seen[node.key] = short
    return short


def tree_short(session: CycleSession, gang: GangState, tree: GangTree) -> str | None:
    """See module docstring."""
    seen: dict[str, str | None] = {gang.key: None}
    if tree.kind == GROUP:  # a gang group: the first gang short, as Koordinator's check names it
        root = tree.node(tree.root)
        assert root is not None
        return next((s for c in root.children if c != gang.key and (s := _leaf_short(session, c))), None)
    for node in tree.ancestors(gang.key):
        short = _complete(session, tree, node, seen)
        if short is not None:
            return short
    return None


def _ready_leaf(session: CycleSession, key: str) -> bool:
    other = session.store.gangs.get(key)
    if other is None:
        return False
    if session.is_satisfied(other):
        return True
    if other.spec is None or session.is_timed_out(other):
        return False
    m = session.members(other)
    if len(m.bound) + len(m.reserved) < other.spec.min_member:
        return False
    return not other.spec.roles or roles_short(other.spec, m.roles(session.store.pods)) is None


def _enough(node: TreeNode, is_ready: Callable[[str], bool]) -> bool:
    """At least `minimum` children ready (stops as soon as the answer is known)."""
    count, left = 0, len(node.children)
    for child in node.children:
        if count >= node.minimum:
            return True
        if count + left < node.minimum:
            return False
        left -= 1
        count += is_ready(child)
    return count >= node.minimum


def tree_ready(session: CycleSession, gang: GangState, tree: GangTree) -> list[GangState] | None:
    """See module docstring."""
    ready: dict[str, bool] = {gang.key: True}

    def is_ready(key: str) -> bool:
        if key not in ready:
            node = tree.node(key)
            if node is None or node.leaf:
                ready[key] = _ready_leaf(session, key)
            else:
                ready[key] = _enough(node, is_ready)
        return ready[key]

    if not all(is_ready(n.key) for n in tree.ancestors(gang.key)):
        return None
    out = [gang]

    def collect(key: str) -> None:
        node = tree.node(key)
        if node is None or node.leaf:
            other = session.store.gangs.get(key)
            if key != gang.key and other is not None and not session.is_satisfied(other):
                out.append(other)
            return
        for child in node.children:
            if is_ready(child):
                collect(child)

    collect(tree.root)
    return out
