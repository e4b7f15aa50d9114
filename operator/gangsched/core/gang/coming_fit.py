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
from gangsched.core.fit.store_cache import CacheKind
from gangsched.core.memory.views import StoreView

_NONE: Mapping[str, int] = {}
MAX_MEMOS = 64


def fits(have: Mapping[str, int], wanted: list[tuple[str, int]]) -> int:
    """Pods requesting `wanted` ((resource, quantity > 0) pairs) that fit in `have` (never below 0)."""
    return max(0, min((have.get(r, 0) // q for r, q in wanted), default=1 << 62))


class _Memo:
    __slots__ = ("cpos", "gain", "gen", "idx", "pos", "total")

    def __init__(self, idx: ClassIndex, gen: int, pos: int, cpos: int) -> None:
        self.idx = idx
        self.gen = gen
        self.pos = pos  # the accounting log's position when last brought up to date
        self.cpos = cpos  # the coming log's
        self.gain: dict[str, int] = {}
        self.total = 0


_MEMOS: CacheKind[tuple[int, bool], _Memo] = CacheKind("coming_fit", _Memo)  # by (class id, spread)


def coming_gain(store: StoreView, idx: ClassIndex) -> tuple[int, Mapping[str, int]]:
    """See the module docstring."""
    coming = store.coming
    key = (idx.cls.id, idx.spread)
    # moved last (least recently used dropped first); a new one is never valid (gen -1): replaced below
    memo = coming.caches.use(_MEMOS, key, lambda: _Memo(idx, -1, 0, 0), bound=MAX_MEMOS)
    used_log = coming_log = None
    if memo.gen == store.static_gen and memo.idx is idx:
        used_log, coming_log = store.changes_since(memo.pos), coming.changes_since(memo.cpos)
    names: Iterable[str]
    if used_log is None or coming_log is None:
        memo = _Memo(idx, store.static_gen, store.log_end(), coming.log_end())
        coming.caches.put(_MEMOS, key, memo)
        names = coming.by_node
    else:
        memo.pos, memo.cpos = store.log_end(), coming.log_end()
        names = dict.fromkeys(used_log + coming_log)
    wanted = [(r, q) for r, q in idx.cls.requests.items() if q > 0]
    nodes, used, by_node, gain = store.nodes, store.used, coming.by_node, memo.gain
    for name in names:
        old = gain.pop(name, None)
        if old is not None:
            memo.total -= old
        extra = by_node.get(name)
        if extra is None or name not in idx.pref:
            continue
        alloc, spent = nodes[name].allocatable, used.get(name) or _NONE
        have = {r: alloc.get(r, 0) - spent.get(r, 0) + extra.get(r, 0) for r, _ in wanted}
        g = gain[name] = fits(have, wanted) - idx.count[name]
        memo.total += g
    return memo.total, gain
