"""The supervisor (runtime/supervisor.py): a long-running task that fails is logged with its name and restarted
with exponential backoff; a vital task in backoff is reported down (what /livez shows); cancellation ends it."""

from __future__ import annotations

import asyncio
import itertools
import logging

import pytest

from gangsched.runtime.supervisor import Supervisor


async def test_a_failing_task_is_logged_and_restarted_with_backoff(caplog: pytest.LogCaptureFixture) -> None:
    runs: list[float] = []
    release = asyncio.Event()
    fourth_run = asyncio.Event()

    async def flaky() -> None:
        runs.append(asyncio.get_running_loop().time())
        if len(runs) <= 3:
            raise RuntimeError(f"boom {len(runs)}")
        fourth_run.set()
        await release.wait()  # the fourth run stays up

    sup = Supervisor(initial_backoff=0.05, max_backoff=1.0)
    with caplog.at_level(logging.ERROR, logger="gangsched.runtime.supervisor"):
        sup.start("flaky", flaky)
        await asyncio.wait_for(fourth_run.wait(), 10)
    assert sup.restarts == 3
    assert sup.status()["flaky"] == {"up": True, "restarts": 3, "lastError": "RuntimeError: boom 3"}
    assert not sup.down()
    gaps = [b - a for a, b in itertools.pairwise(runs)]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and gaps[2] >= 0.2  # doubling backoff
    failures = [r for r in caplog.records if "task flaky failed" in r.getMessage()]
    assert len(failures) == 3 and all(r.exc_info for r in failures)  # the traceback is logged, with the task's name
    await sup.stop()
    assert sup.names() == []


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


async def test_a_task_that_returns_is_restarted_too_and_cancellation_is_not_swallowed() -> None:
    count = 0
    third_run = asyncio.Event()

    async def returns() -> None:
        nonlocal count
        count += 1
        if count == 3:
            third_run.set()

    sup = Supervisor(initial_backoff=0.01)
    task = sup.start("returns", returns)
    await asyncio.wait_for(third_run.wait(), 10)
    sup.stop_now(["returns"])
    with pytest.raises(asyncio.CancelledError):
        await task
