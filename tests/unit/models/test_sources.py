"""Gang sources of issue 14 item 2 (models/gang.py, models/koordinator.py), each with pods built the way the controller
that creates them builds them:

- Kueue plain-pod groups: label `kueue.x-k8s.io/pod-group-name`, annotation `kueue.x-k8s.io/pod-group-total-count`,
  label `kueue.x-k8s.io/managed`, scheduling gate `kueue.x-k8s.io/admission` (kubernetes-sigs/kueue
  pkg/controller/jobs/pod/constants: GroupNameLabel, GroupTotalCountAnnotation, ManagedLabelKey, SchedulingGateName;
  pod_webhook.go adds the gate; site/content/en/docs/tasks/run/plain_pods.md shows the group).
- LeaderWorkerSet with its Volcano provider: annotation `scheduling.k8s.io/group-name` =
  `<lws>-<group index>-<revision>` (kubernetes-sigs/lws pkg/schedulerprovider/volcano_provider.go
  InjectPodGroupMetadata, interface.go GetPodGroupName), annotation `leaderworkerset.sigs.k8s.io/size` and the
  name / group-index / worker-index / template-revision-hash labels (api/leaderworkerset/v1/leaderworkerset_types.go).
- Koordinator: `mode` ("Strict\\NonStrict" is the value its own manual shows; pkg/scheduler/plugins/coscheduling/core
  falls back to Strict on an illegal mode), `match-policy` (core/gang.go isGangValidForPermit), `network-topology-spec`
  (apis/extension NetworkTopologySpec; the example of its network-topology-aware scheduling manual).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.gangspec import GangMode, NetworkTopology, TopologyMode
from gangsched.models import keys
from gangsched.models.gang import parse_pod_gang, referenced_gang
from gangsched.models.koordinator import Notice, gang_notices, parse_network_topology_spec
from gangsched.models.rank import MemberMeta, member_ranks
from gangsched.state.notices import GangNotices

K = "gang.scheduling.koordinator.sh/"


def kueue_pod(name: str, group: str, total: str, **annotations: str) -> dict[str, Any]:
    """A plain pod of a Kueue pod group, as its docs and pod webhook make it (gated until admitted)."""
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "labels": {
                "kueue.x-k8s.io/queue-name": "user-queue",
                "kueue.x-k8s.io/pod-group-name": group,
                "kueue.x-k8s.io/managed": "true",
            },
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": total, **annotations},
        },
        "spec": {"schedulerName": "gangsched", "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
    }


def lws_pod(lws: str, group: int, worker: int, size: str | None = "4", revision: str = "5d8f7b9c4") -> dict[str, Any]:
    """A LeaderWorkerSet pod (leader: worker index 0) with the Volcano provider's group-name annotation."""
    annotations = {"scheduling.k8s.io/group-name": f"{lws}-{group}-{revision}"}
    if size is not None:
        annotations["leaderworkerset.sigs.k8s.io/size"] = size
    return {
        "metadata": {
            "name": f"{lws}-{group}" if worker == 0 else f"{lws}-{group}-{worker}",
            "namespace": "serving",
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": lws,
                "leaderworkerset.sigs.k8s.io/group-index": str(group),
                "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
                "leaderworkerset.sigs.k8s.io/template-revision-hash": revision,
            },
            "annotations": annotations,
        }
    }


def test_kueue_pod_group_is_a_gang_of_its_total_count() -> None:
    gang = parse_pod_gang(kueue_pod("sample-0", "sample-group", "3"))
    assert gang is not None and gang.spec is not None
    assert (gang.key, gang.declared_by) == ("team-a/sample-group", keys.KUEUE_GROUP_NAME)
    assert (gang.spec.min_member, gang.spec.total_member) == (3, 3)
    assert referenced_gang(kueue_pod("x", "sample-group", "3")) == "team-a/sample-group"


def test_kueue_quorum_from_koordinator_min_available_wins() -> None:
    gang = parse_pod_gang(kueue_pod("sample-0", "g", "4", **{K + "min-available": "2"}))
    assert gang is not None and gang.spec is not None
    assert (gang.spec.min_member, gang.spec.total_member) == (2, 2)


