"""The emulator's object storage, with one global resourceVersion, event history and watch fan-out.

Contract:
- Objects are kept per storage key `(group, plural)` and `(namespace, name)` as `Entry(obj, raw)`; a stored dict
  is never mutated (copy on write); `Entry.copy()` gives a private deep copy.
- Every write (`put`, `remove`) takes the next global resourceVersion and appends a `WatchEvent` to the key's
  history, offered to every watcher synchronously: a write and its fan-out are atomic for the event loop.
- A `Watcher` is a bounded queue of event lines; one that overflows is marked `overflowed` and closed.
- History is bounded by count and age (`history_limit`, `history_seconds`); `history_since(key, rv)` is None when
  rv is older (410 Gone); `snapshot(key, namespace, rv)` is the entries as they were at rv, or None.
More: docs/modules.md#simstorepy.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

StorageKey = tuple[str, str]  # (group, plural)
ObjectKey = tuple[str, str]  # (namespace or "", name)


@dataclass(frozen=True, slots=True)
class Entry:
    obj: dict[str, Any]
    raw: bytes

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Entry:
        return cls(obj, orjson.dumps(obj))

    def copy(self) -> dict[str, Any]:
        """A private deep copy of the object (parsing the stored bytes is faster than copy.deepcopy)."""
        result: dict[str, Any] = orjson.loads(self.raw)
        return result

    @property
    def rv(self) -> int:
        return int(self.obj["metadata"]["resourceVersion"])


@dataclass(slots=True)
class WatchEvent:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    entry: Entry
    previous: dict[str, Any] | None  # the object before a MODIFIED or DELETED (selector transitions, snapshots)
    at: float = 0.0  # when it was written, on the store's monotonic clock (history compaction by age)
    _lines: dict[str, bytes] = field(default_factory=dict)

    def line(self, event_type: str | None = None) -> bytes:
        """`{"type":..,"object":..}\\n`, built once per type and shared by every watcher."""
        kind = event_type or self.type
        cached = self._lines.get(kind)
        if cached is None:
            cached = b'{"type":"' + kind.encode() + b'","object":' + self.entry.raw + b"}\n"
            self._lines[kind] = cached
        return cached


Filter = Callable[[dict[str, Any]], bool]


class Watcher:
    """One watch stream's queue of event lines (see module docstring)."""

    internal = False  # True for the server's own observers (not a client's watch stream)

    def __init__(
        self,
        *,
        namespace: str | None,
        matches: Filter | None,
        transform: Callable[[WatchEvent, str], bytes] | None = None,
        max_queue: int = 10000,
    ) -> None:
        self.namespace = namespace
        self.matches = matches
        self.transform = transform
        self.max_queue = max_queue
        self.lines: deque[bytes] = deque()
        self.ready = asyncio.Event()
        self.overflowed = False
        self.closed = False

    def offer(self, event: WatchEvent) -> None:
        if self.closed:
            return
        obj = event.entry.obj
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return
        event_type = event.type
        if self.matches is not None:
            now = self.matches(obj)
            if event_type == "MODIFIED":
                before = self.matches(event.previous) if event.previous is not None else now
                if now and not before:
                    event_type = "ADDED"
                elif before and not now:
                    event_type = "DELETED"
                elif not now:
                    return
            elif not now:
                return
        if len(self.lines) >= self.max_queue:
            self.overflowed = True
            self.close()
            return
        self.lines.append(self.transform(event, event_type) if self.transform else event.line(event_type))
        self.ready.set()

    def push_line(self, line: bytes) -> None:
        self.lines.append(line)
        self.ready.set()

    def drain(self) -> list[bytes]:
        out = list(self.lines)
        self.lines.clear()
        self.ready.clear()
        return out

    def close(self) -> None:
        self.closed = True
        self.ready.set()


