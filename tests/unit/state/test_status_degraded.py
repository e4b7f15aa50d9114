"""The Degraded condition of runtime gang health (issue 14 item 5): state/status.py `degraded_condition`, added to
the PodGroup status body next to Scheduled; its lastTransitionTime moves only when its status does.

Oracle: the Kubernetes condition conventions (k8s.io/apimachinery pkg/apis/meta/v1/types.go `Condition`: type,
status True/False, reason CamelCase, message, lastTransitionTime changed only when status changes); KAI Scheduler
reports a stale gang before evicting it (pkg/scheduler/actions/stalegangeviction/stalegangeviction.go).
"""

from __future__ import annotations

from typing import Any

from gangsched.core.memory.health_book import DegradedCondition
from gangsched.state.status import GangStatusBook
from tests.builders import pod_obj, pod_record


def _body(book: GangStatusBook, degraded: DegradedCondition | None, now: str) -> dict[str, Any] | None:
    members = [
        pod_record(pod_obj(f"g-{i}", node=f"n{i}", phase="Running"), gang="default/g", ours=True) for i in range(2)
    ]
    return book.status_of(
        "default/g",
        min_member=3,
        members=members,
        generation=1,
        decided=None,
        satisfied=False,
        timed_out=False,
        invalid=None,
        in_flight=0,
        now_iso=now,
        degraded=degraded,
    )


def _degraded(body: dict[str, Any] | None) -> dict[str, Any] | None:
    assert body is not None
    return next((c for c in body["conditions"] if c["type"] == "Degraded"), None)


def test_degraded_condition_follows_the_core_and_keeps_its_transition_time() -> None:
    book = GangStatusBook()
    assert _degraded(_body(book, None, "2024-01-01T00:00:00Z")) is None  # never degraded: absent
    down = DegradedCondition(True, "BelowMinMember", "2 of minMember 3 members running or finished for 10s")
    cond = _degraded(_body(book, down, "2024-01-01T00:00:10Z"))
    assert cond is not None and cond["status"] == "True" and cond["reason"] == "BelowMinMember"
    assert cond["lastTransitionTime"] == "2024-01-01T00:00:10Z" and "2 of minMember 3" in cond["message"]
    evicted = DegradedCondition(True, "StaleGangEvicted", "evicted its 2 member(s) still bound")
    cond = _degraded(_body(book, evicted, "2024-01-01T00:00:20Z"))
    assert cond is not None and cond["reason"] == "StaleGangEvicted"
    assert cond["lastTransitionTime"] == "2024-01-01T00:00:10Z"  # still True: the transition time stays
    cond = _degraded(_body(book, DegradedCondition(False, "Recovered", "3 members"), "2024-01-01T00:00:30Z"))
    assert cond is not None and cond["status"] == "False" and cond["lastTransitionTime"] == "2024-01-01T00:00:30Z"
