"""models/podgroup.py: PodGroup objects -> GangSpec, pydantic models, errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from gangsched.models.podgroup import (
    PodGroup,
    PodGroupCondition,
    PodGroupPhase,
    PodGroupStatus,
    podgroup_spec_from_api,
)

K = "gang.scheduling.koordinator.sh/"


def pg(
    spec: dict[str, Any] | None = None, annotations: dict[str, str] | None = None, ns: str = "team-a"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": ns, "annotations": annotations or {}},
    }
    if spec is not None:
        obj["spec"] = spec
    return obj


def test_scheduler_plugins_podgroup() -> None:
    spec = podgroup_spec_from_api(
        pg(
            {
                "minMember": 4,
                "scheduleTimeoutSeconds": 30,
                "minResources": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 8},
            }
        )
    )
    assert spec == GangSpec(
        namespace="team-a",
        name="train",
        min_member=4,
        wait_seconds=30.0,
        min_resources=(("cpu", 500), ("memory", 1 << 30), ("nvidia.com/gpu", 8)),
        source="podgroup",
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(None, GangSpec(namespace="team-a", name="train", min_member=1), id="no-spec-is-a-gang-of-one"),
        pytest.param(
            {"minMember": 2, "scheduleTimeoutSeconds": 0},
            GangSpec(namespace="team-a", name="train", min_member=2),
            id="timeout-zero-is-default",
        ),
        pytest.param(
            {"minMember": 2, "mode": "NonStrict", "totalMember": 3},
            GangSpec(namespace="team-a", name="train", min_member=2, total_member=3, mode=GangMode.NON_STRICT),
            id="mode-and-total",
        ),
        pytest.param(
            {"minMember": 2, "gangGroup": ["other", "team-b/h"]},
            GangSpec(
                namespace="team-a", name="train", min_member=2, group=("team-a/other", "team-a/train", "team-b/h")
            ),
            id="gang-group-bare-names-in-own-namespace",
        ),
        pytest.param(
            {"minMember": 2, "gangGroup": ["train"]},
            GangSpec(namespace="team-a", name="train", min_member=2),
            id="gang-group-of-self-is-alone",
        ),
        pytest.param(
            {"minMember": 5, "roles": [{"name": "ps", "minMember": 1}, {"name": "worker", "minMember": 4}]},
            GangSpec(namespace="team-a", name="train", min_member=5, roles=(("ps", 1), ("worker", 4))),
            id="roles",
        ),
        pytest.param(
            {"minMember": 4, "networkTopology": {"mode": "hard", "highestTierAllowed": 2, "groupSize": 2}},
            GangSpec(
                namespace="team-a",
                name="train",
                min_member=4,
                network_topology=NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=2, group_size=2),
            ),
            id="topology",
        ),
        pytest.param(
            {"minMember": 4, "networkTopology": {}},
            GangSpec(namespace="team-a", name="train", min_member=4, network_topology=NetworkTopology()),
            id="topology-defaults-soft",
        ),
    ],
)
def test_spec_fields(spec: dict[str, Any] | None, expected: GangSpec) -> None:
    assert podgroup_spec_from_api(pg(spec)) == expected


def test_koordinator_annotations_on_the_podgroup_win() -> None:
    spec = podgroup_spec_from_api(
        pg(
            {"minMember": 2, "mode": "Strict", "scheduleTimeoutSeconds": 60},
            {K + "mode": "NonStrict", K + "total-number": "5", K + "groups": '["team-b/h"]', K + "waiting-time": "10s"},
        )
    )
    assert (spec.mode, spec.total_member, spec.group, spec.wait_seconds) == (
        GangMode.NON_STRICT,
        5,
        ("team-a/train", "team-b/h"),
        10.0,
    )
    assert spec.min_member == 2


@pytest.mark.parametrize(
    ("spec", "annotations", "field", "value", "allowed"),
    [
        pytest.param({"minMember": 0}, {}, "spec.minMember", 0, "must be an integer >= 1", id="min-zero"),
        pytest.param({"minMember": -3}, {}, "spec.minMember", -3, "must be an integer >= 1", id="min-negative"),
        pytest.param({"minMember": "abc"}, {}, "spec.minMember", "abc", "must be an integer", id="min-string"),
        pytest.param(
            {"minMember": "4"}, {}, "spec.minMember", "4", "must be an integer", id="min-numeric-string-is-strict"
        ),
        pytest.param(
            {"minMember": 2**31}, {}, "spec.minMember", 2**31, "must be an integer <= 2147483647", id="min-over-int32"
        ),
        pytest.param(
            {"minMember": 4, "totalMember": 3},
            {},
            "spec.totalMember",
            3,
            "must be an integer >= spec.minMember (4)",
            id="total-below-min",
        ),
        pytest.param({"mode": "Loose"}, {}, "spec.mode", "Loose", "one of Strict, NonStrict", id="mode-unknown"),
        pytest.param(
            {"scheduleTimeoutSeconds": -1},
            {},
            "spec.scheduleTimeoutSeconds",
            -1,
            "must be an integer >= 0",
            id="timeout-negative",
        ),
        pytest.param(
            {"minResources": {"cpu": "lots"}},
            {},
            "spec.minResources.cpu",
            "lots",
            "quantity",
            id="min-resources-bad-quantity",
        ),
        pytest.param(
            {"gangGroup": ["a/b/c"]},
            {},
            "spec.gangGroup[0]",
            "a/b/c",
            '"namespace/name" or "name"',
            id="gang-group-entry",
        ),
        pytest.param(
            {"gangGroup": "team-b/h"}, {}, "spec.gangGroup", "team-b/h", "must be a list", id="gang-group-not-a-list"
        ),
        pytest.param(
            {"roles": [{"name": "ps", "minMember": 0}]},
            {},
            "spec.roles[0].minMember",
            0,
            "must be an integer >= 1",
            id="role-min-zero",
        ),
        pytest.param(
            {"roles": [{"minMember": 1}]}, {}, "spec.roles[0].name", None, "is required", id="role-without-name"
        ),
        pytest.param(
            {"roles": [{"name": "ps", "minMember": 1}, {"name": "ps", "minMember": 2}]},
            {},
            "spec.roles[1].name",
            "ps",
            "must be unique",
            id="role-duplicate",
        ),
        pytest.param(
            {"networkTopology": {"mode": "strict"}},
            {},
            "spec.networkTopology.mode",
            "strict",
            "one of hard, soft",
            id="topology-mode",
        ),
        pytest.param(
            {"networkTopology": {"groupSize": 0}},
            {},
            "spec.networkTopology.groupSize",
            0,
            "must be an integer >= 1",
            id="topology-group-size",
        ),
        pytest.param(
            {"networkTopology": {"highestTierAllowed": 0}},
            {},
            "spec.networkTopology.highestTierAllowed",
            0,
            "must be an integer >= 1",
            id="topology-tier",
        ),
        pytest.param(
            {"minMember": 4},
            {K + "total-number": "3"},
            K + "total-number",
            3,
            "must be an integer >= min-available (4)",
            id="annotation-total-below-spec-min",
        ),
    ],
)
def test_invalid_podgroups_name_field_value_and_allowed(
    spec: dict[str, Any], annotations: dict[str, Any], field: str, value: Any, allowed: str
) -> None:
    with pytest.raises(InvalidField) as caught:
        podgroup_spec_from_api(pg(spec, annotations))
    assert (caught.value.field, caught.value.value) == (field, value)
    assert allowed in caught.value.allowed
    assert str(caught.value).startswith(f"{field}: invalid value ")


def test_missing_name_is_reported() -> None:
    with pytest.raises(InvalidField) as caught:
        podgroup_spec_from_api({"metadata": {"namespace": "x"}, "spec": {"minMember": 1}})
    assert caught.value.field == "metadata.name"


def test_podgroup_model_round_trips_the_api_form() -> None:
    raw = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "team-a", "generation": 3},
        "spec": {"minMember": 4, "networkTopology": {"mode": "soft", "groupSize": 2}},
        "status": {
            "phase": "Scheduled",
            "scheduled": 4,
            "running": 0,
            "observedGeneration": 3,
            "placedTier": 1,
            "conditions": [
                {
                    "type": "Scheduled",
                    "status": "True",
                    "reason": "GangBound",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    }
    model = PodGroup.model_validate(raw)
    assert model.status is not None and model.status.phase is PodGroupPhase.SCHEDULED
    assert model.spec.network_topology is not None and model.spec.network_topology.group_size == 2
    assert model.to_api() == raw | {"spec": {"minMember": 4, "networkTopology": {"mode": "soft", "groupSize": 2}}}


def test_status_to_api_uses_camel_case_and_omits_unset() -> None:
    status = PodGroupStatus.model_validate(
        {
            "phase": PodGroupPhase.TIMEOUT,
            "scheduleStartTime": "2026-01-01T00:00:00Z",
            "placedGroupTier": 1,
            "conditions": [
                PodGroupCondition.model_validate({"type": "Timeout", "status": "True", "observedGeneration": 2})
            ],
        }
    )
    assert status.to_api() == {
        "phase": "Timeout",
        "scheduleStartTime": "2026-01-01T00:00:00Z",
        "placedGroupTier": 1,
        "conditions": [{"type": "Timeout", "status": "True", "observedGeneration": 2}],
    }


def test_phases_include_scheduler_plugins_and_ours() -> None:
    assert {"Pending", "Scheduling", "Scheduled", "Running", "Finished", "Failed", "Succeeded", "Timeout"} <= {
        p.value for p in PodGroupPhase
    }


def _pg(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "g", "namespace": "ns"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def test_runtime_health_is_off_by_default_and_set_by_spec_or_annotations() -> None:
    """Issue 14 item 5: spec.staleGracePeriodSeconds / spec.stalePolicy, and their annotations (which win); the
    grace period in KAI Scheduler's form (a Go duration, like its `kai.scheduler/staleness-grace-period`)."""
    from gangsched.core.values.gangspec import StalePolicy

    off = podgroup_spec_from_api(_pg({"minMember": 2}))
    assert off.stale_grace_seconds is None and off.stale_policy is StalePolicy.REPORT
    spec = podgroup_spec_from_api(_pg({"minMember": 2, "staleGracePeriodSeconds": 30, "stalePolicy": "Evict"}))
    assert spec.stale_grace_seconds == 30.0 and spec.stale_policy is StalePolicy.EVICT
    annotated = podgroup_spec_from_api(
        _pg(
            {"minMember": 2, "staleGracePeriodSeconds": 30},
            {"scheduling.gangsched.io/stale-grace-period": "1m30s", "scheduling.gangsched.io/stale-policy": "Evict"},
        )
    )
    assert annotated.stale_grace_seconds == 90.0 and annotated.stale_policy is StalePolicy.EVICT


@pytest.mark.parametrize(
    ("spec", "annotations", "field"),
    [
        pytest.param({"stalePolicy": "Kill"}, None, "spec.stalePolicy", id="spec-policy"),
        pytest.param({"staleGracePeriodSeconds": -1}, None, "spec.staleGracePeriodSeconds", id="spec-grace"),
        pytest.param(
            {},
            {"scheduling.gangsched.io/stale-grace-period": "soon"},
            "scheduling.gangsched.io/stale-grace-period",
            id="ann-grace",
        ),
        pytest.param(
            {},
            {"scheduling.gangsched.io/stale-policy": "evict"},
            "scheduling.gangsched.io/stale-policy",
            id="ann-policy",
        ),
    ],
)
def test_invalid_health_settings_name_the_field(
    spec: dict[str, Any], annotations: dict[str, str] | None, field: str
) -> None:
    with pytest.raises(InvalidField) as err:
        podgroup_spec_from_api(_pg({"minMember": 2, **spec}, annotations))
    assert err.value.field == field
