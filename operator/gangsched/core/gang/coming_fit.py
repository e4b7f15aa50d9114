"""How many more pods of a class fit once the capacity that is coming is free, kept per class from two change logs.

Contract: `coming_gain(store, idx) -> (total, gain)` for a class without node filters and its capacity index synced
to the store (core/fit/capacity.py `class_index`): `gain` maps each node the class is statically eligible for that
has coming capacity (core/memory/coming.py) to how many more pods of the class fit in the store's free capacity
plus what is coming than in its free capacity alone (`fits(...) - idx.count[node]`, as core/gang/deadlock.py
`_slots` counts them); `total` is their sum. Exactly what a pass over every node with coming capacity would give,
at the cost of the nodes whose usage (the accounting log) or coming capacity (the coming log) changed since the
last call; a rebuild (O(nodes with coming capacity)) when the static generation moved, a log was trimmed or the
index was replaced. Memo per class in the coming book's `memo` (least recently used dropped past MAX_MEMOS; not in
the store's `caches`, whose LRU order decides which capacity indexes are rebuilt). The map is read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gangsched.core.fit.capacity import ClassIndex
from gangsched.core.fit.store_cache import CacheKind, refresh
from gangsched.core.memory.views import StoreView

_NONE: Mapping[str, int] = {}
MAX_MEMOS = 64


def fits(have: Mapping[str, int], wanted: list[tuple[str, int]]) -> int:
    """Pods requesting `wanted` ((resource, quantity > 0) pairs) that fit in `have` (never below 0)."""
    return max(0, min((have.get(r, 0) // q for r, q in wanted), default=1 << 62))


class _Memo:
    """A store cache (core/fit/store_cache.py) of one class over one capacity index; it also follows the coming
    book's log (a trimmed one rebuilds it)."""

    __slots__ = ("cpos", "gain", "gen", "idx", "pos", "total")
    follows_log = True

    def __init__(self, idx: ClassIndex) -> None:
        self.idx = idx
        self.gen = -1
        self.pos = 0  # the accounting log's position when last brought up to date
        self.cpos = 0  # the coming log's
        self.gain: dict[str, int] = {}
        self.total = 0

    def rebuild(self, store: StoreView) -> None:
        self.gain, self.total = {}, 0
        self.cpos = store.coming.log_end()
        self._count(store, store.coming.by_node)

    def update(self, store: StoreView, changed: list[str]) -> None:
        coming = store.coming
        coming_log = coming.changes_since(self.cpos)
        if coming_log is None:
            self.rebuild(store)
            return
        self.cpos = coming.log_end()
        self._count(store, dict.fromkeys(changed + coming_log))

    def _count(self, store: StoreView, names: Iterable[str]) -> None:
        idx = self.idx
        wanted = [(r, q) for r, q in idx.cls.requests.items() if q > 0]
        nodes, used, by_node, gain = store.nodes, store.used, store.coming.by_node, self.gain
        for name in names:
            old = gain.pop(name, None)
            if old is not None:
                self.total -= old
            extra = by_node.get(name)
            if extra is None or name not in idx.pref:
                continue
            alloc, spent = nodes[name].allocatable, used.get(name) or _NONE
            have = {r: alloc.get(r, 0) - spent.get(r, 0) + extra.get(r, 0) for r, _ in wanted}
            g = gain[name] = fits(have, wanted) - idx.count[name]
            self.total += g


_MEMOS: CacheKind[tuple[int, bool], _Memo] = CacheKind("coming_fit", _Memo)  # by (class id, spread)


def coming_gain(store: StoreView, idx: ClassIndex) -> tuple[int, Mapping[str, int]]:
    """See the module docstring."""
    # moved last (least recently used dropped first); a memo of another index (this one's was replaced) is rebuilt
    memo = store.coming.caches.use(_MEMOS, (idx.cls.id, idx.spread), lambda: _Memo(idx), bound=MAX_MEMOS)
    if memo.idx is not idx:
        memo.idx, memo.gen = idx, -1
    refresh(memo, store)
    return memo.total, memo.gain
