"""A tiny scripted HTTP server for client and writer fault tests: real HTTP on 127.0.0.1, no monkeypatching.

`server` (fixture) -> (Script, base URL); `script.answers` is a list of handlers taken in turn (the last one
repeats); `script.seen` / `script.auth` record each request and its Authorization header. `FakeTime` is a clock
whose `sleep` only moves it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from tests.fake_time import FakeTime

__all__ = ["OK", "FakeTime", "Script", "json_answer", "server", "text"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Script:
    """A server whose answers to one path are scripted: each request takes the next handler (the last repeats)."""

    def __init__(self) -> None:
        self.answers: list[Handler] = []
        self.seen: list[web.Request] = []
        self.auth: list[str | None] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(request)
        self.auth.append(request.headers.get("Authorization"))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return await answer(request)


def text(status: int, body: str, content_type: str = "text/plain", **headers: str) -> Handler:
    async def answer(_: web.Request) -> web.StreamResponse:
        return web.Response(status=status, body=body.encode(), content_type=content_type, headers=headers)

    return answer


def json_answer(status: int, obj: Any, **headers: str) -> Handler:
    return text(status, orjson.dumps(obj).decode(), "application/json", **headers)


OK = json_answer(200, {"kind": "Pod", "metadata": {"name": "p"}})


@pytest.fixture
async def server() -> AsyncIterator[tuple[Script, str]]:
    script = Script()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", script.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield script, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
