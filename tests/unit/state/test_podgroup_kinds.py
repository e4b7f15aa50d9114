"""PodGroups of two API groups (state/podgroup_kinds.py through state/cache.py), and the compat CRD.

- Koordinator's manual creates `PodGroup` in scheduling.sigs.k8s.io/v1alpha1 (koordinator-sh/koordinator
  apis/thirdparty/scheduler-plugins/pkg/apis/scheduling/v1alpha1 types.go: PodGroupSpec minMember, minResources,
  scheduleTimeoutSeconds) with pods labelled `pod-group.scheduling.sigs.k8s.io`: the cache uses it as the gang's
  PodGroup, and its status and events go to that object (PodGroupInfo.api_version).
- Both groups with one namespace/name: scheduling.x-k8s.io wins whatever the order of events; one PodGroupConflict
  Warning on the other object; deleting the winner hands the gang to the other one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.state.cache import ClusterCache
from tests.builders import member_obj, podgroup_obj

ROOT = Path(__file__).resolve().parents[3]
SIGS = "scheduling.sigs.k8s.io/v1alpha1"
XK8S = "scheduling.x-k8s.io/v1alpha1"


def pg(api_version: str, name: str = "g", min_member: int = 2, uid: str | None = None) -> dict[str, Any]:
    obj = podgroup_obj(name, min_member=min_member)
    obj["apiVersion"] = api_version
    obj["metadata"]["uid"] = uid or f"{api_version.split('/')[0]}-{name}"
    return obj


def conflicts(cache: ClusterCache) -> list[tuple[str, str, str]]:
    found = [(p.api_version, p.uid, p.message) for p in cache.problems if p.reason == "PodGroupConflict"]
    cache.problems.clear()
    return found


def test_sigs_podgroup_alone_is_the_gangs_podgroup() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup("ADDED", pg(SIGS, min_member=3))
    info = cache.podgroup("default/g")
    assert info is not None and info.api_version == SIGS and info.spec is not None and info.spec.min_member == 3
    labelled = member_obj("p-0")
    labelled["metadata"]["labels"] = {"pod-group.scheduling.sigs.k8s.io": "g"}
    cache.on_pod_event("ADDED", labelled)
    assert cache.cluster.gangs["default/g"].spec is not None
    assert cache.cluster.gangs["default/g"].spec.min_member == 3
    assert not cache.podgroups_to_create  # the sigs PodGroup is the gang's: none created


@pytest.mark.parametrize("sigs_first", [True, False])
def test_x_k8s_wins_with_one_warning_on_the_other(sigs_first: bool) -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    events = [pg(SIGS, min_member=5), pg(XK8S, min_member=2)]
    for obj in events if sigs_first else events[::-1]:
        cache.on_podgroup("ADDED", obj)
    info = cache.podgroup("default/g")
    assert info is not None and info.api_version == XK8S and info.spec is not None and info.spec.min_member == 2
    ((api_version, uid, message),) = conflicts(cache)
    assert (api_version, uid) == (SIGS, "scheduling.sigs.k8s.io-g")
    assert "scheduling.x-k8s.io/v1alpha1 one is used" in message
    for obj in events:  # updates of either: no second warning, the winner stays
        cache.on_podgroup("MODIFIED", obj)
    assert conflicts(cache) == []
    info = cache.podgroup("default/g")
    assert info is not None and info.api_version == XK8S


def test_a_sigs_podgroup_in_use_then_set_aside_has_its_status_cleared() -> None:
    """Its watch event came first: it was the gang's PodGroup and got a status; set aside for the
    scheduling.x-k8s.io one, that status is listed for removal (once), the other order lists nothing."""
    cache = ClusterCache(scheduler_name="gangsched")
    used = pg(SIGS)
    cache.on_podgroup("ADDED", used)
    used["status"] = {"phase": "Pending"}
    cache.on_podgroup("MODIFIED", used)  # (the echo of the status written to it)
    cache.on_podgroup("ADDED", pg(XK8S))
    assert cache.status_clears == [("default", "g")]
    cache.status_clears.clear()
    cache.on_podgroup("MODIFIED", pg(XK8S))
    assert cache.status_clears == []
    other = ClusterCache(scheduler_name="gangsched")
    other.on_podgroup("ADDED", pg(XK8S))
    other.on_podgroup("ADDED", dict(pg(SIGS), status={"phase": "Running"}))  # (someone else's status: left alone)
    assert other.status_clears == []


def test_deleting_the_winner_hands_the_gang_to_the_other() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup("ADDED", pg(XK8S, min_member=2))
    cache.on_podgroup("ADDED", pg(SIGS, min_member=5))
    cache.on_podgroup("DELETED", pg(XK8S, min_member=2))
    info = cache.podgroup("default/g")
    assert info is not None and info.api_version == SIGS and info.spec is not None and info.spec.min_member == 5
    cache.on_podgroup("DELETED", pg(SIGS, min_member=5))
    assert cache.podgroup("default/g") is None
    assert cache.podgroup_kinds.sizes() == 0
    assert cache.gang_structure_sizes()["sources"] == 0


def test_a_shadowed_sigs_podgroup_deleted_leaves_the_winner() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup("ADDED", pg(XK8S))
    cache.on_podgroup("ADDED", pg(SIGS))
    cache.on_podgroup("DELETED", pg(SIGS))
    info = cache.podgroup("default/g")
    assert info is not None and info.api_version == XK8S
    cache.on_podgroup("ADDED", pg(SIGS, uid="new-uid"))  # a new object: warned about again
    assert [c[1] for c in conflicts(cache)] == ["scheduling.sigs.k8s.io-g", "new-uid"]


def test_invalid_sigs_podgroup_is_reported_on_that_object() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    bad = pg(SIGS)
    bad["spec"]["minMember"] = 0
    cache.on_podgroup("ADDED", bad)
    (problem,) = [p for p in cache.problems if p.reason == "InvalidSpec"]
    assert problem.api_version == SIGS and problem.kind == "PodGroup"


def _crd(path: Path) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    (doc,) = docs
    return doc


def test_compat_crd_has_the_same_schema_in_the_sigs_group_without_short_names() -> None:
    ours, compat = _crd(ROOT / "crds" / "podgroups.yaml"), _crd(ROOT / "crds" / "compat" / "podgroups-sigs.yaml")
    assert compat["metadata"]["name"] == "podgroups.scheduling.sigs.k8s.io"
    assert compat["spec"]["group"] == "scheduling.sigs.k8s.io"
    assert compat["spec"]["versions"] == ours["spec"]["versions"]
    assert "shortNames" not in compat["spec"]["names"]  # `kubectl get pg` stays gangsched's PodGroup
    assert {k: v for k, v in ours["spec"]["names"].items() if k != "shortNames"} == compat["spec"]["names"]


@pytest.mark.parametrize("api_version", [XK8S, SIGS])
def test_deletion_of_the_old_object_seen_after_the_recreated_one_keeps_the_new_one(api_version: str) -> None:
    """Kopf runs each object's events in its own worker, keyed by uid (kopf/_core/reactor/queueing.py get_uid and
    worker): nothing orders the events of two objects, so the DELETED of a PodGroup may be handled after the ADDED of
    the one created again under its name. The cache keeps the live object (and the deletion leaves the other group's
    routing alone); the live object's own deletion still removes it."""
    cache = ClusterCache(scheduler_name="gangsched")
    old, new = pg(api_version, uid="old"), pg(api_version, uid="new")
    cache.on_podgroup("ADDED", old)
    cache.on_podgroup("ADDED", new)
    cache.on_podgroup("DELETED", old)
    current = cache.podgroup("default/g")
    assert current is not None and current.uid == "new"
    assert "default/g" in cache.dirty_gangs
    cache.on_podgroup("DELETED", new)
    assert cache.podgroup("default/g") is None
    assert cache.podgroup_kinds.sizes() == 0
