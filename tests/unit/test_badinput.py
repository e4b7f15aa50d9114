"""Bad input never unsafe (issue 13 item 10): bounded parsers, every error caught per object, usage kept, groups
checked, warnings for what is resolved silently otherwise.

Bounds checked against the sources the annotations come from:
- Koordinator, koordinator-sh/koordinator apis/extension/coscheduling.go: `GetMinNum` reads min-available with
  strconv.ParseInt(value, 10, 32) (an int32); pkg/scheduler/plugins/coscheduling/core/gang.go reads waiting-time with
  Go's time.ParseDuration (an int64 of nanoseconds) and keeps only a positive one.
- scheduler-plugins, kubernetes-sigs/scheduler-plugins apis/scheduling/v1alpha1/types.go: PodGroupSpec.MinMember
  int32, ScheduleTimeoutSeconds *int32 (crds/podgroups.yaml mirrors them with `format: int32`).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models import keys
from gangsched.models.annotations import MAX_WAIT_SECONDS, gang_overrides
from gangsched.models.config import config_from_mapping
from gangsched.models.duration import parse_duration
from gangsched.models.podgroup import podgroup_spec_from_api
from gangsched.models.rank import MemberMeta, member_rank_key
from gangsched.models.topology import parse_topology, unknown_nodes, unknown_nodes_message
from gangsched.state.cache import ClusterCache
from gangsched.state.status import GangStatusBook
from tests.builders import member_obj, node_obj, podgroup_obj

K = "gang.scheduling.koordinator.sh/"
HUGE = "9" * 5000  # more digits than Python converts (4,300): int() raises a plain ValueError


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        pytest.param({K + "min-available": HUGE}, K + "min-available", id="min-5000-digits"),
        pytest.param({K + "min-available": "2147483648"}, K + "min-available", id="min-above-int32"),
        pytest.param({K + "min-available": "00000000000000000002"}, None, id="min-leading-zeros-ok"),
        pytest.param({K + "total-number": HUGE}, K + "total-number", id="total-5000-digits"),
        pytest.param({K + "waiting-time": "9999999999999h"}, K + "waiting-time", id="wait-above-max"),
        pytest.param({K + "waiting-time": "1" * 400 + "s"}, K + "waiting-time", id="wait-400-digits"),
        pytest.param({K + "waiting-time": "596523h14m7s"}, None, id="wait-at-max"),
        pytest.param({K + "waiting-time": "596523h14m8s"}, K + "waiting-time", id="wait-just-above-max"),
        pytest.param({keys.TOPOLOGY_GROUP_SIZE: HUGE}, keys.TOPOLOGY_GROUP_SIZE, id="group-size-5000-digits"),
        pytest.param({keys.TOPOLOGY_HIGHEST_TIER: "4294967296"}, keys.TOPOLOGY_HIGHEST_TIER, id="tier-above-int32"),
        pytest.param({K + "groups": '["a/xxxxxxxxxx"]'}, None, id="groups-ok"),
    ],
)
def test_annotation_numbers_are_bounded(annotations: dict[str, str], field: str | None) -> None:
    if field is None:
        gang_overrides(annotations, {}, namespace="ns", name="g")
        return
    with pytest.raises(InvalidField) as caught:
        gang_overrides(annotations, {}, namespace="ns", name="g")
    assert caught.value.field == field
    assert len(str(caught.value)) < 300, "a long value is cut in the message"


def test_the_waiting_time_cap_is_what_schedule_timeout_seconds_holds() -> None:
    assert MAX_WAIT_SECONDS == 2**31 - 1
    assert parse_duration("596523h14m7s", field="w", maximum=MAX_WAIT_SECONDS) == MAX_WAIT_SECONDS


def test_a_group_of_too_many_gangs_is_refused() -> None:
    groups = "[" + ", ".join(f'"ns/g{i}"' for i in range(300)) + "]"
    with pytest.raises(InvalidField, match="at most 256 gangs"):
        gang_overrides({K + "groups": groups}, {}, namespace="ns", name="g")


@pytest.mark.parametrize(
    ("annotations", "labels"),
    [
        pytest.param({"gang.scheduling.koordinator.sh/network-topology-index": HUGE}, {}, id="koordinator-index"),
        pytest.param({"batch.kubernetes.io/job-completion-index": "2147483648"}, {}, id="completion-above-int32"),
        pytest.param({}, {"training.kubeflow.org/replica-index": HUGE}, id="kubeflow-index"),
    ],
)
def test_rank_indexes_are_bounded(annotations: dict[str, str], labels: dict[str, str]) -> None:
    with pytest.raises(InvalidField, match="non-negative integer <= 2147483647"):
        member_rank_key(MemberMeta("p", labels=labels, annotations=annotations))


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"minMember": 10**5000}, "spec.minMember", id="min-huge-int"),
        pytest.param({"scheduleTimeoutSeconds": 9999999999}, "spec.scheduleTimeoutSeconds", id="timeout-above-int32"),
        pytest.param({"networkTopology": {"groupSize": 2**31}}, "spec.networkTopology.groupSize", id="group-size"),
        pytest.param(
            {"networkTopology": {"highestTierAllowed": 2**40}}, "spec.networkTopology.highestTierAllowed", id="tier"
        ),
        pytest.param({"minResources": {"cpu": HUGE}}, "spec.minResources.cpu", id="min-resources-5000-digits"),
        pytest.param({"minResources": {"cpu": 2**70}}, "spec.minResources.cpu", id="min-resources-huge-int"),
    ],
)
def test_podgroup_numbers_are_bounded(spec: dict[str, Any], field: str) -> None:
    obj = {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 1, **spec}}
    with pytest.raises(InvalidField) as caught:
        podgroup_spec_from_api(obj)
    assert caught.value.field == field
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('[{"layer": ' + HUGE + ', "name": "u"}]', id="layer-5000-digits"),
        pytest.param('[{"layer": 1, "name": "u' + HUGE + '", "children": ["n0"]}]', id="name-5000-digits"),
        pytest.param('[{"layer": 1, "name": "u", "children": ["n' + HUGE + '"]}]', id="node-5000-digits"),
        pytest.param('[{"layer": 100, "name": "u", "children": ["n0"]}]', id="layer-above-max"),
    ],
)
def test_topology_numbers_and_names_are_bounded(text: str) -> None:
    with pytest.raises(InvalidField):
        parse_topology(text)


def test_unknown_topology_nodes_are_named() -> None:
    tree = parse_topology('[{"layer": 1, "name": "u", "children": ["n0", "ghost-2", "ghost-10"]}]')
    assert unknown_nodes(tree, {"n0"}) == ["ghost-2", "ghost-10"]
    message = unknown_nodes_message(["ghost-2", "ghost-10"])
    assert "topology.json" in message and "ghost-2, ghost-10" in message


def test_a_5000_digit_pod_annotation_never_raises_out_of_the_pod_list() -> None:
    """The crash loop of issue 13: the initial pod list must survive any one pod."""
    cache = ClusterCache(scheduler_name="gangsched")
    bad_min = member_obj("a-0", annotations={K + "name": "a", K + "min-available": HUGE})
    bad_rank = member_obj("b-0", group="b", annotations={"gang.scheduling.koordinator.sh/network-topology-index": HUGE})
    good = member_obj("c-0", annotations={K + "name": "c", K + "min-available": "1"})
    cache.on_pod_list([bad_min, bad_rank, good, {"metadata": None}, "not even an object"])  # type: ignore[list-item]
    assert {"a-0", "b-0"} <= {p.name for p in cache.problems}
    assert all(len(p.message) < 400 for p in cache.problems)
    assert "default/c-0" in cache.cluster.pods


def test_an_invalid_declaration_on_a_bound_pod_keeps_its_usage() -> None:
    """kubectl annotate of a running member with an invalid value: its requests stay on the node."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0", cpu="8"))
    running = member_obj("g-0", annotations={K + "name": "g", K + "min-available": "1"}, cpu="6", node="n0")
    running["status"] = {"phase": "Running"}
    cache.on_pod_event("ADDED", running)
    assert cache.cluster.used["n0"]["cpu"] == 6000
    running["metadata"]["annotations"][K + "min-available"] = "not-a-number"
    cache.on_pod_event("MODIFIED", running)
    assert cache.cluster.used["n0"]["cpu"] == 6000, "the invalid declaration removed the pod's usage"
    pod = cache.cluster.pods["default/g-0"]
    assert pod.gang is None and not pod.ours
    assert [p.reason for p in cache.problems] == ["InvalidGangDeclaration"]
    cache.on_pod_event("MODIFIED", running)  # reported once
    assert len(cache.problems) == 1
    running["metadata"]["annotations"][K + "min-available"] = "1"  # fixed: a gang member again
    cache.on_pod_event("MODIFIED", running)
    assert cache.cluster.pods["default/g-0"].gang == "default/g"
    assert cache.cluster.used["n0"]["cpu"] == 6000


