"""The starvation settings of the operator config and a pod's declared run time (models/config.py, models/pod.py).

Oracles: a pod's spec.activeDeadlineSeconds is an int64 of seconds > 0 that the kubelet enforces
(pkg/apis/core/validation/validation.go `ValidatePodSpec`: "must be greater than 0";
pkg/kubelet/active_deadline.go); status.startTime is RFC 3339 set by the kubelet (pkg/kubelet/kubelet_pods.go).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.config import config_from_mapping, load_config
from gangsched.models.pod import pod_with_status
from gangsched.state.cache import ClusterCache
from tests.builders import member_obj, node_obj, pod_record

KEY = "scheduling.gangsched.io/expected-duration"


def test_defaults_hold_after_60s_one_gang() -> None:
    cfg = load_config(None)
    assert (cfg.starvation.hold_after_seconds, cfg.starvation.max_held_gangs) == (60.0, 1)
    core = cfg.scheduler_config()
    assert (core.hold_after_seconds, core.max_held_gangs) == (60.0, 1)


def test_the_settings_reach_the_core_and_zero_disables() -> None:
    core = config_from_mapping({"starvation": {"holdAfterSeconds": 0, "maxHeldGangs": 3}}).scheduler_config()
    assert (core.hold_after_seconds, core.max_held_gangs) == (0.0, 3)


@pytest.mark.parametrize(
    ("section", "field", "allowed"),
    [
        ({"holdAfterSeconds": -1}, "starvation.holdAfterSeconds", "must be a number >= 0"),
        ({"holdAfterSeconds": "soon"}, "starvation.holdAfterSeconds", "must be a number"),
        ({"maxHeldGangs": 0}, "starvation.maxHeldGangs", "must be an integer >= 1"),
        ({"holdAfter": 5}, "starvation.holdAfter", "not a known setting"),
    ],
)
def test_bad_settings_name_the_field(section: dict[str, Any], field: str, allowed: str) -> None:
    with pytest.raises(InvalidField) as err:
        config_from_mapping({"starvation": section})
    assert err.value.field == field and allowed in err.value.allowed


def _pod(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "annotations": annotations or {}},
        "spec": {"containers": [], **spec},
        "status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"},
    }


def test_declared_run_time_is_the_shorter_of_deadline_and_annotation() -> None:
    assert pod_record(_pod(), gang=None, ours=True).run_seconds is None
    assert pod_record(_pod(activeDeadlineSeconds=300), gang=None, ours=True).run_seconds == 300.0
    assert pod_record(_pod({KEY: "10m"}), gang=None, ours=True).run_seconds == 600.0
    assert pod_record(_pod({KEY: "10m"}, activeDeadlineSeconds=300), gang=None, ours=True).run_seconds == 300.0
    assert pod_record(_pod(), gang=None, ours=True).started == 1704067200.0


def test_a_bad_expected_duration_names_the_annotation() -> None:
    with pytest.raises(InvalidField) as err:
        pod_record(_pod({KEY: "forever"}), gang=None, ours=True)
    assert err.value.field == f"metadata.annotations[{KEY}]"
    # read as another scheduler's pod (or to keep a bad pod's usage counted on its node) it never fails
    assert pod_record(_pod({KEY: "forever"}), gang=None, ours=False).run_seconds is None


def test_a_status_change_rereads_the_start_time() -> None:
    first = pod_record({**_pod(), "status": {"phase": "Pending"}}, gang=None, ours=True)
    assert first.started is None
    later = pod_with_status(first, {"containers": []}, {"phase": "Running", "startTime": "2024-01-01T00:00:10Z"})
    assert later is not None and later.started == 1704067210.0


def test_a_bad_expected_duration_is_reported_and_a_running_pod_keeps_its_usage() -> None:
    """Seen first (a restart's pod list) running with a bad annotation: reported, its requests still count."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0", cpu="8"))
    running = member_obj("r-0", annotations={KEY: "forever"}, cpu="6", node="n0")
    running["status"] = {"phase": "Running"}
    pending = member_obj("p-0", annotations={KEY: "-1s"})
    cache.on_pod_list([running, pending])
    assert cache.cluster.used["n0"]["cpu"] == 6000
    assert "default/p-0" not in cache.cluster.pods
    assert sorted(p.name for p in cache.problems) == ["p-0", "r-0"]
    assert all(f"metadata.annotations[{KEY}]" in p.message for p in cache.problems)
