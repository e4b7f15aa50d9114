"""The supervisor (runtime/supervisor.py): a long-running task that fails is logged with its name and restarted
with exponential backoff; a vital task in backoff is reported down (what /livez shows); cancellation ends it."""

from __future__ import annotations

import asyncio
import itertools
import logging

import pytest

from gangsched.runtime.supervisor import Supervisor


@pytest.mark.looptime  # virtual time: the backoffs (1 + 2 + 4 + 8 s) take no wall time and are exact
async def test_a_failing_task_is_logged_and_restarted_with_backoff(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    runs: list[float] = []
    release, fifth = asyncio.Event(), asyncio.Event()

    async def flaky() -> None:
        runs.append(loop.time())
        if len(runs) == 5:
            fifth.set()
        if len(runs) <= 4:
            raise RuntimeError(f"boom {len(runs)}")
        await release.wait()  # the fifth run stays up

    sup = Supervisor(initial_backoff=1.0, max_backoff=8.0, clock=loop.time)
    with caplog.at_level(logging.ERROR, logger="gangsched.runtime.supervisor"):
        sup.start("flaky", flaky)
        await fifth.wait()
    assert sup.restarts == 4
    assert sup.status()["flaky"] == {"up": True, "restarts": 4, "lastError": "RuntimeError: boom 4"}
    assert not sup.down()
    gaps = [b - a for a, b in itertools.pairwise(runs)]
    assert gaps == pytest.approx([1.0, 2.0, 4.0, 8.0])  # doubling backoff, up to max_backoff
    failures = [r for r in caplog.records if "task flaky failed" in r.getMessage()]
    assert len(failures) == 4 and all(r.exc_info for r in failures)  # the traceback is logged, with the task's name
    await sup.stop()
    assert sup.names() == []


@pytest.mark.looptime
async def test_the_backoff_is_capped_and_starts_over_after_a_healthy_run() -> None:
    loop = asyncio.get_running_loop()
    runs: list[float] = []
    seventh = asyncio.Event()

    async def flaky() -> None:
        runs.append(loop.time())
        if len(runs) == 7:
            seventh.set()
            await asyncio.Event().wait()
        if len(runs) == 5:
            await asyncio.sleep(60.0)  # up for healthy_after: the next failure counts as the first in a row
        raise RuntimeError("boom")

    sup = Supervisor(initial_backoff=1.0, max_backoff=4.0, healthy_after=60.0, clock=loop.time)
    sup.start("flaky", flaky)
    await seventh.wait()
    await sup.stop()
    gaps = [b - a for a, b in itertools.pairwise(runs)]
    assert gaps == pytest.approx([1.0, 2.0, 4.0, 4.0, 60.0 + 1.0, 2.0])


async def test_a_vital_task_is_down_while_it_waits_for_its_restart() -> None:
    failed = asyncio.Event()

    async def dies() -> None:
        failed.set()
        raise ValueError("bad")

    async def fine() -> None:
        await asyncio.Event().wait()

    sup = Supervisor(initial_backoff=30.0)
    sup.start("dies", dies)
    sup.start("optional", dies, vital=False)
    sup.start("fine", fine)
    await failed.wait()
    await asyncio.sleep(0)
    assert sup.down() == ["dies"]  # the non-vital one is not a liveness failure
    await sup.stop()


@pytest.mark.looptime
async def test_a_task_that_returns_is_restarted_too_and_cancellation_is_not_swallowed() -> None:
    count = 0
    third = asyncio.Event()

    async def returns() -> None:
        nonlocal count
        count += 1
        if count == 3:
            third.set()

    sup = Supervisor(initial_backoff=1.0)
    task = sup.start("returns", returns)
    await third.wait()
    sup.stop_now(["returns"])
    with pytest.raises(asyncio.CancelledError):
        await task
