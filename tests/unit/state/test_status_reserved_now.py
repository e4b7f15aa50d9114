"""PodGroup status when the core's last decision is stale: reservations the gang has now win over those decided.

Found by the soak test: a NonStrict gang held 4 of minMember 5; its pods were deleted, the gang was never
attempted again (no pending members), and the PodGroup said Scheduling ("holding 4 of minMember 5") forever.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.memory.plan import GangStatus
from gangsched.state.status import GangStatusBook
from tests.builders import pod_obj, pod_record

HOLDING = GangStatus(0, 2, 1, "Unschedulable", "holding 2 of minMember 3")


def record(name: str) -> Any:
    return pod_record(pod_obj(name), gang="default/g", ours=True)


@pytest.mark.parametrize(
    ("members", "reserved_now", "phase", "reason"),
    [
        pytest.param(["a", "b", "c"], None, "Scheduling", "Unschedulable", id="held-unknown-trusts-the-decision"),
        pytest.param(["a", "b", "c"], 2, "Scheduling", "Unschedulable", id="still-held"),
        pytest.param(["c"], 1, "Scheduling", "Unschedulable", id="one-reservation-left"),
        pytest.param(["c"], 0, "Pending", "WaitingForPods", id="holders-deleted"),
        pytest.param([], 0, "Pending", "WaitingForPods", id="every-member-deleted"),
    ],
)
def test_phase_follows_the_reservations_held_now(
    members: list[str], reserved_now: int | None, phase: str, reason: str
) -> None:
    body = GangStatusBook().status_of(
        "default/g",
        min_member=3,
        members=[record(n) for n in members],
        generation=1,
        decided=HOLDING,
        satisfied=False,
        timed_out=False,
        invalid=None,
        in_flight=0,
        now_iso="2024-01-01T00:00:00Z",
        reserved_now=reserved_now,
    )
    assert body is not None
    assert body["phase"] == phase
    assert body["conditions"][0]["reason"] == reason
    if reserved_now == 0:
        assert body["message"] is None and "holding" not in body["conditions"][0]["message"]
