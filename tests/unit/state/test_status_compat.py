"""PodGroup status as the ecosystem reads it (issue 14 item 4): Finished under statusCompatibility: scheduler-plugins,
occupiedBy as scheduler-plugins computes it, placedTier / placedGroupTier from the members placed now (none once they
are gone), a message that agrees with the Scheduled condition, and a timed-out gang that stays Timeout after a restart.

Oracles: kubernetes-sigs/scheduler-plugins pkg/controllers/podgroup_controller.go (Reconcile: Finished once
succeeded >= minMember, Scheduled only when scheduled >= minMember; fillOccupiedObj: "<pod namespace>/<owner name>"
for each ownerReference of pods[0], sorted, joined by ",", filled at Pending -> PreScheduling once len(pods) >=
minMember and never cleared) and apis/scheduling/v1alpha1/types.go (PodGroupFinished = "Finished").
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.memory.plan import GangStatus
from gangsched.core.records.records import PodRecord
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.errors import InvalidField
from gangsched.models.config import config_from_mapping
from gangsched.models.keys import KOORD_TIMEOUT
from gangsched.models.podgroup import occupied_by
from gangsched.state.cache import ClusterCache
from gangsched.state.placed_tiers import PlacedTiers, placed_tiers
from gangsched.state.status import GangStatusBook
from tests.builders import member_obj, node_obj, pod_obj, pod_record, podgroup_obj

BINDING = GangStatus(4, 0, 0, "Binding", "4 members bound or binding (minMember 4)", tier=1)


def _member(name: str, node: str | None = None, phase: str = "Pending", rank: int | None = None) -> PodRecord:
    return pod_record(pod_obj(name, node=node, phase=phase), gang="default/g", ours=True, rank=rank)


def _args(members: list[PodRecord], **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "min_member": 4,
        "members": members,
        "generation": 1,
        "decided": BINDING,
        "satisfied": True,
        "timed_out": False,
        "invalid": None,
        "in_flight": 0,
        "now_iso": "2024-01-01T00:00:00Z",
    }
    args.update(kw)
    return args


def _status(members: list[PodRecord], book: GangStatusBook | None = None, **kw: Any) -> dict[str, Any]:
    body = (book or GangStatusBook()).status_of("default/g", **_args(members, **kw))
    assert body is not None
    return body


def _gang(phase: str, count: int = 4) -> list[PodRecord]:
    return [_member(f"g-{i}", node=f"n{i}", phase=phase) for i in range(count)]


@pytest.mark.parametrize(
    ("compatibility", "pod_phase", "expected"),
    [
        pytest.param("gangsched", "Succeeded", "Succeeded", id="default-succeeded"),
        pytest.param("scheduler-plugins", "Succeeded", "Finished", id="compat-finished"),
        pytest.param("scheduler-plugins", "Running", "Running", id="compat-running-unchanged"),
        pytest.param("scheduler-plugins", "Failed", "Failed", id="compat-failed-unchanged"),
    ],
)
def test_status_table_names_all_done_by_compatibility(compatibility: str, pod_phase: str, expected: str) -> None:
    body = _status(_gang(pod_phase), GangStatusBook(compatibility=compatibility))
    assert body["phase"] == expected


def test_config_switch_is_documented_and_defaults_to_succeeded() -> None:
    assert config_from_mapping({}).status_compatibility == "gangsched"
    assert config_from_mapping({"statusCompatibility": "scheduler-plugins"}).status_compatibility == "scheduler-plugins"
    with pytest.raises(InvalidField, match="statusCompatibility"):
        config_from_mapping({"statusCompatibility": "volcano"})


def test_scheduled_never_shown_below_min_member() -> None:
    """Issue 14: `Scheduled` with `scheduled: 2` below `minMember: 4`. Regression: the core marked the gang satisfied
    and decided 4 binds, 2 succeeded: Scheduling (2 still in flight), never Scheduled."""
    members = [_member(f"g-{i}", node=f"n{i}" if i < 2 else None) for i in range(4)]
    body = _status(members, in_flight=2)
    assert (body["phase"], body["conditions"][0]["status"]) == ("Scheduling", "False")
    body = _status(members, in_flight=0, satisfied=False, decided=None)
    assert body["phase"] not in {"Scheduled", "Running"} and body["scheduled"] == 2


def test_running_gang_message_is_its_scheduled_condition() -> None:
    """Was: a Running gang showed "4 members bound or binding (minMember 4)", the binding decision's message."""
    body = _status(_gang("Running"))
    condition = body["conditions"][0]
    assert (body["phase"], condition["status"]) == ("Running", "True")
    assert body["message"] == condition["message"] == "4 of 4 members bound (minMember 4); 4 running"


def test_occupied_by_is_scheduler_plugins_format() -> None:
    refs = [{"name": "job-b", "uid": "u2"}, {"name": "job-a", "uid": "u1"}]
    assert occupied_by("team", refs) == "team/job-a,team/job-b"
    assert occupied_by("team", []) is None
    assert occupied_by("team", None) is None


