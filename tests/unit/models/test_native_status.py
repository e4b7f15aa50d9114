"""models/native_status.py against kube-scheduler 1.37 (pkg/scheduler/schedule_one_podgroup.go
submitPodGroupAlgorithmResult / updatePodGroupCondition; apimachinery meta.SetStatusCondition)."""

from __future__ import annotations

from gangsched.models.native_status import INITIALLY_SCHEDULED, set_condition, wanted_condition

T0 = "2026-11-27T00:00:00Z"
T1 = "2026-11-27T00:01:00Z"


def test_wanted_follows_the_gang() -> None:
    done = wanted_condition(bound=2, min_count=2, decided_reason="Scheduled", decided_message="", invalid=None)
    assert done is not None and done[:2] == ("True", "Scheduled")
    assert wanted_condition(
        bound=0, min_count=2, decided_reason="Unschedulable", decided_message="no room", invalid=None
    ) == (
        "False",
        "Unschedulable",
        "no room",
    )
    assert wanted_condition(bound=0, min_count=2, decided_reason="GangTimeout", decided_message="", invalid=None) == (
        "False",
        "Unschedulable",
        "GangTimeout",
    )
    bad = wanted_condition(bound=0, min_count=2, decided_reason=None, decided_message="", invalid="spec.x: bad")
    assert bad == ("False", "SchedulerError", "spec.x: bad")
    # PreEnqueue: a group short of minCount pods gets no cycle, so no condition
    assert (
        wanted_condition(bound=0, min_count=2, decided_reason="WaitingForPods", decided_message="", invalid=None)
        is None
    )
    assert wanted_condition(bound=0, min_count=2, decided_reason=None, decided_message="", invalid=None) is None


def test_set_condition_adds_keeps_others_and_is_terminal() -> None:
    other = {"type": "DisruptionTarget", "status": "False", "reason": "X", "message": "", "lastTransitionTime": T0}
    first = set_condition([other], ("False", "Unschedulable", "no room"), generation=1, now_iso=T0)
    assert first is not None and first[0] == other
    cond = first[1]
    assert cond["type"] == INITIALLY_SCHEDULED and cond["observedGeneration"] == 1 and cond["lastTransitionTime"] == T0
    assert set_condition(first, ("False", "Unschedulable", "no room"), generation=1, now_iso=T1) is None  # unchanged
    moved = set_condition(first, ("False", "Unschedulable", "still no room"), generation=1, now_iso=T1)
    assert moved is not None and moved[1]["lastTransitionTime"] == T0  # same status: the transition time stays
    done = set_condition(moved, ("True", "Scheduled", "2 pods bound"), generation=2, now_iso=T1)
    assert done is not None and done[1]["status"] == "True" and done[1]["lastTransitionTime"] == T1
    assert set_condition(done, ("False", "Unschedulable", "lost"), generation=2, now_iso=T1) is None  # terminal
    assert set_condition(done, ("True", "Scheduled", "3 pods bound"), generation=2, now_iso=T1) is None


def test_disruption_condition_is_added_once_and_keeps_the_others() -> None:
    """DisruptionTarget True/PreemptionByScheduler (k8s.io/api scheduling/v1beta1 types.go
    PodGroupReasonPreemptionByScheduler), set as apimachinery SetStatusCondition sets it: the others kept, the
    transition time kept while it stays True, no write when nothing changes."""
    from gangsched.models.native_status import disruption_condition

    scheduled = {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}
    message = "gangsched: preempting to accommodate a higher priority pod group"
    first = disruption_condition([scheduled], message=message, generation=1, now_iso="T1")
    assert first is not None and first[0] == scheduled
    assert {k: first[1][k] for k in ("type", "status", "reason", "lastTransitionTime")} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "lastTransitionTime": "T1",
    }
    assert disruption_condition(first, message=message, generation=1, now_iso="T2") is None
    other = disruption_condition(first, message="gangsched: ... pod", generation=2, now_iso="T3")
    assert other is not None and other[1]["lastTransitionTime"] == "T1" and other[1]["observedGeneration"] == 2


def test_composite_condition_counts_children_and_is_terminal() -> None:
    """kube-scheduler 1.37 pkg/scheduler/schedule_one_podgroup.go submitCompositePodGroupResult: Success -> True
    CompositePodGroupReasonScheduled, Rejected -> False Unschedulable; updateCompositePodGroupCondition: a True
    CompositePodGroupInitiallyScheduled is not regressed; the PodGroup's own condition type is left alone."""
    from gangsched.models.native_status import COMPOSITE_INITIALLY_SCHEDULED, wanted_composite

    assert wanted_composite(admitted=1, minimum=2, decided_reason=None, decided_message="", invalid=None) is None
    short = wanted_composite(
        admitted=1, minimum=2, decided_reason="Unschedulable", decided_message="0/3 nodes", invalid=None
    )
    assert short == ("False", "Unschedulable", "0/3 nodes")
    done = wanted_composite(admitted=2, minimum=2, decided_reason="Unschedulable", decided_message="x", invalid=None)
    assert done is not None and done[:2] == ("True", "Scheduled")
    leaf = {"type": INITIALLY_SCHEDULED, "status": "False", "reason": "Unschedulable"}
    first = set_condition([leaf], short, generation=1, now_iso="t0", type_=COMPOSITE_INITIALLY_SCHEDULED)
    assert first is not None and first[0] == leaf and first[1]["type"] == COMPOSITE_INITIALLY_SCHEDULED
    second = set_condition(first, done, generation=1, now_iso="t1", type_=COMPOSITE_INITIALLY_SCHEDULED)
    assert second is not None and second[1]["status"] == "True" and second[1]["lastTransitionTime"] == "t1"
    assert set_condition(second, short, generation=1, now_iso="t2", type_=COMPOSITE_INITIALLY_SCHEDULED) is None
