"""The store's incremental caches: one protocol, one invalidation path, one typed registry.

Contract:
- `StoreCache[S]`: a cache built from a source `S` (the store) at a static generation (`gen`, -1: never) and
  brought up to date from the accounting log (`pos`): `rebuild(source)` from scratch, `update(source, changed)`
  for the nodes whose usage changed (log order). `follows_log` False: it reads static node properties only.
- `refresh(cache, source)`: the one invalidation path. A moved static generation or a log trimmed past `pos`
  rebuilds; else `update` gets the nodes the log names since `pos` (no read when nothing was logged).
- `StoreCaches` (the store's `caches`): entries by (`CacheKind[K, C]`, key K), typed by their kind, in one least
  recently used order over every kind: `use(..., bound=)` moves an entry last (when absent: made, and the oldest
  of any kind dropped down to the caller's bound); `get`, `put` move none. More: docs/modules.md#corefitstore_cachepy.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar


class LogSource(Protocol):
    """What `refresh` reads of the store (core/memory/views.py `StoreView` satisfies it structurally)."""

    @property
    def static_gen(self) -> int: ...
    def log_end(self) -> int: ...
    def changes_since(self, position: int) -> list[str] | None: ...


S_contra = TypeVar("S_contra", bound=LogSource, contravariant=True)
S = TypeVar("S", bound=LogSource)
K = TypeVar("K", bound=Hashable)
C = TypeVar("C")


class StoreCache(Protocol[S_contra]):
    """An incremental cache kept by the store (see the module docstring)."""

    gen: int  # the static generation it was built at (-1: not built)
    pos: int  # the accounting log position it is up to date with

    @property
    def follows_log(self) -> bool: ...  # False: static node properties only (the log is not read)
    def rebuild(self, source: S_contra) -> None: ...
    def update(self, source: S_contra, changed: list[str]) -> None: ...


def refresh(cache: StoreCache[S], source: S) -> None:
    """Bring `cache` up to date with `source`: the one place a store cache is invalidated."""
    gen = source.static_gen
    if cache.gen == gen and not cache.follows_log:
        return
    end = source.log_end()
    changed: list[str] | None = None
    if cache.gen == gen:
        changed = [] if cache.pos == end else source.changes_since(cache.pos)
    cache.gen, cache.pos = gen, end
    if changed is None:
        cache.rebuild(source)
    else:
        cache.update(source, changed)


class CacheKind(Generic[K, C]):
    """A kind of store cache: its name (for readers), the type of its keys and of its entries."""

    __slots__ = ("entry", "name")

    def __init__(self, name: str, entry: type[C]) -> None:
        self.name = name
        self.entry = entry

    def __repr__(self) -> str:
        return f"CacheKind({self.name!r})"


class StoreCaches:
    """The store's caches (see the module docstring)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[tuple[CacheKind[Any, Any], Hashable], object] = {}  # least recently used first

    def get(self, kind: CacheKind[K, C], key: K) -> C | None:
        entry = self._entries.get((kind, key))
        return entry if isinstance(entry, kind.entry) else None

    def put(self, kind: CacheKind[K, C], key: K, entry: C) -> None:
        self._entries[(kind, key)] = entry

    def use(self, kind: CacheKind[K, C], key: K, make: Callable[[], C], *, bound: int) -> C:
        """The entry, moved last (most recently used); when absent, made, the oldest entries (of any kind)
        dropped first while `bound` or more are kept."""
        entries = self._entries
        k = (kind, key)
        entry = entries.pop(k, None)
        if not isinstance(entry, kind.entry):
            entry = make()
            while len(entries) >= bound:
                del entries[next(iter(entries))]
        entries[k] = entry
        return entry

    def kinds(self) -> dict[str, int]:
        """Entries kept per kind name (tests and `ClusterStore.sizes`)."""
        out: dict[str, int] = {}
        for kind, _ in self._entries:
            out[kind.name] = out.get(kind.name, 0) + 1
        return out

    def __len__(self) -> int:
        return len(self._entries)
