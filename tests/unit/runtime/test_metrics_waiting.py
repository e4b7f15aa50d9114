"""`gangsched_oldest_waiting_gang_seconds`: what the "gangs waiting longer than N" alert reads
(deploy/components/monitoring/prometheusrule.yaml). `gangsched_gang_wait_seconds` is observed only when a gang
binds, so a gang that never binds never shows there; this gauge shows it while it waits.

Oracle: the gauge's contract (runtime/metrics.py): the age, from its first member's creation (the start
`gang_wait_seconds` uses), of the longest-waiting gang that has members pending and has never reached its quorum;
0 when there is none.
"""

from __future__ import annotations

from gangsched.core.memory.gangs import GangState
from gangsched.runtime.metrics import Metrics, oldest_waiting_seconds


def _gang(key: str, *, created: float, pending: int, satisfied: bool = False) -> GangState:
    gang = GangState(key)
    gang.member_created = created
    gang.pending = {f"{key}-{i}": None for i in range(pending)}
    gang.satisfied = satisfied
    return gang


def test_the_longest_waiting_unsatisfied_gang_counts() -> None:
    gangs = [
        _gang("ns/a", created=900.0, pending=2),
        _gang("ns/b", created=400.0, pending=1),  # the oldest waiting: 600 s
        _gang("ns/c", created=100.0, pending=1, satisfied=True),  # quorum reached: a late member is not a gang waiting
        _gang("ns/d", created=50.0, pending=0),  # nothing pending
    ]
    assert oldest_waiting_seconds(gangs, now=1000.0) == 600.0


def test_no_gang_waiting_is_zero_and_clock_skew_is_never_negative() -> None:
    assert oldest_waiting_seconds([], now=1000.0) == 0.0
    assert oldest_waiting_seconds([_gang("ns/a", created=float("inf"), pending=1)], now=1000.0) == 0.0
    assert oldest_waiting_seconds([_gang("ns/a", created=1005.0, pending=1)], now=1000.0) == 0.0


def test_the_gauge_is_exported() -> None:
    metrics = Metrics()
    metrics.oldest_waiting_gang_seconds.set(42.0)
    assert "gangsched_oldest_waiting_gang_seconds 42.0" in metrics.render().decode()
