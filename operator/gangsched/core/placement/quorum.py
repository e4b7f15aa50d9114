"""Exact quorum search for gangs of several scheduling classes or roles (pure: no session, no I/O).

Contract: `search(classes, groups, demands, need, nodes) -> SearchResult`:
- inputs: each class's requests; the pending pods counted by (class, role still short); pods each role still needs;
  `need`, the pods the quorum needs in all; candidate nodes with free resources and allowed classes.
- `quorum`: how many pods of each group, on which nodes, exactly `need` pods with every demand met, never
  over-committing a node; None when none exists (`exact`) or the search gave up.
- `exact`: complete within MAX_CLASSES classes, MAX_NODES nodes and SEARCH_BUDGET steps; beyond, gives up at once.
`first_fit(classes, counts, nodes)`: the greedy check beyond the bound (first fit, classes in the order given).
Method: branch-and-bound over count vectors, each checked by a memoized depth-first search over nodes.
More: docs/modules.md#coreplacementquorumpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_CLASSES = 8
MAX_NODES = 64
SEARCH_BUDGET = 10_000  # about 50 ms of search at worst

Need = tuple[int, ...]  # pods still to place, per class
Assignment = list[tuple[str, int, int]]  # (node, class, count)


@dataclass(frozen=True, slots=True)
class Group:
    cls: int
    role: str | None  # a role with a minimum still to meet, else None
    available: int


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    free: Mapping[str, int]
    allowed: frozenset[int]  # classes that may go to this node


@dataclass(frozen=True, slots=True)
class Quorum:
    taken: tuple[int, ...]  # pods taken from each group
    assignment: Assignment


@dataclass(frozen=True, slots=True)
class SearchResult:
    quorum: Quorum | None
    exact: bool


class _OverBudget(Exception):
    pass


class _Fit:
    """Exact check of a per-class count vector against the candidate nodes."""

    def __init__(self, classes: Sequence[Mapping[str, int]], nodes: Sequence[Candidate], budget: int) -> None:
        resources = sorted({r for req in classes for r, q in req.items() if q > 0})
        self.req = [tuple(req.get(r, 0) for r in resources) for req in classes]
        self.nodes = nodes
        self.free = [tuple(n.free.get(r, 0) for r in resources) for n in nodes]
        # suffix[i][r]: free resource r over nodes i.. (a necessary condition for the rest to fit)
        self.suffix = [tuple(0 for _ in resources)] * (len(nodes) + 1)
        for i in range(len(nodes) - 1, -1, -1):
            self.suffix[i] = tuple(a + max(b, 0) for a, b in zip(self.suffix[i + 1], self.free[i], strict=True))
        self.failed: set[tuple[int, Need]] = set()
        self.found: dict[Need, list[tuple[int, int, int]]] = {}
        self.steps = budget

    def _tick(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise _OverBudget

    def check(self, need: Need) -> list[tuple[int, int, int]] | None:
        """(node index, class, count) placing exactly `need`, else None."""
        if need in self.found:
            return self.found[need]
        out = self._dfs(0, need)
        if out is not None:
            self.found[need] = out
        return out

    def _dfs(self, i: int, rem: Need) -> list[tuple[int, int, int]] | None:
        if not any(rem):
            return []
        if i == len(self.nodes) or (i, rem) in self.failed:
            return None
        total = [0] * len(self.suffix[i])
        for c, k in enumerate(rem):
            if k:
                for r, q in enumerate(self.req[c]):
                    total[r] += q * k
        if any(t > s for t, s in zip(total, self.suffix[i], strict=True)):
            self.failed.add((i, rem))
            return None
        for z in self._combos(i, rem):
            self._tick()
            rest = self._dfs(i + 1, tuple(a - b for a, b in zip(rem, z, strict=True)))
            if rest is not None:
                return [(i, c, k) for c, k in enumerate(z) if k] + rest
        self.failed.add((i, rem))
        return None

    def _combos(self, i: int, rem: Need) -> list[Need]:
        """Maximal combinations of pods (<= rem) that fit on node i, most pods first."""
        allowed = self.nodes[i].allowed
        classes = [c for c, k in enumerate(rem) if k and c in allowed]
        free = list(self.free[i])
        z = [0] * len(rem)
        out: list[Need] = []

        def fits(c: int) -> bool:
            return all(q <= f for q, f in zip(self.req[c], free, strict=True))

        def walk(j: int) -> None:
            if j == len(classes):
                if all(z[c] == rem[c] or not fits(c) for c in classes):
                    out.append(tuple(z))
                return
            c = classes[j]
            most = rem[c]
            for r, q in enumerate(self.req[c]):
                if q > 0:
                    most = min(most, max(free[r], 0) // q)
            for k in range(most, -1, -1):
                self._tick()
                z[c] = k
                for r, q in enumerate(self.req[c]):
                    free[r] -= q * k
                walk(j + 1)
                for r, q in enumerate(self.req[c]):
                    free[r] += q * k
            z[c] = 0

        walk(0)
        out.sort(key=lambda v: -sum(v))
        return out


def search(
    classes: Sequence[Mapping[str, int]],
    groups: Sequence[Group],
    demands: Mapping[str, int],
    need: int,
    nodes: Sequence[Candidate],
    *,
    budget: int = SEARCH_BUDGET,
) -> SearchResult:
    """A quorum of exactly `need` pods meeting every demand that fits on `nodes` (see the module docstring)."""
    if len(classes) > MAX_CLASSES or len(nodes) > MAX_NODES:
        return SearchResult(None, exact=False)
    fit = _Fit(classes, nodes, budget)
    taken = [0] * len(groups)
    avail_after = [0] * (len(groups) + 1)
    for g in range(len(groups) - 1, -1, -1):
        avail_after[g] = avail_after[g + 1] + groups[g].available

    def role_gap(have: Mapping[str, int]) -> int:
        return sum(max(0, d - have.get(r, 0)) for r, d in demands.items())

    def choose(g: int, total: int, per_class: list[int], have: dict[str, int]) -> list[tuple[int, int, int]] | None:
        if fit.check(tuple(per_class)) is None:
            return None  # downward-closed: no extension fits either
        if total == need:
            return fit.check(tuple(per_class)) if role_gap(have) == 0 else None
        if g == len(groups) or total + avail_after[g] < need or need - total < role_gap(have):
            return None
        group = groups[g]
        for k in range(min(group.available, need - total), -1, -1):
            taken[g] = k
            per_class[group.cls] += k
            if group.role is not None:
                have[group.role] = have.get(group.role, 0) + k
            out = choose(g + 1, total + k, per_class, have)
            per_class[group.cls] -= k
            if group.role is not None:
                have[group.role] -= k
            if out is not None:
                return out
        taken[g] = 0
        return None

    try:
        found = choose(0, 0, [0] * len(classes), {})
    except _OverBudget:
        return SearchResult(None, exact=False)
    if found is None:
        return SearchResult(None, exact=True)
    assignment = [(nodes[i].name, c, k) for i, c, k in found]
    return SearchResult(Quorum(tuple(taken), assignment), exact=True)


def first_fit(
    classes: Sequence[Mapping[str, int]], counts: Sequence[int], nodes: Sequence[Candidate]
) -> Assignment | None:
    """Every pod placed by first fit, classes in the given order, nodes in order; None when some pod is left."""
    free = [dict(n.free) for n in nodes]
    out: Assignment = []
    for c, req in enumerate(classes):
        left = counts[c]
        for node, room in zip(nodes, free, strict=True):
            if not left:
                break
            if c not in node.allowed:
                continue
            k = min([left] + [max(room.get(r, 0), 0) // q for r, q in req.items() if q > 0])
            if k:
                for r, q in req.items():
                    room[r] = room.get(r, 0) - q * k
                out.append((node.name, c, k))
                left -= k
        if left:
            return None
    return out
