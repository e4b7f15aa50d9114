"""Which eligible nodes lack room for one more pod of a class, and the first resource each lacks: the counts a
failure message shows (core/transaction/messages.py `explain`), kept up to date from the accounting log.

Contract: `fit_counts(session, idx) -> (fit, reasons)`: of the nodes the class is statically eligible for
(core/fit/capacity.py), how many have room for one more pod in the cycle's workspace, and the others counted by
"insufficient <resource>" (the first lacking resource in name order). Exactly what a pass over every eligible
node would count, at the cost of the nodes changed since the last call plus those the workspace touched.
Memo per class in the store's `caches`; only for classes without per-node filters (host ports, pod
affinity, spread: the caller counts those). More: docs/modules.md#coretransactionfit_countspy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from gangsched.core.fit.capacity import ClassIndex
from gangsched.core.fit.store_cache import CacheKind, refresh
from gangsched.core.memory.views import StoreView
from gangsched.core.transaction.session import CycleSession

_NONE: Mapping[str, int] = {}


class _Memo:
    """A store cache (core/fit/store_cache.py) of one class, over its index's eligible nodes and its requests (the
    caller's, set before each refresh)."""

    __slots__ = ("counts", "gen", "idx", "pos", "requests", "why")
    follows_log = True

    def __init__(self, idx: ClassIndex, requests: list[tuple[str, int]]) -> None:
        self.idx = idx
        self.requests = requests
        self.gen = -1
        self.pos = 0
        self.why: dict[str, str] = {}  # node -> "insufficient <resource>" (store level); fitting nodes absent
        self.counts: Counter[str] = Counter()

    def rebuild(self, store: StoreView) -> None:
        self.why, self.counts = {}, Counter()
        _check(store, self, self.idx.pref)

    def update(self, store: StoreView, changed: list[str]) -> None:
        pref = self.idx.pref
        _check(store, self, (n for n in dict.fromkeys(changed) if n in pref))


_MEMOS: CacheKind[int, _Memo] = CacheKind("fit_counts", _Memo)  # by class id


def reason(
    requests: list[tuple[str, int]], alloc: Mapping[str, int], used: Mapping[str, int], extra: Mapping[str, int] = _NONE
) -> str | None:
    """ "insufficient <r>" for the first (resource, quantity) in `requests` the node lacks room for; None: it fits."""
    for r, q in requests:
        if alloc.get(r, 0) - used.get(r, 0) - extra.get(r, 0) < q:
            return f"insufficient {r}"
    return None


def fit_counts(session: CycleSession, idx: ClassIndex) -> tuple[int, Counter[str]]:
    """See the module docstring."""
    store = session.store
    requests = sorted((r, q) for r, q in idx.cls.requests.items() if q > 0)
    memo = _synced(store, idx, requests)
    fit = len(idx.pref) - len(memo.why)
    reasons = Counter(memo.counts)
    nodes, used = store.nodes, store.used
    for name, extra in session.workspace.extra.items():
        if name not in idx.pref or not extra:
            continue
        before = memo.why.get(name)
        now = reason(requests, nodes[name].allocatable, used.get(name) or _NONE, extra)
        if now == before:
            continue
        if before is None:
            fit -= 1
        else:
            reasons[before] -= 1
        if now is None:
            fit += 1
        else:
            reasons[now] += 1
    return fit, +reasons


def _synced(store: StoreView, idx: ClassIndex, requests: list[tuple[str, int]]) -> _Memo:
    memo = store.caches.get(_MEMOS, idx.cls.id)
    if memo is None:
        memo = _Memo(idx, requests)
        store.caches.put(_MEMOS, idx.cls.id, memo)
    memo.idx, memo.requests = idx, requests
    refresh(memo, store)
    return memo


def _check(store: StoreView, memo: _Memo, names: Iterable[str]) -> None:
    nodes, used, requests = store.nodes, store.used, memo.requests
    why, counts = memo.why, memo.counts
    for name in names:
        now = reason(requests, nodes[name].allocatable, used.get(name) or _NONE)
        before = why.get(name)
        if now == before:
            continue
        if before is not None:
            counts[before] -= 1
        if now is None:
            del why[name]
        else:
            why[name] = now
            counts[now] += 1
