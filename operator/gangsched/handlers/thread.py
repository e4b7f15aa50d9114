"""One operator replica in a thread of its own, with its own event loop: how the demo and the tests embed it.

Why: Kopf owns the event loop it runs in. When it stops, it cancels every task created while it ran, so an
emulator (or anything else) sharing that loop would lose its connection and watch tasks. In its own thread the
replica behaves exactly as `gangsched run` does in its own process.

Contract:
- `OperatorThread(kubeconfig=..., config=..., identity=...)`; `await start()` returns once the replica has
  listed everything and is ready (or raises what stopped it); `await stop()` stops Kopf and the replica's tasks
  and joins the thread (idempotent). `operator` is the replica's `Operator`: read its counters from any thread;
  call into it with `call(fn)`, which runs `fn()` on the replica's loop and returns its result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import TypeVar

from gangsched.handlers.main import connect, run_kopf
from gangsched.models.config import OperatorConfig
from gangsched.runtime.operator import Operator

T = TypeVar("T")


class OperatorThread:
    def __init__(self, *, kubeconfig: str, config: OperatorConfig, identity: str, start_timeout: float = 30.0) -> None:
        self.kubeconfig = kubeconfig
        self.config = config
        self.identity = identity
        self.start_timeout = start_timeout
        self._operator: Operator | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=f"operator-{identity}", daemon=True)

    @property
    def operator(self) -> Operator:
        if self._operator is None:
            raise RuntimeError("the operator thread has not started")
        return self._operator

    async def start(self) -> Operator:
        self._thread.start()
        if not await asyncio.to_thread(self._ready.wait, self.start_timeout):
            raise TimeoutError(f"operator {self.identity} not ready within {self.start_timeout}s")
        if self._error is not None:
            raise self._error
        return self.operator

    async def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread.is_alive():
            await asyncio.to_thread(self._thread.join, 60)

    def call(self, fn: Callable[[], T]) -> T:
        """Run fn() on the replica's own loop (thread-safe access to its state) and return the result."""
        if self._loop is None:
            raise RuntimeError("the operator thread has not started")
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the caller
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return done.result(timeout=30)

    def _main(self) -> None:
        try:
            asyncio.run(self._body())
        except BaseException as exc:  # reported by start() when it happens before ready
            self._error = exc
        finally:
            self._ready.set()

    async def _body(self) -> None:
        client = await connect(self.kubeconfig, self.config, self.identity)
        try:
            self._operator = Operator(client=client, config=self.config, identity=self.identity)
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            kopf_task = asyncio.create_task(run_kopf(self._operator, stop_flag=self._stop))
            ready = asyncio.ensure_future(self._operator.ready.wait())
            await asyncio.wait({kopf_task, ready}, return_when=asyncio.FIRST_COMPLETED)
            self._ready.set()
            await kopf_task
        finally:
            await client.close()