@pytest.mark.parametrize("total", ["0", "three", "-1", "99999999999"])
def test_kueue_invalid_total_count_names_the_annotation(total: str) -> None:
    with pytest.raises(InvalidField) as caught:
        parse_pod_gang(kueue_pod("p", "g", total))
    assert caught.value.field == keys.KUEUE_GROUP_TOTAL_COUNT
    assert total in str(caught.value)


def test_lws_volcano_group_is_a_gang_of_the_lws_size() -> None:
    leader, worker = parse_pod_gang(lws_pod("vllm", 1, 0)), parse_pod_gang(lws_pod("vllm", 1, 3))
    assert leader is not None and worker is not None and leader.spec is not None
    assert leader.key == worker.key == "serving/vllm-1-5d8f7b9c4"
    assert leader.declared_by == keys.VOLCANO_GROUP_NAME
    assert (leader.spec.min_member, leader.spec.total_member) == (4, 4)


def test_lws_size_as_a_label_counts_too() -> None:
    obj = lws_pod("vllm", 0, 1, size=None)
    obj["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/size"] = "2"
    gang = parse_pod_gang(obj)
    assert gang is not None and gang.spec is not None and gang.spec.min_member == 2


def test_volcano_name_without_a_count_references_a_podgroup() -> None:
    gang = parse_pod_gang(lws_pod("vllm", 0, 1, size=None))
    assert gang is not None and gang.spec is None and gang.key == "serving/vllm-0-5d8f7b9c4"


def test_scheduler_plugins_label_wins_over_the_new_sources() -> None:
    obj = kueue_pod("p", "kueue-group", "3")
    obj["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "pg"
    gang = parse_pod_gang(obj)
    assert gang is not None and gang.key == "team-a/pg" and gang.spec is None  # the total count is Kueue's only


# ---------------------------------------------------------------- Koordinator


def koord_pod(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "annotations": {K + "name": "g", **annotations}}}


@pytest.mark.parametrize("mode", ["Strict\\NonStrict", "strict", "Loose"])
def test_unparsable_mode_is_strict_with_one_warning(mode: str) -> None:
    gang = parse_pod_gang(koord_pod(**{K + "min-available": "2", K + "mode": mode}))
    assert gang is not None and gang.spec is not None and gang.spec.mode is GangMode.STRICT
    (notice,) = gang_notices({K + "mode": mode})
    assert (notice.type, notice.reason) == ("Warning", "InvalidGangMode")
    assert K + "mode" in notice.message and "Strict" in notice.message


def test_valid_modes_say_nothing() -> None:
    assert gang_notices({K + "mode": ""}) == ()  # Koordinator: empty is its default, Strict
    gang = parse_pod_gang(koord_pod(**{K + "min-available": "2", K + "mode": "NonStrict"}))
    assert gang is not None and gang.spec is not None and gang.spec.mode is GangMode.NON_STRICT
    assert gang_notices({K + "mode": "NonStrict", K + "min-available": "2", K + "name": "g"}) == ()


@pytest.mark.parametrize(
    ("key", "policy", "expected"),
    [
        pytest.param(K + "match-policy", "waiting-and-running", None, id="waiting-and-running-is-the-core-rule"),
        pytest.param(K + "match-policy", "once-satisfied", ("Normal", "MatchPolicyApproximated"), id="once-satisfied"),
        pytest.param(K + "match-policy", "only-waiting", ("Normal", "MatchPolicyApproximated"), id="only-waiting"),
        pytest.param(K + "match-policy", "always", ("Warning", "InvalidMatchPolicy"), id="invalid"),
        pytest.param(
            "pod-group.scheduling.sigs.k8s.io/match-policy",
            "only-waiting",
            ("Normal", "MatchPolicyApproximated"),
            id="alias-key",
        ),
    ],
)
def test_match_policy_notices(key: str, policy: str, expected: tuple[str, str] | None) -> None:
    notices = gang_notices({key: policy})
    if expected is None:
        assert notices == ()
    else:
        (notice,) = notices
        assert (notice.type, notice.reason) == expected
        assert key in notice.message and "approximated" in notice.message


def test_unsupported_koordinator_keys_are_named() -> None:
    notices = gang_notices({K + "min-available": "2", K + "preemptible": "true", K + "network-topology-index": "0"})
    assert notices == (
        Notice("Warning", "UnsupportedAnnotation", f"unsupported: {K}preemptible is not supported here: ignored"),
    )


