"""Supervision of long-running tasks: an unexpected end is logged with context and the task restarts with backoff.

Contract:
- `Supervisor(initial_backoff=0.1, max_backoff=30.0, clock=time.monotonic)`; `start(name, factory, vital=True)`
  runs `await factory()` (called again for each restart) until the supervisor stops. An exception or a return is
  logged with the name, failure count and traceback; the task is "down" for an exponential backoff (reset after
  `healthy_after` seconds of running) and restarted. Cancellation is never swallowed.
- `down()`: the vital tasks down now; `status()`: per task {up, restarts, lastError}; `restarts` (a metric).
- `await stop(names=None)` cancels and waits (again for a task that swallowed it); `stop_now(names)` only cancels,
  synchronously (on losing leadership). More: docs/modules.md#runtimesupervisorpy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

Factory = Callable[[], Coroutine[Any, Any, Any]]


@dataclass
class _Supervised:
    name: str
    factory: Factory
    vital: bool
    task: asyncio.Task[None] | None = None
    up: bool = True
    restarts: int = 0
    last_error: str = ""
    failures_in_a_row: int = 0


class Supervisor:
    def __init__(
        self,
        *,
        initial_backoff: float = 0.1,
        max_backoff: float = 30.0,
        healthy_after: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.healthy_after = healthy_after
        self._clock = clock
        self._tasks: dict[str, _Supervised] = {}
        self.restarts = 0

    def start(self, name: str, factory: Factory, *, vital: bool = True) -> asyncio.Task[None]:
        old = self._tasks.get(name)
        if old is not None and old.task is not None and not old.task.done():
            raise RuntimeError(f"task {name!r} is already supervised")
        entry = _Supervised(name, factory, vital)
        entry.task = asyncio.create_task(self._run(entry), name=name)
        self._tasks[name] = entry
        return entry.task

    async def _run(self, entry: _Supervised) -> None:
        while True:
            started = self._clock()
            entry.up = True
            try:
                await entry.factory()
                error = "returned (a long-running task never does)"
                log.error("task %s %s; restarting", entry.name, error)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                log.exception(
                    "task %s failed (%d in a row, %d restarts so far): %s; restarting",
                    entry.name,
                    entry.failures_in_a_row + 1,
                    entry.restarts,
                    error,
                )
            entry.up = False
            entry.last_error = error
            if self._clock() - started >= self.healthy_after:
                entry.failures_in_a_row = 0
            entry.failures_in_a_row += 1
            delay = min(self.max_backoff, self.initial_backoff * 2 ** (entry.failures_in_a_row - 1))
            await asyncio.sleep(delay)
            entry.restarts += 1
            self.restarts += 1

    def down(self) -> list[str]:
        return [
            entry.name
            for entry in self._tasks.values()
            if entry.vital and (not entry.up or (entry.task is not None and entry.task.done()))
        ]

    def status(self) -> dict[str, dict[str, Any]]:
        return {
            entry.name: {"up": entry.up, "restarts": entry.restarts, "lastError": entry.last_error}
            for entry in self._tasks.values()
        }

    def names(self) -> list[str]:
        return list(self._tasks)

    def stop_now(self, names: Iterable[str] | None = None) -> list[asyncio.Task[None]]:
        chosen = list(self._tasks) if names is None else [name for name in names if name in self._tasks]
        tasks = []
        for name in chosen:
            entry = self._tasks.pop(name)
            if entry.task is not None:
                entry.task.cancel()
                tasks.append(entry.task)
        return tasks

    async def stop(self, names: Iterable[str] | None = None) -> None:
        await finish_cancelled(self.stop_now(names))


async def finish_cancelled(tasks: Iterable[asyncio.Task[Any]], *, every: float = 0.05) -> None:
    """Wait until the tasks are done, cancelling them again while they are not: a cancellation can be swallowed
    (Python 3.11's asyncio.wait_for returns the inner result when it completes as the cancel arrives), and a
    task that survives it would go on working after its replica stopped leading."""
    for task in tasks:
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=every)
        if not task.cancelled():
            with contextlib.suppress(BaseException):
                task.result()
