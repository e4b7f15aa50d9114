"""The pod reflector's retry rule (k8s/reflector.py `WatchBackoff`, issue 22 item 11).

Oracle: client-go's reflector (k8s.io/client-go/tools/cache/reflector.go, NewReflectorWithOptions:
`wait.NewExponentialBackoffManager(800*time.Millisecond, 30*time.Second, 2*time.Minute, 2.0, 1.0, clock)`, and
apimachinery's wait/backoff.go `exponentialBackoffManagerImpl.getNextBackoff`: the delay doubles per backoff and
goes back to its initial value once `backoffResetDuration` (2 minutes) passed without one). Ours: the same
doubling with a smaller start (0.05 s) and cap (10 s), and progress measured per watch: a watch that delivered an
event, or stayed open `reset_after` (client-go's 2 minutes), resets the count before its own failure is counted.
Before, only a watch the server ended normally reset it, so watches cut after 30 events each climbed to 10 s.
No clock is read: the reflector hands in how long the watch was open (its clock is injectable).
"""

from __future__ import annotations

from gangsched.k8s.reflector import WatchBackoff


def test_failures_without_progress_double_up_to_the_cap() -> None:
    backoff = WatchBackoff(initial=0.05, maximum=10.0)
    delays = [backoff.after_failure(delivered=0, open_for=0.0) for _ in range(12)]
    assert delays[:4] == [0.05, 0.1, 0.2, 0.4]
    assert delays[-1] == 10.0 and max(delays) == 10.0


def test_a_watch_that_delivered_events_resets_the_backoff() -> None:
    """The issue's case: every watch is cut after 30 events; each retry waits the initial delay, not 10 s."""
    backoff = WatchBackoff(initial=0.05, maximum=10.0)
    for _ in range(10):
        backoff.after_failure(delivered=0, open_for=0.0)
    assert [backoff.after_failure(delivered=30, open_for=0.5) for _ in range(50)] == [0.05] * 50


def test_a_watch_open_for_reset_after_resets_the_backoff_a_shorter_one_does_not() -> None:
    backoff = WatchBackoff(initial=0.05, maximum=10.0, reset_after=120.0)
    for _ in range(10):
        backoff.after_failure(delivered=0, open_for=0.0)
    assert backoff.after_failure(delivered=0, open_for=119.0) == 10.0  # idle and short-lived: no progress
    assert backoff.after_failure(delivered=0, open_for=120.0) == 0.05  # open 2 minutes, as client-go resets


def test_reset_after_a_normal_end() -> None:
    backoff = WatchBackoff()
    for _ in range(5):
        backoff.after_failure(delivered=0, open_for=0.0)
    backoff.reset()
    assert backoff.after_failure(delivered=0, open_for=0.0) == backoff.initial