def test_an_invalid_declaration_on_a_pending_pod_keeps_it_out_and_is_reported_once() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    pending = member_obj("p-0", annotations={K + "name": "p", K + "min-available": "1"})
    cache.on_pod_event("ADDED", pending)
    pending["metadata"]["annotations"][K + "waiting-time"] = "9999999999999h"
    cache.on_pod_event("MODIFIED", pending)
    cache.on_pod_event("MODIFIED", pending)
    assert "default/p-0" not in cache.cluster.pods
    assert [p.reason for p in cache.problems] == ["InvalidGangDeclaration"]
    assert "at most 2147483647s" in cache.problems[0].message


def _grouped(name: str, group: list[str]) -> dict[str, Any]:
    groups = "[" + ", ".join(f'"default/{g}"' for g in group) + "]"
    return member_obj(f"{name}-0", annotations={K + "name": name, K + "min-available": "1", K + "groups": groups})


def test_a_gang_group_cycle_is_invalid_on_every_gang_of_it() -> None:
    """A -> B -> C -> A: no gang's partners agree, so none is scheduled (it used to bind A and C without B)."""
    cache = ClusterCache(scheduler_name="gangsched")
    for name, partner in (("a", "b"), ("b", "c"), ("c", "a")):
        cache.on_pod_event("ADDED", _grouped(name, [name, partner]))
    for gang in ("default/a", "default/b", "default/c"):
        message = cache.invalid_message(gang)
        assert message is not None and K + "groups" in message and "declares another group" in message
        gs = cache.cluster.gangs.get(gang)
        assert gs is None or gs.spec is None
    assert {p.reason for p in cache.problems} == {"InvalidGangGroup"}


