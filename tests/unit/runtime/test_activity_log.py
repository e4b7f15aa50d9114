"""runtime/activity.py: one INFO line per gang scheduled, preempting or timed out, at most `limit` lines per window,
and the lines beyond counted and said once the window is over (nothing dropped silently). A fake clock."""

from __future__ import annotations

import logging

import pytest

from gangsched.core.memory.plan import GangStatus, GangTimeout, Plan
from gangsched.runtime.activity import ActivityLog

LOGGER = "test.activity"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.INFO]


def scheduled(*gangs: str) -> Plan:
    plan = Plan(satisfied=list(gangs))
    for gang in gangs:
        plan.gang_status[gang] = GangStatus(scheduled=4, reserved=0, pending=0, reason="Scheduled", message="", tier=1)
    return plan


def test_each_decision_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    activity = ActivityLog(logging.getLogger(LOGGER), clock=Clock())
    plan = scheduled("ns/train")
    plan.preemptions["ns/urgent"] = tuple(f"ns/low-{i}" for i in range(7))
    plan.timeouts.append(GangTimeout("ns/stuck", ("ns/stuck-0", "ns/stuck-1")))
    activity.plan(plan)
    assert messages(caplog) == [
        "gang ns/train scheduled: 4 members bound or binding (tier 1)",
        "gang ns/urgent preempts 7 pods: ns/low-0, ns/low-1, ns/low-2, ns/low-3, ns/low-4, ... (2 more)",
        "gang ns/stuck timed out: its waiting time ended before quorum; 2 members released",
    ]


def test_lines_beyond_the_limit_are_counted_and_said_after_the_window(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    clock = Clock()
    activity = ActivityLog(logging.getLogger(LOGGER), limit=3, interval=60.0, clock=clock)
    activity.plan(scheduled(*(f"ns/g{i}" for i in range(10))))
    assert len(messages(caplog)) == 3 and activity.suppressed == 7
    clock.now += 59.0
    activity.flush()  # the window is not over: nothing said yet
    assert len(messages(caplog)) == 3
    clock.now += 1.0
    activity.flush()
    assert messages(caplog)[3] == "7 gang lines suppressed in the last 60s (rate limit: 3 per window)"
    activity.plan(scheduled("ns/next"))  # a new window
    assert messages(caplog)[4].startswith("gang ns/next scheduled") and activity.suppressed == 0
    activity.flush()
    assert len(messages(caplog)) == 5  # nothing suppressed: no summary


def test_a_window_over_is_summarized_before_the_next_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    clock = Clock()
    activity = ActivityLog(logging.getLogger(LOGGER), limit=1, interval=10.0, clock=clock)
    activity.plan(scheduled("ns/a", "ns/b"))
    clock.now += 11.0
    activity.plan(scheduled("ns/c"))
    assert messages(caplog) == [
        "gang ns/a scheduled: 4 members bound or binding (tier 1)",
        "1 gang lines suppressed in the last 10s (rate limit: 1 per window)",
        "gang ns/c scheduled: 4 members bound or binding (tier 1)",
    ]
