"""What the operator did, one INFO line per gang decision, rate-limited: what an operator of the scheduler reads in
its log (issue 27 item 5). Events and metrics carry the rest.

Contract:
- `ActivityLog(logger, *, limit=20, interval=60.0, clock=time.monotonic)`; `plan(plan)` logs, for one carried-out
  Plan: each gang whose quorum it binds ("gang NS/NAME scheduled: N members bound or binding (tier T)"), each
  preemption ("gang NS/NAME preempts K pods: a, b, c, ..." , at most five named), each gang timed out ("gang NS/NAME
  timed out: its waiting time ended before quorum; N members released").
- Rate limit: at most `limit` lines per `interval` seconds (a window starting with its first line); the lines beyond
  are counted, and the next line logged after the window (or `flush()`, called after every scheduling round) first
  says "K gang lines suppressed in the last Ns (rate limit)". Nothing is lost silently.
- Pure bookkeeping besides the logger: the clock comes in as an argument (tests use a fake one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from gangsched.core import Plan

NAMED = 5  # victims named in a preemption line


def _names(keys: Sequence[str]) -> str:
    shown = ", ".join(keys[:NAMED])
    return shown + (f", ... ({len(keys) - NAMED} more)" if len(keys) > NAMED else "")


class ActivityLog:
    def __init__(
        self,
        logger: logging.Logger,
        *,
        limit: int = 20,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._limit = limit
        self._interval = interval
        self._clock = clock
        self._window_start: float | None = None
        self._lines = 0
        self.suppressed = 0

    def plan(self, plan: Plan) -> None:
        for gang in plan.satisfied:
            status = plan.gang_status.get(gang)
            members = f"{status.scheduled} members bound or binding" if status is not None else "quorum binding"
            tier = f" (tier {status.tier})" if status is not None and status.tier is not None else ""
            self._line("gang %s scheduled: %s%s", gang, members, tier)
        for gang, victims in plan.preemptions.items():
            self._line("gang %s preempts %d pods: %s", gang, len(victims), _names(victims))
        for timeout in plan.timeouts:
            self._line(
                "gang %s timed out: its waiting time ended before quorum; %d members released",
                timeout.gang_key,
                len(timeout.pods),
            )

    def flush(self) -> None:
        """Say how many lines the last window suppressed, once it is over."""
        if self._window_start is not None and self._clock() - self._window_start >= self._interval:
            self._close_window()

    def _close_window(self) -> None:
        if self.suppressed:
            self._log.info(
                "%d gang lines suppressed in the last %gs (rate limit: %d per window)",
                self.suppressed,
                self._interval,
                self._limit,
            )
        self._window_start, self._lines, self.suppressed = None, 0, 0

    def _line(self, message: str, *args: object) -> None:
        self.flush()
        if self._window_start is None:
            self._window_start = self._clock()
        if self._lines >= self._limit:
            self.suppressed += 1
            return
        self._lines += 1
        self._log.info(message, *args)