MANUAL_PREFER = '{"gatherStrategy": [{"layer": "BlockLayer", "strategy": "PreferGather"},'
MANUAL_PREFER += ' {"layer": "SpineLayer", "strategy": "PreferGather"}]}'


@pytest.mark.parametrize(
    ("spec", "topology", "unmapped"),
    [
        pytest.param(MANUAL_PREFER, NetworkTopology(mode=TopologyMode.SOFT), 0, id="manual-prefer-gather"),
        pytest.param(
            '{"gatherStrategy": [{"layer": "BlockLayer", "strategy": "MustGather"}]}',
            NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=1),
            0,
            id="must-gather-block",
        ),
        pytest.param(
            '{"gatherStrategy": [{"layer": "SpineLayer", "strategy": "MustGather"},'
            ' {"layer": "BlockLayer", "strategy": "PreferGather", "podCountMultiple": 8}]}',
            NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=2, group_size=8),
            0,
            id="must-spine-prefer-block-multiple",
        ),
        pytest.param(
            '{"gatherStrategy": [{"layer": "NodeTopologyLayer", "strategy": "MustGather"}]}', None, 1, id="node-layer"
        ),
        pytest.param('{"gatherStrategy": [{"layer": "ClusterTopologyLayer", "strategy": "MustGather"}]}', None, 0),
        pytest.param("{}", None, 0, id="empty-object"),
        pytest.param("", None, 0, id="empty-annotation"),
    ],
)
def test_network_topology_spec_maps_onto_tiers(spec: str, topology: NetworkTopology | None, unmapped: int) -> None:
    mapping = parse_network_topology_spec(spec)
    assert mapping.topology == topology
    assert len(mapping.unmapped) == unmapped
    notices = gang_notices({K + "network-topology-spec": spec})
    assert [n.reason for n in notices] == ["UnsupportedTopology"] * unmapped


@pytest.mark.parametrize(
    "spec",
    [
        "not json",
        "[]",
        '{"gatherStrategy": {}}',
        '{"gatherStrategy": [{"strategy": "MustGather"}]}',
        '{"gatherStrategy": [{"layer": "BlockLayer", "strategy": "Gather"}]}',
        '{"gatherStrategy": [{"layer": "BlockLayer", "strategy": "MustGather", "podCountMultiple": "8"}]}',
    ],
)
def test_invalid_network_topology_spec_names_the_annotation(spec: str) -> None:
    with pytest.raises(InvalidField) as caught:
        parse_pod_gang(koord_pod(**{K + "min-available": "2", K + "network-topology-spec": spec}))
    assert caught.value.field == K + "network-topology-spec"


def test_network_topology_spec_sets_the_gang_topology_and_gangsched_keys_win() -> None:
    spec = '{"gatherStrategy": [{"layer": "BlockLayer", "strategy": "MustGather"}]}'
    gang = parse_pod_gang(koord_pod(**{K + "min-available": "2", K + "network-topology-spec": spec}))
    assert gang is not None and gang.spec is not None
    assert gang.spec.network_topology == NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=1)
    both = koord_pod(**{K + "min-available": "2", K + "network-topology-spec": spec, keys.TOPOLOGY_MODE: "soft"})
    gang = parse_pod_gang(both)
    assert gang is not None and gang.spec is not None and gang.spec.network_topology is not None
    assert gang.spec.network_topology.mode is TopologyMode.SOFT


def test_notices_are_said_once_per_gang() -> None:
    book = GangNotices()
    notices = gang_notices({K + "mode": "Strict\\NonStrict", K + "match-policy": "only-waiting"})
    assert len(book.new("ns/g", notices)) == 2
    assert book.new("ns/g", notices) == []
    assert len(book.new("ns/h", notices)) == 2
    book.forget("ns/g")
    assert len(book) == 1 and len(book.new("ns/g", notices)) == 2


def test_lws_worker_index_is_the_rank() -> None:
    """LWS labels the leader worker-index 0 and its workers 1..size-1 (pkg/controllers/pod_controller.go)."""
    members = [
        MemberMeta(name=obj["metadata"]["name"], labels=obj["metadata"]["labels"])
        for obj in (lws_pod("vllm", 1, w) for w in (10, 2, 0, 1))
    ]
    assert member_ranks(members) == {"vllm-1": 0, "vllm-1-1": 1, "vllm-1-2": 2, "vllm-1-10": 10}