class Store:
    """See module docstring."""

    def __init__(
        self,
        *,
        history_limit: int = 10000,
        history_seconds: float | None = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.history_limit = history_limit
        self.history_seconds = history_seconds
        self.clock = clock
        self.rv = 0
        self._tables: dict[StorageKey, dict[ObjectKey, Entry]] = {}
        self._history: dict[StorageKey, deque[WatchEvent]] = {}
        self._compacted: dict[StorageKey, int] = {}
        self._watchers: dict[StorageKey, set[Watcher]] = {}
        self.uids: dict[str, tuple[StorageKey, ObjectKey]] = {}
        self.dependents: dict[str, set[tuple[StorageKey, ObjectKey]]] = {}
        # called with (storage key, object key) when a stored object's set of owner uids changes to a non-empty one
        # (the registry's garbage collector checks whether those owners exist: sim/registry.py)
        self.owners_changed: Callable[[StorageKey, ObjectKey], None] | None = None

    # ------------------------------------------------------------------ reads
    def table(self, key: StorageKey) -> dict[ObjectKey, Entry]:
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = {}
        return table

    def get(self, key: StorageKey, namespace: str, name: str) -> Entry | None:
        return self._tables.get(key, {}).get((namespace, name))

    def entries(self, key: StorageKey, namespace: str | None = None) -> list[Entry]:
        """Entries sorted by (namespace, name); all namespaces when namespace is None."""
        table = self._tables.get(key, {})
        if namespace is None:
            return [table[k] for k in sorted(table)]
        return [table[k] for k in sorted(k for k in table if k[0] == namespace)]

    def count(self, key: StorageKey) -> int:
        return len(self._tables.get(key, {}))

    # ------------------------------------------------------------------ writes
    def put(self, key: StorageKey, obj: dict[str, Any], *, previous: Entry | None) -> Entry:
        """Store obj (ADDED when previous is None, else MODIFIED) under the next resourceVersion."""
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        entry = Entry.of(obj)
        okey = (meta.get("namespace") or "", meta["name"])
        self.table(key)[okey] = entry
        uid = meta.get("uid")
        if uid:
            self.uids[uid] = (key, okey)
        owners_changed = self._index_owners(key, okey, previous.obj if previous else None, obj)
        self._emit(
            key,
            WatchEvent(
                self.rv, "MODIFIED" if previous else "ADDED", entry, previous.obj if previous else None, self.clock()
            ),
        )
        if owners_changed and self.owners_changed is not None:
            self.owners_changed(key, okey)
        return entry

    def remove(self, key: StorageKey, namespace: str, name: str) -> Entry | None:
        """Delete an object: a DELETED event carrying the object at a new resourceVersion."""
        table = self._tables.get(key, {})
        current = table.pop((namespace, name), None)
        if current is None:
            return None
        self.rv += 1
        obj = current.copy()
        obj["metadata"]["resourceVersion"] = str(self.rv)
        entry = Entry.of(obj)
        uid = obj["metadata"].get("uid")
        if uid:
            self.uids.pop(uid, None)
        self._index_owners(key, (namespace, name), current.obj, None)
        self._emit(key, WatchEvent(self.rv, "DELETED", entry, current.obj, self.clock()))
        return entry

    def drop_storage(self, key: StorageKey) -> None:
        """Forget a whole storage key (a deleted CRD), closing its watchers."""
        for entry in list(self._tables.get(key, {}).values()):
            meta = entry.obj["metadata"]
            self.remove(key, meta.get("namespace") or "", meta["name"])
        for watcher in self._watchers.pop(key, set()):
            watcher.close()
        self._tables.pop(key, None)
        self._history.pop(key, None)
        self._compacted.pop(key, None)

    def _index_owners(
        self, key: StorageKey, okey: ObjectKey, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> bool:
        """Keep `dependents` current; True when the object now has owners it did not have before."""
        old_owners = {r.get("uid") for r in (old or {}).get("metadata", {}).get("ownerReferences") or []}
        new_owners = {r.get("uid") for r in (new or {}).get("metadata", {}).get("ownerReferences") or []}
        if old_owners == new_owners:
            return False
        ref = (key, okey)
        for uid in old_owners - new_owners:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self.dependents[uid]
        for uid in new_owners - old_owners:
            if uid:
                self.dependents.setdefault(uid, set()).add(ref)
        return bool(new_owners - old_owners)

    # ------------------------------------------------------------------ watch
    def _emit(self, key: StorageKey, event: WatchEvent) -> None:
        history = self._history.get(key)
        if history is None:
            history = self._history[key] = deque()
        if len(history) >= self.history_limit:
            self._compacted[key] = history.popleft().rv
        history.append(event)
        self._compact_by_age(key)
        watchers = self._watchers.get(key)
        if watchers:
            for watcher in tuple(watchers):
                watcher.offer(event)
                if watcher.closed:
                    watchers.discard(watcher)

    def _compact_by_age(self, key: StorageKey) -> None:
        """Drop the events older than history_seconds (the newest one always stays: it is the list's horizon)."""
        if self.history_seconds is None:
            return
        history = self._history.get(key)
        if not history:
            return
        horizon = self.clock() - self.history_seconds
        while len(history) > 1 and history[0].at < horizon:
            self._compacted[key] = history.popleft().rv

    def compacted_through(self, key: StorageKey) -> int:
        """The newest resourceVersion of this key that history no longer holds (0: nothing compacted yet)."""
        self._compact_by_age(key)
        return self._compacted.get(key, 0)

    def snapshot(self, key: StorageKey, namespace: str | None, rv: int) -> list[Entry] | None:
        """Entries (sorted by namespace, name) as they were at resourceVersion rv; None when history is too short."""
        if rv < self.compacted_through(key):
            return None
        table = dict(self._tables.get(key, {}))
        for event in reversed(self._history.get(key, ())):
            if event.rv <= rv:
                break
            meta = event.entry.obj["metadata"]
            okey = (meta.get("namespace") or "", meta["name"])
            if event.type == "ADDED":
                table.pop(okey, None)
            elif event.previous is not None:
                table[okey] = Entry.of(event.previous)
        keys = sorted(k for k in table if namespace is None or k[0] == namespace)
        return [table[k] for k in keys]

    def history_since(self, key: StorageKey, rv: int) -> list[WatchEvent] | None:
        if rv < self.compacted_through(key):
            return None
        history = self._history.get(key, ())
        if not history or history[0].rv > rv:
            return list(history)
        # binary search for the first event after rv
        items = list(history)
        lo, hi = 0, len(items)
        while lo < hi:
            mid = (lo + hi) // 2
            if items[mid].rv <= rv:
                lo = mid + 1
            else:
                hi = mid
        return items[lo:]

    def oldest_retained(self, key: StorageKey) -> int:
        return self._compacted.get(key, 0)

    def subscribe(self, key: StorageKey, watcher: Watcher) -> None:
        self._watchers.setdefault(key, set()).add(watcher)

    def unsubscribe(self, key: StorageKey, watcher: Watcher) -> None:
        self._watchers.get(key, set()).discard(watcher)

    def close_all_watchers(self) -> None:
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.close()
        self._watchers.clear()

    def all_watchers(self) -> Iterable[Watcher]:
        """The watch streams' watchers (not the server's internal observers, e.g. rbac.py's cache invalidator)."""
        for watchers in self._watchers.values():
            yield from (w for w in watchers if not w.internal)