def test_a_partner_that_does_not_list_the_group_makes_the_group_invalid_until_it_does() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", _grouped("a", ["a", "b"]))
    assert cache.invalid_message("default/a") is None, "a partner not seen yet is waited for"
    cache.on_podgroup("ADDED", podgroup_obj("b", min_member=1))
    message = cache.invalid_message("default/a")
    assert message is not None and "does not list this group back" in message
    assert cache.invalid_message("default/b") is None
    fixed = podgroup_obj("b", min_member=1, gangGroup=["a", "b"])
    fixed["metadata"]["generation"] = 2
    cache.on_podgroup("MODIFIED", fixed)
    assert cache.invalid_message("default/a") is None
    spec = cache.cluster.gangs["default/a"].spec
    assert spec is not None and spec.group == ("default/a", "default/b")


def test_members_disagreeing_on_the_declaration_get_a_warning_naming_them() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_pod_event("ADDED", member_obj("m-0", annotations={K + "name": "m", K + "min-available": "2"}))
    cache.on_pod_event("ADDED", member_obj("m-1", annotations={K + "name": "m", K + "min-available": "2"}))
    assert cache.problems == []
    cache.on_pod_event(
        "ADDED", member_obj("m-2", annotations={K + "name": "m", K + "min-available": "3", K + "mode": "NonStrict"})
    )
    [problem] = cache.problems
    assert problem.reason == "GangDeclarationMismatch" and problem.name == "m-2"
    assert "min-available 2 (pod m-1) vs 3 (pod m-2)" in problem.message
    assert "mode Strict" not in problem.message and "mode (not set) (pod m-1) vs NonStrict (pod m-2)" in problem.message


def test_an_oversize_group_size_gets_a_warning() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup("ADDED", podgroup_obj("t", min_member=2, networkTopology={"mode": "soft", "groupSize": 8}))
    [problem] = cache.problems
    assert problem.kind == "PodGroup" and problem.reason == "GroupSizeTooLarge"
    assert "spec.networkTopology.groupSize: 8 is larger than the gang (2 members" in problem.message


def test_an_invalid_gang_says_why_in_its_scheduled_condition_and_message() -> None:
    """Not "2 of 1 members present": an invalid gang's status names the invalid field."""
    book = GangStatusBook()
    why = "spec.minMember: invalid value 0: must be an integer >= 1 and <= 2147483647"
    body = book.status_of(
        "default/g",
        min_member=1,
        members=[],
        generation=1,
        decided=None,
        satisfied=False,
        timed_out=False,
        invalid=why,
        in_flight=0,
        now_iso="2024-01-01T00:00:00Z",
    )
    assert body is not None and body["message"] == why
    conditions = {c["type"]: c for c in body["conditions"]}
    assert (conditions["Scheduled"]["status"], conditions["Scheduled"]["reason"]) == ("False", "Invalid")
    assert conditions["Invalid"]["message"] == why


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        pytest.param(float("inf"), "must be a finite number", id="infinite"),
        pytest.param(3_000_000_000, "must be a number > 0 and <= 2147483647", id="above-max"),
    ],
)
def test_the_default_waiting_time_is_bounded_too(value: float, allowed: str) -> None:
    with pytest.raises(InvalidField) as caught:
        config_from_mapping({"defaultWaitSeconds": value})
    assert caught.value.field == "defaultWaitSeconds" and caught.value.allowed == allowed


def test_notices_said_on_a_member_before_its_podgroup_was_seen_are_said_again_on_the_podgroup() -> None:
    # watch streams keep no order between kinds: a member's event may come before its PodGroup's (Koordinator's
    # annotations on pods of a scheduling.x-k8s.io PodGroup); the user reads the PodGroup's events
    cache = ClusterCache(scheduler_name="gangsched")
    annotations = {K + "name": "job", K + "min-available": "1", K + "mode": "Strict\\NonStrict"}
    cache.on_pod_event("ADDED", member_obj("job-0", annotations=annotations))
    assert [(p.kind, p.reason) for p in cache.problems] == [("Pod", "InvalidGangMode")]
    cache.on_podgroup("ADDED", podgroup_obj("job", min_member=1))
    assert [(p.kind, p.reason) for p in cache.problems] == [("Pod", "InvalidGangMode"), ("PodGroup", "InvalidGangMode")]
    cache.on_pod_event("ADDED", member_obj("job-1", annotations=annotations))  # said once per target, not again
    assert len(cache.problems) == 2
