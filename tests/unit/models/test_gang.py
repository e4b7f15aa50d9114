"""models/gang.py: every source of a pod's gang declaration, defaults, annotations win, invalid values."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from gangsched.models import keys
from gangsched.models.gang import PodGang, merge_gang_specs, parse_pod_gang

K = "gang.scheduling.koordinator.sh/"


def pod(
    labels: dict[str, str] | None = None, annotations: dict[str, Any] | None = None, ns: str = "team-a"
) -> dict[str, Any]:
    return {"metadata": {"name": "p-0", "namespace": ns, "labels": labels or {}, "annotations": annotations or {}}}


@pytest.mark.parametrize(
    ("labels", "annotations", "declared_by"),
    [
        pytest.param(
            {"scheduling.x-k8s.io/pod-group": "g"}, {}, "scheduling.x-k8s.io/pod-group", id="label-scheduler-plugins"
        ),
        pytest.param(
            {"pod-group.scheduling.sigs.k8s.io": "g"}, {}, "pod-group.scheduling.sigs.k8s.io", id="label-legacy"
        ),
        pytest.param(
            {"pod-group.scheduling.sigs.k8s.io/name": "g"},
            {},
            "pod-group.scheduling.sigs.k8s.io/name",
            id="label-legacy-name",
        ),
        pytest.param({}, {K + "name": "g"}, K + "name", id="annotation-koordinator"),
        pytest.param(
            {},
            {"pod-group.scheduling.sigs.k8s.io/name": "g"},
            "pod-group.scheduling.sigs.k8s.io/name",
            id="annotation-legacy-name",
        ),
        pytest.param(
            {}, {"pod-group.scheduling.sigs.k8s.io": "g"}, "pod-group.scheduling.sigs.k8s.io", id="annotation-legacy"
        ),
        pytest.param(
            {"scheduling.x-k8s.io/pod-group": "g"},
            {K + "name": "g"},
            "scheduling.x-k8s.io/pod-group",
            id="label-and-matching-annotation",
        ),
    ],
)
def test_every_source_names_the_gang_in_the_pods_namespace(
    labels: dict[str, Any], annotations: dict[str, Any], declared_by: str
) -> None:
    gang = parse_pod_gang(pod(labels, annotations))
    assert gang is not None
    assert (gang.key, gang.declared_by) == ("team-a/g", declared_by)
    assert gang.spec is None  # a name alone references a PodGroup


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"metadata": {"name": "p"}}, id="no-labels-no-annotations"),
        pytest.param(pod({"app": "x"}, {"other": "y"}), id="unrelated-keys"),
        pytest.param(pod({"scheduling.x-k8s.io/pod-group": ""}), id="empty-label"),
        pytest.param({}, id="no-metadata"),
    ],
)
def test_pods_without_a_gang_give_none(obj: dict[str, Any]) -> None:
    assert parse_pod_gang(obj) is None


def test_namespace_defaults_to_default() -> None:
    gang = parse_pod_gang({"metadata": {"name": "p", "labels": {"scheduling.x-k8s.io/pod-group": "g"}}})
    assert gang is not None and gang.key == "default/g"


def test_annotation_only_gang_has_koordinator_defaults() -> None:
    gang = parse_pod_gang(pod(annotations={K + "name": "g", K + "min-available": "3"}))
    assert gang is not None
    assert gang.spec == GangSpec(
        namespace="team-a",
        name="g",
        min_member=3,
        total_member=3,
        mode=GangMode.STRICT,
        wait_seconds=None,
        group=(),
        source="annotations",
    )


def test_every_koordinator_annotation_is_read() -> None:
    gang = parse_pod_gang(
        pod(
            annotations={
                K + "name": "gang-a",
                K + "min-available": "5",
                K + "total-number": "6",
                K + "waiting-time": "1h30m",
                K + "mode": "NonStrict",
                K + "groups": '["team-a/gang-a", "team-b/gang-b"]',
            }
        )
    )
    assert gang is not None and gang.spec is not None
    spec = gang.spec
    assert (spec.min_member, spec.total_member, spec.wait_seconds, spec.mode) == (5, 6, 5400.0, GangMode.NON_STRICT)
    assert spec.group == ("team-a/gang-a", "team-b/gang-b")


def test_legacy_min_available_annotation_and_label() -> None:
    by_annotation = parse_pod_gang(
        pod({"pod-group.scheduling.sigs.k8s.io": "g"}, {"pod-group.scheduling.sigs.k8s.io/min-available": "2"})
    )
    by_label = parse_pod_gang(
        pod({"pod-group.scheduling.sigs.k8s.io": "g", "pod-group.scheduling.sigs.k8s.io/min-available": "4"})
    )
    assert by_annotation is not None and by_annotation.spec is not None and by_annotation.spec.min_member == 2
    assert by_label is not None and by_label.spec is not None and by_label.spec.min_member == 4


def test_koordinator_min_available_wins_over_legacy() -> None:
    gang = parse_pod_gang(
        pod(
            annotations={
                K + "name": "g",
                K + "min-available": "3",
                "pod-group.scheduling.sigs.k8s.io/min-available": "9",
            }
        )
    )
    assert gang is not None and gang.spec is not None and gang.spec.min_member == 3


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        pytest.param('["team-a/g", "team-b/h"]', ("team-a/g", "team-b/h"), id="two-gangs"),
        pytest.param('["team-b/h"]', ("team-a/g", "team-b/h"), id="self-added"),
        pytest.param('["team-b/h", "team-a/g", "team-b/h"]', ("team-a/g", "team-b/h"), id="sorted-deduplicated"),
        pytest.param('["team-a/g"]', (), id="only-self-is-alone"),
        pytest.param("[]", (), id="empty-list"),
        pytest.param("", (), id="empty-string"),
    ],
)
def test_groups_are_normalized(groups: str, expected: tuple[str, ...]) -> None:
    gang = parse_pod_gang(pod(annotations={K + "name": "g", K + "min-available": "1", K + "groups": groups}))
    assert gang is not None and gang.spec is not None and gang.spec.group == expected


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        pytest.param({keys.ROLE: "worker"}, {}, "worker", id="label"),
        pytest.param({}, {keys.ROLE: "ps"}, "ps", id="annotation"),
        pytest.param({keys.ROLE: "worker"}, {keys.ROLE: "ps"}, "worker", id="label-wins"),
        pytest.param({}, {}, None, id="none"),
    ],
)
def test_role(labels: dict[str, Any], annotations: dict[str, Any], expected: str | None) -> None:
    gang = parse_pod_gang(pod({"scheduling.x-k8s.io/pod-group": "g", **labels}, annotations))
    assert gang is not None and gang.role == expected


@pytest.mark.parametrize(
    ("annotations", "field", "value", "allowed"),
    [
        pytest.param({K + "min-available": "abc"}, K + "min-available", "abc", "must be an integer >= 1", id="min-abc"),
        pytest.param(
            {K + "min-available": "-3"}, K + "min-available", "-3", "must be an integer >= 1", id="min-negative"
        ),
        pytest.param({K + "min-available": "0"}, K + "min-available", "0", "must be an integer >= 1", id="min-zero"),
        pytest.param(
            {K + "min-available": "2.5"}, K + "min-available", "2.5", "must be an integer >= 1", id="min-fraction"
        ),
        pytest.param(
            {"pod-group.scheduling.sigs.k8s.io/min-available": "x"},
            "pod-group.scheduling.sigs.k8s.io/min-available",
            "x",
            "must be an integer >= 1",
            id="legacy-min-abc",
        ),
        pytest.param(
            {K + "min-available": "5", K + "total-number": "3"},
            K + "total-number",
            "3",
            "must be an integer >= min-available (5)",
            id="min-greater-than-total",
        ),
        pytest.param(
            {K + "total-number": "many"}, K + "total-number", "many", "must be an integer >= 1", id="total-abc"
        ),
        pytest.param(
            {K + "waiting-time": "forever"},
            K + "waiting-time",
            "forever",
            "a positive duration like 30s, 10m or 1h30m",
            id="wait-forever",
        ),
        pytest.param(
            {K + "waiting-time": "30"},
            K + "waiting-time",
            "30",
            "a positive duration like 30s, 10m or 1h30m",
            id="wait-bare-number",
        ),
        pytest.param(
            {K + "waiting-time": "0s"},
            K + "waiting-time",
            "0s",
            "a positive duration like 30s, 10m or 1h30m",
            id="wait-zero",
        ),
        pytest.param(
            {K + "groups": "team-a/g,team-b/h"},
            K + "groups",
            "team-a/g,team-b/h",
            'a JSON list of "namespace/name"',
            id="groups-not-json",
        ),
        pytest.param(
            {K + "groups": '{"a": 1}'},
            K + "groups",
            '{"a": 1}',
            'a JSON list of "namespace/name"',
            id="groups-not-a-list",
        ),
        pytest.param(
            {K + "groups": '["team-b/h", "lonely"]'},
            K + "groups",
            '["team-b/h", "lonely"]',
            'entry "lonely" is not "namespace/name"',
            id="groups-entry-without-slash",
        ),
        pytest.param(
            {K + "groups": '["a/b/c"]'},
            K + "groups",
            '["a/b/c"]',
            'entry "a/b/c" is not "namespace/name"',
            id="groups-entry-two-slashes",
        ),
        pytest.param(
            {K + "groups": "[1]"},
            K + "groups",
            "[1]",
            'entry "1" is not "namespace/name"',
            id="groups-entry-not-string",
        ),
    ],
)
def test_invalid_values_name_field_value_and_allowed(
    annotations: dict[str, Any], field: str, value: str, allowed: str
) -> None:
    with pytest.raises(InvalidField) as caught:
        parse_pod_gang(pod(annotations={K + "name": "g", **annotations}))
    err = caught.value
    assert (err.field, err.value) == (field, value)
    assert allowed in err.allowed
    assert str(err).startswith(f'{field}: invalid value "{value}": ')


@pytest.mark.parametrize(
    ("labels", "annotations", "field", "value"),
    [
        pytest.param({}, {K + "name": "Bad_Name"}, K + "name", "Bad_Name", id="name-not-rfc1123"),
        pytest.param(
            {"scheduling.x-k8s.io/pod-group": "-x"}, {}, "scheduling.x-k8s.io/pod-group", "-x", id="label-not-rfc1123"
        ),
        pytest.param(
            {"scheduling.x-k8s.io/pod-group": "a"},
            {K + "name": "b"},
            K + "name",
            "b",
            id="label-and-annotation-disagree",
        ),
    ],
)
def test_invalid_names(labels: dict[str, Any], annotations: dict[str, Any], field: str, value: str) -> None:
    with pytest.raises(InvalidField) as caught:
        parse_pod_gang(pod(labels, annotations))
    assert (caught.value.field, caught.value.value) == (field, value)


def test_invalid_value_is_reported_on_every_call_not_cached_away() -> None:
    bad = pod(annotations={K + "name": "g", K + "min-available": "abc"})
    for _ in range(2):
        with pytest.raises(InvalidField):
            parse_pod_gang(bad)


PG = GangSpec(namespace="team-a", name="g", min_member=4, total_member=8, mode=GangMode.NON_STRICT, wait_seconds=60.0)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({}, PG, id="label-only-is-the-podgroup"),
        pytest.param(
            {K + "mode": "Strict"},
            GangSpec(
                namespace="team-a",
                name="g",
                min_member=4,
                total_member=8,
                mode=GangMode.STRICT,
                wait_seconds=60.0,
                source="podgroup+annotations",
            ),
            id="mode-overrides-without-min",
        ),
        pytest.param(
            {K + "min-available": "6"},
            GangSpec(
                namespace="team-a",
                name="g",
                min_member=6,
                total_member=8,
                mode=GangMode.NON_STRICT,
                wait_seconds=60.0,
                source="podgroup+annotations",
            ),
            id="min-overrides-total-kept",
        ),
        pytest.param(
            {K + "min-available": "10"},
            GangSpec(
                namespace="team-a",
                name="g",
                min_member=10,
                total_member=10,
                mode=GangMode.NON_STRICT,
                wait_seconds=60.0,
                source="podgroup+annotations",
            ),
            id="min-above-podgroup-total-raises-total",
        ),
        pytest.param(
            {K + "waiting-time": "10s", K + "groups": '["team-b/h"]'},
            GangSpec(
                namespace="team-a",
                name="g",
                min_member=4,
                total_member=8,
                mode=GangMode.NON_STRICT,
                wait_seconds=10.0,
                group=("team-a/g", "team-b/h"),
                source="podgroup+annotations",
            ),
            id="wait-and-groups",
        ),
    ],
)
def test_annotations_win_over_the_podgroup_field_by_field(annotations: dict[str, Any], expected: GangSpec) -> None:
    gang = parse_pod_gang(pod({"scheduling.x-k8s.io/pod-group": "g"}, annotations))
    assert gang is not None
    assert gang.resolve(PG) == expected


def test_resolve_without_podgroup_is_the_annotation_spec_or_none() -> None:
    with_min = parse_pod_gang(pod(annotations={K + "name": "g", K + "min-available": "2"}))
    without_min = parse_pod_gang(pod(annotations={K + "name": "g", K + "mode": "NonStrict"}))
    assert with_min is not None and with_min.resolve(None) == with_min.spec
    assert without_min is not None and without_min.resolve(None) is None


@pytest.mark.parametrize(
    ("podgroup", "annotations", "fields", "expected"),
    [
        pytest.param(None, None, None, None, id="neither"),
        pytest.param(PG, None, None, PG, id="podgroup-only"),
        pytest.param(
            None,
            GangSpec(namespace="team-a", name="g", min_member=2),
            None,
            GangSpec(namespace="team-a", name="g", min_member=2),
            id="annotations-only",
        ),
        pytest.param(
            PG,
            GangSpec(namespace="team-a", name="g", min_member=2),
            None,
            GangSpec(
                namespace="team-a",
                name="g",
                min_member=2,
                total_member=8,
                mode=GangMode.NON_STRICT,
                wait_seconds=60.0,
                source="podgroup+annotations",
            ),
            id="defaults-do-not-override",
        ),
        pytest.param(
            PG,
            GangSpec(namespace="team-a", name="g", min_member=2, mode=GangMode.STRICT),
            ["mode"],
            GangSpec(
                namespace="team-a",
                name="g",
                min_member=4,
                total_member=8,
                mode=GangMode.STRICT,
                wait_seconds=60.0,
                source="podgroup+annotations",
            ),
            id="explicit-fields",
        ),
    ],
)
def test_merge_gang_specs(
    podgroup: GangSpec | None, annotations: GangSpec | None, fields: list[str] | None, expected: GangSpec | None
) -> None:
    assert merge_gang_specs(podgroup, annotations, fields=fields) == expected


def test_pod_gang_is_immutable() -> None:
    gang = PodGang(namespace="n", name="g")
    with pytest.raises(AttributeError):
        gang.name = "h"  # type: ignore[misc]


T = "scheduling.gangsched.io/"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param(
            {T + "group-size": "4"}, NetworkTopology(TopologyMode.SOFT, None, 4), id="group-size-only-is-soft"
        ),
        pytest.param(
            {T + "network-topology-mode": "hard", T + "highest-tier-allowed": "2", T + "group-size": "8"},
            NetworkTopology(TopologyMode.HARD, 2, 8),
            id="hard-with-limit",
        ),
        pytest.param(
            {T + "network-topology-mode": "soft"}, NetworkTopology(TopologyMode.SOFT, None, 1), id="mode-only"
        ),
    ],
)
def test_topology_annotations_of_an_annotation_only_gang(
    annotations: dict[str, Any], expected: NetworkTopology
) -> None:
    decl = parse_pod_gang(pod(annotations={K + "name": "g", K + "min-available": "2", **annotations}))
    assert decl is not None and decl.spec is not None
    assert decl.spec.network_topology == expected


def test_topology_annotations_override_the_podgroups() -> None:
    decl = parse_pod_gang(pod(labels={"scheduling.x-k8s.io/pod-group": "g"}, annotations={T + "group-size": "2"}))
    assert decl is not None and decl.spec is None
    podgroup = GangSpec(
        namespace="team-a", name="g", min_member=4, network_topology=NetworkTopology(TopologyMode.HARD, 1, 4)
    )
    resolved = decl.resolve(podgroup)
    assert resolved is not None and resolved.network_topology == NetworkTopology(TopologyMode.SOFT, None, 2)


@pytest.mark.parametrize(
    ("annotations", "field", "value"),
    [
        pytest.param({T + "network-topology-mode": "tight"}, T + "network-topology-mode", "tight", id="mode"),
        pytest.param({T + "highest-tier-allowed": "0"}, T + "highest-tier-allowed", "0", id="tier-zero"),
        pytest.param({T + "group-size": "two"}, T + "group-size", "two", id="group-size-word"),
    ],
)
def test_invalid_topology_annotations_name_field_and_value(annotations: dict[str, Any], field: str, value: str) -> None:
    with pytest.raises(InvalidField) as err:
        parse_pod_gang(pod(annotations={K + "name": "g", K + "min-available": "2", **annotations}))
    assert err.value.field == field and err.value.value == value
    assert f'"{value}"' in str(err.value)


def _member(annotations: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta = {"name": "p", "namespace": "ns", "labels": labels or {"scheduling.x-k8s.io/pod-group": "g"}}
    return {"metadata": {**meta, "annotations": annotations}}


def test_stale_gang_annotations_on_pods_override_the_podgroup() -> None:
    """Issue 14 item 5: the grace period and policy may be written on the pods (as KAI Scheduler's
    `kai.scheduler/staleness-grace-period` pod annotation is), winning over the PodGroup's spec; alone they never
    declare a gang (the PodGroup still supplies the quorum)."""
    from gangsched.core.values.gangspec import StalePolicy

    decl = parse_pod_gang(_member({keys.STALE_GRACE_PERIOD: "45s", keys.STALE_POLICY: "Evict"}))
    assert decl is not None and decl.spec is None
    spec = decl.resolve(GangSpec("ns", "g", 3, stale_grace_seconds=600.0))
    assert spec is not None and spec.min_member == 3
    assert spec.stale_grace_seconds == 45.0 and spec.stale_policy is StalePolicy.EVICT
    koord = parse_pod_gang(
        {
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "annotations": {keys.KOORD_NAME: "g", keys.KOORD_MIN_AVAILABLE: "2", keys.STALE_GRACE_PERIOD: "1m"},
            }
        }
    )
    assert koord is not None and koord.spec is not None  # an annotation-only gang carries them in its spec
    assert koord.spec.min_member == 2 and koord.spec.stale_grace_seconds == 60.0


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        pytest.param({keys.STALE_GRACE_PERIOD: "0s"}, keys.STALE_GRACE_PERIOD, id="grace-zero"),
        pytest.param({keys.STALE_GRACE_PERIOD: "later"}, keys.STALE_GRACE_PERIOD, id="grace-words"),
        pytest.param({keys.STALE_POLICY: "Delete"}, keys.STALE_POLICY, id="policy"),
    ],
)
def test_invalid_stale_gang_annotations_on_pods_name_the_key(annotations: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidField) as err:
        parse_pod_gang(_member(annotations))
    assert err.value.field == field
