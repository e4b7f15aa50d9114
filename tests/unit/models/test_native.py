"""Kubernetes 1.37's own gang declaration parsed (models/native.py, models/gang.py, state/native.py).

Sources: staging/src/k8s.io/api/scheduling/v1beta1/types.go (PodGroupSchedulingPolicy: exactly one of basic | gang;
GangSchedulingPolicy.MinCount >= 1), staging/src/k8s.io/api/core/v1/types.go (PodSpec.SchedulingGroup,
PodSchedulingGroup.PodGroupName); kube-scheduler's GangScheduling plugin (pkg/scheduler/framework/plugins/
gangscheduling): a pod naming a PodGroup is a member of that group; minCount is its quorum; basic is no gang.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core import DomainKey
from gangsched.core.values.errors import InvalidField
from gangsched.models.gang import parse_pod_gang, referenced_gang
from gangsched.models.native import SCHEDULING_GROUP, native_policy, scheduling_group_name
from gangsched.state.native import NativePodGroups


def pod(labels: dict[str, str] | None = None, group: Any = "train") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": "p", "namespace": "ns", "labels": labels or {}}, "spec": spec}


def native(policy: Any, name: str = "train") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"schedulingPolicy": policy}}


def test_a_pod_names_its_native_gang() -> None:
    decl = parse_pod_gang(pod())
    assert decl is not None and decl.key == "ns/train" and decl.declared_by == SCHEDULING_GROUP and decl.spec is None
    assert referenced_gang(pod()) == "ns/train"
    assert parse_pod_gang(pod(group=None)) is None
    assert scheduling_group_name({"schedulingGroup": {}}) is None


def test_naming_a_gang_both_ways_is_a_conflict() -> None:
    with pytest.raises(InvalidField, match="declares its gang once") as info:
        parse_pod_gang(pod({"scheduling.x-k8s.io/pod-group": "other"}))
    assert "spec.schedulingGroup.podGroupName" in str(info.value) and "scheduling.x-k8s.io/pod-group" in str(info.value)


def test_policy() -> None:
    assert native_policy(native({"gang": {"minCount": 3}})) == 3
    assert native_policy(native({"basic": {}})) is None
    for bad in ({}, {"basic": {}, "gang": {"minCount": 1}}, {"gang": {"minCount": 0}}, {"gang": {"minCount": "3"}}):
        with pytest.raises(InvalidField):
            native_policy(native(bad))


def test_the_native_podgroup_gives_the_quorum() -> None:
    book = NativePodGroups()
    decl = parse_pod_gang(pod())
    assert book.adjust("ns/train", decl, None) is None  # no PodGroup yet: the pods wait
    assert book.on_event("ADDED", native({"gang": {"minCount": 3}})).changed
    spec = book.adjust("ns/train", decl, None)
    assert spec is not None and spec.min_member == 3 and spec.source == "native"
    assert book.on_event("MODIFIED", native({"gang": {"minCount": 5}})).changed  # minCount is mutable
    spec = book.adjust("ns/train", decl, None)
    assert spec is not None and spec.min_member == 5
    assert not book.on_event("MODIFIED", native({"gang": {"minCount": 5}})).changed
    book.on_event("ADDED", native({"basic": {}}, name="web"))
    assert book.basic("ns/web") and not book.basic("ns/train")
    bad = book.on_event("ADDED", native({}, name="odd"))
    assert bad.problem is not None and "spec.schedulingPolicy" in bad.problem
    assert book.on_event("ADDED", native({}, name="odd")).problem is None  # said once
    assert book.on_event("DELETED", native({"gang": {"minCount": 5}})).changed
    assert book.adjust("ns/train", decl, None) is None


def test_fields_not_honoured_yet_are_reported_once() -> None:
    """DESIGN.md: a field of a gang declaration is never silently ignored (honoured, or reported as unsupported)."""
    book = NativePodGroups()
    plain = native({"gang": {"minCount": 2}})
    plain["spec"]["disruptionMode"] = {"single": {}}  # the default: nothing to report
    assert book.on_event("ADDED", plain).unsupported is None
    rich = native({"gang": {"minCount": 2}})
    rich["spec"].update(
        schedulingConstraints={"topology": [{"key": "rack"}]},
        resourceClaims=[{"name": "gpus", "resourceClaimName": "c"}],
        priorityClassName="high",  # without spec.priority (no Priority admission): not honoured
        priority=None,
        disruptionMode={"all": {}},  # honoured
        preemptionPolicy="Never",  # honoured
    )
    notice = book.on_event("MODIFIED", rich).unsupported
    assert notice is not None
    assert notice.startswith("spec.priorityClassName: not honoured")  # any topology key; claims: state/dra.py
    rich["spec"]["priority"] = 1000
    assert book.on_event("MODIFIED", rich).unsupported is None  # priority resolved: nothing left to report
    assert book.on_event("MODIFIED", rich).unsupported is None


def test_topology_key_of_a_tier_is_honoured_any_other_too() -> None:
    """Issue 25: a key that is a tier's label uses the tier; any other node label is a domain of its own (honoured:
    core/placement/domains.py). Only other schedulingConstraints fields are reported."""
    from gangsched.models.native import topology_key, unsupported_fields

    pg = {
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "example.com/rack"}]},
        }
    }
    assert topology_key(pg) == "example.com/rack"
    assert topology_key({"spec": {"schedulingConstraints": {"topology": []}}}) is None
    assert unsupported_fields(pg, ("example.com/rack", "example.com/spine")) == ()
    assert unsupported_fields(pg, ("example.com/spine",)) == ()
    assert unsupported_fields(pg) == ()
    other = {"spec": {"schedulingConstraints": {"topology": [{"key": "rack"}], "future": {}}}}
    assert unsupported_fields(other) == ("spec.schedulingConstraints",)


def test_native_topology_becomes_a_hard_network_topology_at_that_tier() -> None:
    from gangsched.core.values.gangspec import TopologyMode
    from gangsched.models.gang import parse_pod_gang
    from gangsched.state.native import NativePodGroups

    native = NativePodGroups()
    native.tier_keys = ("example.com/rack", "example.com/spine")
    pg = {
        "metadata": {"name": "g", "namespace": "default", "uid": "u", "generation": 1},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "example.com/spine"}]},
        },
    }
    change = native.on_event("ADDED", pg)
    assert change.unsupported is None
    member = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"schedulerName": "gangsched", "schedulingGroup": {"podGroupName": "g"}},
    }
    spec = native.adjust("default/g", parse_pod_gang(member), None)
    assert spec is not None and spec.min_member == 2 and spec.network_topology is not None
    assert (spec.network_topology.mode, spec.network_topology.highest_tier_allowed) == (TopologyMode.HARD, 2)
    pg["spec"]["schedulingConstraints"] = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
    change = native.on_event("MODIFIED", pg)
    assert change.unsupported is None  # a label that is no tier: a domain of its own
    spec = native.adjust("default/g", parse_pod_gang(member), None)
    assert spec is not None and spec.network_topology is None
    assert spec.domain == DomainKey(label="topology.kubernetes.io/zone")


def test_group_priority_policy_and_disruption_apply_to_members() -> None:
    import pytest

    from gangsched.core.records.records import ClassRegistry, PodRecord
    from gangsched.core.values.errors import InvalidField
    from gangsched.models.gang import parse_pod_gang

    book = NativePodGroups()
    pg = native({"gang": {"minCount": 1}})
    pg["spec"].update(priority=1000, preemptionPolicy="Never", disruptionMode={"all": {}})
    book.on_event("ADDED", pg)
    spec_of: dict[str, Any] = {"schedulerName": "gangsched", "schedulingGroup": {"podGroupName": "train"}}
    member = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {**spec_of, "priority": 1000}}
    decl = parse_pod_gang(member)
    book.check_member(decl, {**spec_of, "priority": 1000})  # agrees
    with pytest.raises(InvalidField, match="the priority of its PodGroup train \\(1000\\)"):
        book.check_member(decl, {**spec_of, "priority": 0})
    record = book.member_record(decl, PodRecord("ns", "p", "uid", ClassRegistry().scheduling_class({"cpu": 1000})))
    assert record.preemption_policy == "Never"
    spec = book.adjust("ns/train", decl, None)
    assert spec is not None and spec.disrupt_whole
