"""kube-scheduler's scheduling queue (scheduling_queue.go `PriorityQueue`), in virtual time, for the faithful baselines.

Contract: `SchedulingQueue(sort_key)` holds pods in activeQ (ordered by `sort_key`), backoffQ (1 s doubling to 10 s
from the last failure) and unschedulablePods, as upstream.
- `add(pod, now)`; `pop(now)`: activeQ's head, else the backoffQ pod due first; a pod is tried at most once per
  instant (activated again, it waits `RETRY_SECONDS`); `take(pod, now)`: PopSpecificPod.
- `failed(pod, now, rejector)`: to backoffQ if a registered cluster event happened during the attempt, else to
  unschedulablePods; `move_all(now, event, exclude)`: QueueingHints by the rejecting plugin's registrations.
- `activate(pods, now)`; `flush(now)`: completed backoffs and pods unschedulable for over 5 min;
  `next_wakeup()`; `remove(pod)`. More: docs/modules.md#whatifkubequeuepy.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Collection, Iterable
from typing import Any

INITIAL_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 10.0
MAX_IN_UNSCHEDULABLE_SECONDS = 300.0  # podMaxInUnschedulablePodsDuration
FLUSH_PERIOD_SECONDS = 30.0  # flushUnschedulablePodsLeftover's period
RETRY_SECONDS = 1.0  # a pod activated again in the instant it was tried is tried again this much later

# cluster events (framework/events.go) and what the plugins that reject pods register for them (EventsToRegister)
POD_DELETE = "AssignedPodDelete"  # a bound or assumed pod deleted (completion, eviction, a Permit rejection)
NODE_CHANGE = "NodeAdd/Update"  # a node comes back
POD_GROUP = "PodGroupAdd/Update"  # scheduler-plugins' PodGroup created or its status changed
FIT = "NodeResourcesFit"  # Filter rejections: fit.go isSchedulableAfterPodEvent / isSchedulableAfterNodeChange
COSCHEDULING = "Coscheduling"  # scheduler-plugins coscheduling.go EventsToRegister: Pod Add, PodGroup Add|Update
ANY = ""  # no EnqueueExtensions (DefaultPreemption rejecting a waiting victim): every event
REGISTERED = {FIT: (POD_DELETE, NODE_CHANGE), COSCHEDULING: (POD_GROUP,), ANY: (POD_DELETE, NODE_CHANGE, POD_GROUP)}

SortKey = Callable[[str, float], tuple[Any, ...]]


@functools.cache
def backoff_duration(attempts: int) -> float:
    """scheduling_queue.go `calculateBackoffDuration`: initial, doubled for every attempt after the first, capped."""
    duration = INITIAL_BACKOFF_SECONDS
    for _ in range(1, attempts):
        if duration > MAX_BACKOFF_SECONDS - duration:
            return MAX_BACKOFF_SECONDS
        duration += duration
    return duration


class SchedulingQueue:
    """Indexes (none changes a decision): each place keeps a heap of entries, one live per pod (`entry`: the seq of
    the pod's live entry; an entry whose seq or place no longer matches is stale and skipped): activeQ by sort key,
    backoffQ by (backoff end, pod), unschedulablePods by (timestamp, pod). A pod's backoff end and timestamp do not
    change while it waits (both change only when it is added, popped or fails), so each heap's head is its minimum;
    every sort key ends with the pod's name, so the order in which pods are pushed never matters."""

    def __init__(self, sort_key: SortKey) -> None:
        self.sort_key = sort_key
        self.active: list[tuple[tuple[Any, ...], int, str]] = []
        self.backoffq: list[tuple[float, str, int]] = []
        self.unschedq: dict[str, list[tuple[float, str, int]]] = {r: [] for r in REGISTERED}  # per rejector
        self.rejector: dict[str, str] = {}  # unschedulable pod -> the plugin that rejected it
        self.seq = 0
        self.where: dict[str, str] = {}  # pod -> "active" | "backoff" | "unschedulable" (absent: in flight)
        self.entry: dict[str, int] = {}  # pod -> seq of its live entry
        self.timestamp: dict[str, float] = {}
        self.attempts: dict[str, int] = {}
        self.last_attempt: dict[str, float] = {}
        self.moves = dict.fromkeys((POD_DELETE, NODE_CHANGE, POD_GROUP), 0)  # move requests so far, per event
        self.popped_at: dict[str, dict[str, int]] = {}  # pod -> `moves` when it was popped
        self.now = 0.0  # the instant of the last pop

    def __len__(self) -> int:
        return len(self.where)

    def _live(self, pod: str, where: str, seq: int) -> bool:
        return self.where.get(pod) == where and self.entry.get(pod) == seq

    def _push_active(self, pod: str) -> None:
        self.seq += 1
        self.where[pod] = "active"
        self.entry[pod] = self.seq
        heapq.heappush(self.active, (self.sort_key(pod, self.timestamp[pod]), self.seq, pod))

    def _push_backoff(self, pod: str) -> None:
        self.seq += 1
        self.where[pod] = "backoff"
        self.entry[pod] = self.seq
        heapq.heappush(self.backoffq, (self.backoff_until(pod), pod, self.seq))

    def _push_unschedulable(self, pod: str, rejector: str) -> None:
        self.seq += 1
        self.where[pod] = "unschedulable"
        self.entry[pod] = self.seq
        self.rejector[pod] = rejector
        heapq.heappush(self.unschedq[rejector], (self.timestamp[pod], pod, self.seq))

    def add(self, pod: str, now: float) -> None:
        self.timestamp[pod] = now
        self.attempts[pod] = 0
        self._push_active(pod)

    def backoff_until(self, pod: str) -> float:
        return self.timestamp[pod] + backoff_duration(self.attempts[pod])

    def pop(self, now: float) -> str | None:
        self.now = now
        found = None
        deferred = []
        while self.active:
            item = heapq.heappop(self.active)
            pod = item[2]
            if not self._live(pod, "active", item[1]):
                continue  # a stale entry
            if self.last_attempt.get(pod) == now:
                deferred.append(item)  # tried at this instant already: at the next retry
                continue
            found = pod
            break
        for item in deferred:
            heapq.heappush(self.active, item)
        if found is not None:
            return self._popped(found, now)
        # the backoffQ pod whose backoff ends first, among those not tried at this instant
        waiting = []
        while self.backoffq:
            entry = heapq.heappop(self.backoffq)
            pod = entry[1]
            if not self._live(pod, "backoff", entry[2]):
                continue
            if self.last_attempt.get(pod) == now:
                waiting.append(entry)
                continue
            found = pod
            break
        for entry in waiting:
            heapq.heappush(self.backoffq, entry)
        return None if found is None else self._popped(found, now)

    def take(self, pod: str, now: float) -> None:
        """PopSpecificPod: the pod leaves the queue from wherever it waits (a pod group cycle takes its siblings),
        counting an attempt."""
        if pod in self.where:
            self._popped(pod, now)

    def _popped(self, pod: str, now: float) -> str:
        del self.where[pod]
        self.entry.pop(pod, None)
        self.attempts[pod] += 1
        self.last_attempt[pod] = now
        self.popped_at[pod] = dict(self.moves)
        return pod

    def failed(self, pod: str, now: float, rejector: str = FIT) -> None:
        self.timestamp[pod] = now
        popped = self.popped_at.get(pod, self.moves)
        if any(self.moves[e] > popped[e] for e in REGISTERED[rejector]):
            self._to_backoff_or_active(pod, now)
        else:
            self._push_unschedulable(pod, rejector)

    def _to_backoff_or_active(self, pod: str, now: float) -> None:
        if self.backoff_until(pod) > now:
            self._push_backoff(pod)
        else:
            self._push_active(pod)

    def move_all(self, now: float, event: str = POD_DELETE, exclude: Collection[str] = ()) -> None:
        self.moves[event] += 1
        for rejector, registered in REGISTERED.items():
            if event not in registered or not self.unschedq[rejector]:
                continue
            entries, self.unschedq[rejector] = self.unschedq[rejector], []
            kept = []
            for entry in entries:
                pod, seq = entry[1], entry[2]
                if not self._live(pod, "unschedulable", seq):
                    continue
                if pod in exclude:
                    kept.append(entry)
                else:
                    self._to_backoff_or_active(pod, now)
            for entry in kept:
                heapq.heappush(self.unschedq[rejector], entry)

    def activate(self, pods: Iterable[str], now: float) -> None:
        for pod in pods:
            if self.where.get(pod) in ("backoff", "unschedulable"):
                self._push_active(pod)

    def flush(self, now: float) -> None:
        due = []
        while self.backoffq and self.backoffq[0][0] <= now:
            _, pod, seq = heapq.heappop(self.backoffq)
            if self._live(pod, "backoff", seq):
                due.append(pod)
        leftover = []
        for heap in self.unschedq.values():
            while heap and now - heap[0][0] > MAX_IN_UNSCHEDULABLE_SECONDS:
                _, pod, seq = heapq.heappop(heap)
                if self._live(pod, "unschedulable", seq):
                    leftover.append(pod)
        for pod in due:
            self._push_active(pod)
        for pod in leftover:
            self._to_backoff_or_active(pod, now)

    def _head(self, heap: list[tuple[Any, ...]], where: str) -> tuple[Any, ...] | None:
        """The heap's first live entry (stale entries above it dropped)."""
        while heap:
            item = heap[0]
            pod, seq = (item[2], item[1]) if where == "active" else (item[1], item[2])
            if self._live(pod, where, seq):
                return item
            heapq.heappop(heap)
        return None

    def next_wakeup(self) -> float | None:
        times = []
        if self._head(self.active, "active") is not None:  # deferred: tried at this instant already
            times.append(self.now + RETRY_SECONDS)
        head = self._head(self.backoffq, "backoff")
        if head is not None:
            times.append(head[0])
        for heap in self.unschedq.values():
            head = self._head(heap, "unschedulable")
            if head is not None:  # the first 30 s tick after the 5 min
                due = head[0] + MAX_IN_UNSCHEDULABLE_SECONDS
                times.append((math.floor(due / FLUSH_PERIOD_SECONDS) + 1) * FLUSH_PERIOD_SECONDS)
        return min(times, default=None)

    def remove(self, pod: str) -> None:
        tables = (self.where, self.entry, self.timestamp, self.attempts, self.last_attempt, self.popped_at)
        for table in (*tables, self.rejector):
            table.pop(pod, None)
