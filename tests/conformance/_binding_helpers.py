"""Helpers of the binding / pod lifecycle / namespace conformance tests: raw HTTP (to see a Status body's code,
reason and details as a client would) and small object builders. Tests wait on real conditions only."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from gangsched.sim.apiserver import ApiServer
from tests.builders import pod_manifest


async def call(
    server: ApiServer, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
) -> tuple[int, dict[str, Any]]:
    """One request; (HTTP status, parsed JSON body)."""
    data = orjson.dumps(body) if body is not None else None
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.url + path, data=data, headers={"Content-Type": content_type}) as response,
    ):
        raw = await response.read()
        return response.status, (orjson.loads(raw) if raw else {})


def pod(name: str, **spec: Any) -> dict[str, Any]:
    """`pod_manifest` with this suite's image (`annotations`, `labels`, `finalizers` go to the metadata)."""
    return pod_manifest(name, image="busybox:1", **spec)


def binding(name: str, node: str = "machine", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, **meta},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


async def eventually(probe: Callable[[], Awaitable[Any]], *, timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        last = await probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s; last value: {last!r}")
        await asyncio.sleep(0.02)