def test_occupied_by_filled_once_min_member_pods_exist_and_kept() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0", cpu="8"))
    cache.on_podgroup("ADDED", podgroup_obj("g", min_member=2))
    for name in ("g-b", "g-a"):  # the first by name (the API's list order) is g-a
        pod = member_obj(name, group="g")
        pod["metadata"]["ownerReferences"] = [{"kind": "Job", "name": f"job-{name}", "uid": f"j-{name}"}]
        cache.on_pod_event("ADDED", pod)
    book = GangStatusBook()
    members = cache.members("default/g")
    first = cache.occupants[min(members, key=lambda p: p.name).key]
    assert first == "default/job-g-a"
    body = _status(members[:1], book, min_member=2, decided=None, satisfied=False, occupied_by=first)
    assert "occupiedBy" not in body  # fewer than minMember pods: not filled yet
    body = _status(members, book, min_member=2, decided=None, satisfied=False, occupied_by=first)
    assert body["occupiedBy"] == "default/job-g-a"
    body = _status([], book, min_member=2, decided=None, satisfied=False, occupied_by=None)
    assert body["occupiedBy"] == "default/job-g-a"  # never cleared (scheduler-plugins)


def _tree() -> TopologyTree:
    return TopologyTree.from_domains(
        [
            Domain(1, "tor-a", parents=("spine",), children=("n0", "n1")),
            Domain(1, "tor-b", parents=("spine",), children=("n2", "n3")),
            Domain(2, "spine"),
        ]
    )


@pytest.mark.parametrize(
    ("nodes", "group_size", "expected"),
    [
        pytest.param(["n0", "n1", "n0", "n1"], 1, PlacedTiers(1, None), id="one-tor-no-groups"),
        pytest.param(["n0", "n1", "n2", "n3"], 2, PlacedTiers(2, 1), id="groups-per-tor"),
        pytest.param(["n0", "n2", "n1", "n3"], 2, PlacedTiers(2, 2), id="groups-across-tors"),
        pytest.param(["n0", "n0", "n0"], 2, PlacedTiers(1, 1), id="short-last-group"),
    ],
)
def test_placed_tiers_from_bound_members(nodes: list[str], group_size: int, expected: PlacedTiers) -> None:
    members = [_member(f"g-{i}", node=node, rank=i) for i, node in enumerate(nodes)]
    assert placed_tiers(_tree(), members, group_size) == expected


def test_placed_tiers_unknown_without_tree_or_bound_members() -> None:
    assert placed_tiers(None, _gang("Running"), 2) is None
    assert placed_tiers(_tree(), [_member("g-0")], 2) is None
    assert placed_tiers(_tree(), [_member("g-0", node="elsewhere")], 2) is None


def test_tiers_written_while_placed_and_cleared_when_the_pods_are_gone() -> None:
    """Was: a stale Tier after the pods were deleted (the core's decision outlived them)."""
    book = GangStatusBook()
    body = _status(_gang("Running"), book, placed=PlacedTiers(2, 1))
    assert (body["placedTier"], body["placedGroupTier"]) == (2, 1)
    body = _status([], book, placed=None)  # the core's last decision still names tier 1: nothing holds it
    assert body["placedTier"] is None and body["placedGroupTier"] is None  # null: the merge patch removes them
    body = _status([_member(f"g-{i}") for i in range(4)], book, placed=None, in_flight=4)
    assert body["placedTier"] == 1  # binds in flight: the tier the core chose for them


def test_timed_out_gang_restored_from_the_pods_annotation() -> None:
    """After a restart the previous leader's GangTimeout survives only as the pods' annotation (and the PodGroup's
    condition): the gang is timed out again and its PodGroup stays Timeout, not Pending."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0", cpu="1"))
    cache.on_podgroup("ADDED", podgroup_obj("g", min_member=3, phase="Timeout"))
    for i in range(3):
        cache.on_pod_event("ADDED", member_obj(f"g-{i}", group="g", annotations={KOORD_TIMEOUT: "true"}))
    assert not cache.cluster.gangs["default/g"].timed_out  # what a new leader knows before restoring
    cache.cluster.restore_nominations(now=100.0)
    gang = cache.cluster.gangs["default/g"]
    assert gang.timed_out and gang.last_status is not None and gang.last_status.reason == "GangTimeout"
    body = _status(
        cache.members("default/g"),
        min_member=3,
        decided=gang.last_status,
        satisfied=False,
        timed_out=gang.timed_out,
    )
    assert body["phase"] == "Timeout"
    assert {c["type"]: c["status"] for c in body["conditions"]}["Timeout"] == "True"


def test_recreated_pods_are_not_timed_out_by_a_stale_condition() -> None:
    """The evidence is the pods' annotation: pods re-created while no leader ran start afresh."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0", cpu="1"))
    cache.on_podgroup("ADDED", podgroup_obj("g", min_member=3, phase="Timeout"))
    for i in range(3):
        cache.on_pod_event("ADDED", member_obj(f"g-{i}", group="g"))
    cache.cluster.restore_nominations(now=100.0)
    assert not cache.cluster.gangs["default/g"].timed_out
