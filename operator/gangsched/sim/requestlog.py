"""The emulator's request log and its "hold every request" switch (test instruments, not API semantics).

Contract:
- `RequestLog.middleware` (an aiohttp middleware the ApiServer installs) appends one `LoggedRequest` (method,
  path, query string, wall time, monotonic time, User-Agent) per request when `enabled`, and calls every
  `listeners` callable with it synchronously, before the request is handled (a test can act at the exact moment a
  request arrives, e.g. freeze the process that sent it). Off by default: the hot paths pay one attribute test.
- `hold(seconds)` makes every request that arrives within the next `seconds` wait until they are over before it
  is handled (an overloaded or partitioned API server: requests stall, then are answered); watches already
  streaming keep streaming. `hold(0)` ends a hold early.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    method: str
    path: str
    query: str
    time: float
    monotonic: float
    user_agent: str


@dataclass
class RequestLog:
    enabled: bool = False
    entries: list[LoggedRequest] = field(default_factory=list)
    listeners: list[Callable[[LoggedRequest], None]] = field(default_factory=list)
    _hold_until: float = 0.0

    def hold(self, seconds: float) -> None:
        self._hold_until = time.monotonic() + seconds

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.enabled:
            entry = LoggedRequest(
                request.method,
                request.path,
                request.query_string,
                time.time(),
                time.monotonic(),
                request.headers.get("User-Agent", ""),
            )
            self.entries.append(entry)
            for listener in list(self.listeners):
                listener(entry)
        if self._hold_until:
            left = self._hold_until - time.monotonic()
            if left > 0:
                await asyncio.sleep(left)
            else:
                self._hold_until = 0.0
        return await handler(request)
