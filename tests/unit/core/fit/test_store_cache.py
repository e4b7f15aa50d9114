"""The store's caches (core/fit/store_cache.py): `refresh` keeps a cache equal to a rebuild from scratch, rebuilding
only when the static generation moved or the log was trimmed past it; `StoreCaches` keeps one least recently used
order over every kind of entry.

Oracles: for `refresh`, the accounting's own `used` (core/memory/accounting.py), which the test cache copies whole
on a rebuild, and the log contract of core/memory/node_log.py (past 4 x nodes + 10,000 entries a reader's position
is gone: None). For `StoreCaches`, the order of the untyped `class_caches` dict it replaced (core/fit/capacity.py
`class_index` at commit 50d7954: pop, drop the first entries while 256 or more are kept, insert last; the others
assigned in place), which decides which capacity indexes are rebuilt and so how ties between equal nodes break
(the decisions of bench/golden_trace.py).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gangsched.core.fit.store_cache import CacheKind, StoreCaches, refresh
from gangsched.core.memory.accounting import Accounting, Charge


class _Counting(Accounting):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def changes_since(self, position: int) -> list[str] | None:
        self.reads += 1
        return super().changes_since(position)


class _Mirror:
    """A store cache of the used resources per node."""

    def __init__(self, *, follows_log: bool = True) -> None:
        self.follows_log = follows_log
        self.gen = -1
        self.pos = 0
        self.used: dict[str, dict[str, int]] = {}
        self.rebuilds = 0
        self.updated: list[list[str]] = []

    def rebuild(self, source: Accounting) -> None:
        self.rebuilds += 1
        self.used = {node: dict(r) for node, r in source.used.items()}

    def update(self, source: Accounting, changed: list[str]) -> None:
        self.updated.append(changed)
        for node in changed:
            r = source.used.get(node)
            if r is None:
                self.used.pop(node, None)
            else:
                self.used[node] = dict(r)


REQUESTS = [{"cpu": 1}, {"cpu": 2, "gpu": 1}, {"gpu": 4}]
OPS = st.lists(
    st.tuples(st.sampled_from(["charge", "uncharge", "static", "refresh"]), st.integers(0, 2), st.integers(0, 2)),
    max_size=60,
)


@given(OPS)
def test_refresh_keeps_a_cache_equal_to_a_rebuild_rebuilt_only_on_a_static_change(
    ops: list[tuple[str, int, int]],
) -> None:
    books = _Counting()
    charges: dict[str, Charge | None] = {}
    mirror = _Mirror()
    for op, pod, node in [*ops, ("refresh", 0, 0)]:
        key = f"p{pod}"
        if op == "charge":
            charges[key] = books.charge(charges.get(key), f"n{node}", REQUESTS[pod], 3, key)
        elif op == "uncharge":
            charges[key] = books.charge(charges.get(key), None, None, 3, key)
        elif op == "static":
            books.static_gen += 1
        else:
            moved = mirror.gen != books.static_gen
            logged = mirror.pos != books.log_end()
            rebuilds, reads = mirror.rebuilds, books.reads
            refresh(mirror, books)
            assert mirror.used == books.used
            assert mirror.rebuilds == rebuilds + moved
            assert books.reads == reads + (logged and not moved)  # nothing logged: nothing read


def test_a_log_trimmed_past_the_cache_rebuilds_it() -> None:
    books = Accounting()
    mirror = _Mirror()
    refresh(mirror, books)
    charge: Charge | None = None
    for i in range(10_010):  # one node: past 4 + 10,000 entries the log is emptied
        charge = books.charge(charge, "n0" if i % 2 else "n1", REQUESTS[0], 1, "p")
    refresh(mirror, books)
    assert (mirror.rebuilds, mirror.updated) == (2, [])
    assert mirror.used == books.used


def test_a_static_cache_never_reads_the_log() -> None:
    books = _Counting()
    mirror = _Mirror(follows_log=False)
    refresh(mirror, books)
    books.charge(None, "n0", REQUESTS[0], 1, "p")
    refresh(mirror, books)
    assert (mirror.rebuilds, mirror.updated, books.reads) == (1, [], 0)
    books.static_gen += 1
    refresh(mirror, books)
    assert mirror.rebuilds == 2


class _A:
    pass


class _B:
    pass


A: CacheKind[int, _A] = CacheKind("a", _A)
B: CacheKind[int, _B] = CacheKind("b", _B)


def test_the_caches_keep_one_least_recently_used_order_over_every_kind() -> None:
    caches = StoreCaches()
    a1 = caches.use(A, 1, _A, bound=3)
    b1 = _B()
    caches.put(B, 1, b1)
    caches.use(A, 2, _A, bound=3)
    assert caches.use(A, 1, _A, bound=3) is a1  # found: moved last, nothing dropped
    assert caches.get(B, 1) is b1  # read: not moved
    caches.put(B, 1, b1)  # assigned in place: not moved
    assert caches.kinds() == {"a": 2, "b": 1}
    caches.use(A, 3, _A, bound=3)  # made: the oldest entry, of the other kind, is dropped
    assert caches.get(B, 1) is None
    assert caches.get(A, 2) is not None and caches.get(A, 1) is a1
    caches.use(A, 4, _A, bound=3)  # then the least recently used: A 2 (A 1 was used after it)
    assert caches.get(A, 2) is None and caches.get(A, 1) is a1
    assert len(caches) == 3


def test_equal_keys_of_two_kinds_are_two_entries() -> None:
    caches = StoreCaches()
    caches.use(A, 7, _A, bound=8)
    assert caches.get(B, 7) is None
    caches.put(B, 7, _B())
    a, b = caches.get(A, 7), caches.get(B, 7)
    assert isinstance(a, _A) and isinstance(b, _B)
