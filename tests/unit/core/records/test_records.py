"""Records built from API dicts, equivalence classes, node affinity, taints and tolerations."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.fit.matching import preference, static_block
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.records.records import ClassRegistry
from gangsched.core.values.errors import InvalidField
from gangsched.models.node import node_from_api
from tests.builders import node_obj, pod_obj, pod_record

NODE = node_from_api(
    node_obj(
        "gpu-7",
        labels={"zone": "a", "gen": "5", "pool": "train"},
        taints=[
            {"key": "dedicated", "value": "infer", "effect": "NoSchedule"},
            {"key": "spot", "value": "", "effect": "PreferNoSchedule"},
        ],
    )
)
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoSchedule"}]


def _pod(**extra: Any) -> Any:
    return pod_record(pod_obj("p", spec_extra=extra), gang=None, ours=True)


def _required(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields:
        term["matchFields"] = fields
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


@pytest.mark.parametrize(
    ("extra", "blocked"),
    [
        pytest.param({}, "taint dedicated=infer", id="untolerated-taint"),
        pytest.param({"tolerations": TOLERATE}, None, id="tolerated"),
        pytest.param({"tolerations": [{"operator": "Exists"}]}, None, id="tolerate-everything"),
        pytest.param(
            {"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]},
            "taint dedicated=infer",
            id="wrong-effect",
        ),
        pytest.param({"tolerations": TOLERATE, "nodeSelector": {"zone": "a"}}, None, id="selector-match"),
        pytest.param({"tolerations": TOLERATE, "nodeSelector": {"zone": "b"}}, "node selector", id="selector-miss"),
        pytest.param(
            {"tolerations": TOLERATE, "affinity": _required({"key": "zone", "operator": "In", "values": ["a", "c"]})},
            None,
            id="in",
        ),
        pytest.param(
            {"tolerations": TOLERATE, "affinity": _required({"key": "zone", "operator": "NotIn", "values": ["a"]})},
            "node affinity",
            id="notin",
        ),
        pytest.param(
            {"tolerations": TOLERATE, "affinity": _required({"key": "pool", "operator": "Exists"})}, None, id="exists"
        ),
        pytest.param(
            {"tolerations": TOLERATE, "affinity": _required({"key": "pool", "operator": "DoesNotExist"})},
            "node affinity",
            id="does-not-exist",
        ),
        pytest.param(
            {"tolerations": TOLERATE, "affinity": _required({"key": "gen", "operator": "Gt", "values": ["4"]})},
            None,
            id="gt",
        ),
        pytest.param(
            {"tolerations": TOLERATE, "affinity": _required({"key": "gen", "operator": "Lt", "values": ["5"]})},
            "node affinity",
            id="lt",
        ),
        pytest.param(
            {
                "tolerations": TOLERATE,
                "affinity": _required(fields=[{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}]),
            },
            None,
            id="match-fields",
        ),
        pytest.param(
            {
                "tolerations": TOLERATE,
                "affinity": _required(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-7"]}]),
            },
            "node affinity",
            id="match-fields-notin",
        ),
    ],
)
def test_static_feasibility(extra: dict[str, Any], blocked: str | None) -> None:
    assert static_block(_pod(**extra).sclass, NODE) == blocked


def test_cordoned_node_blocks_unless_tolerated() -> None:
    node = node_from_api(node_obj("c", unschedulable=True))
    assert static_block(_pod().sclass, node) == "unschedulable"
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    assert static_block(_pod(tolerations=tol).sclass, node) is None


def test_preference_scores_preferred_affinity_and_prefer_no_schedule() -> None:
    pref = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 30,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                },
                {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}},
            ]
        }
    }
    assert preference(_pod(affinity=pref).sclass, NODE) == 30 - 100  # the spot taint costs 100
    spot_ok = [{"key": "spot", "operator": "Exists"}]
    assert preference(_pod(affinity=pref, tolerations=spot_ok).sclass, NODE) == 30


def test_equal_constraints_share_one_class() -> None:
    classes = ClassRegistry()
    a = pod_record(pod_obj("p", spec_extra={"nodeSelector": {"zone": "a"}}), classes)
    b = pod_record(pod_obj("q", spec_extra={"nodeSelector": {"zone": "a"}}), classes)
    c = pod_record(pod_obj("p", spec_extra={"nodeSelector": {"zone": "b"}}), classes)
    assert a.sclass is b.sclass
    assert a.sclass is not c.sclass
    assert a.requests == {"cpu": 1000, "pods": 1}


def test_pod_record_fields() -> None:
    obj = pod_obj("w-0", namespace="ml", priority=7, created="2024-01-01T00:00:10Z", node="n1", phase="Running")
    obj["metadata"]["annotations"] = {"gang.scheduling.koordinator.sh/timeout": "true"}
    obj["status"]["nominatedNodeName"] = "n2"
    obj["spec"]["preemptionPolicy"] = "Never"
    pod = pod_record(obj, gang="ml/g", role="worker", rank=0, ours=True)
    assert (pod.key, pod.priority, pod.node_name, pod.phase, pod.nominated_node) == ("ml/w-0", 7, "n1", "Running", "n2")
    assert pod.created == 1704067210.0 and pod.timed_out and pod.preemption_policy == "Never"
    assert (pod.gang, pod.role, pod.rank) == ("ml/g", "worker", 0)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        pytest.param(
            {"affinity": _required({"key": "a", "operator": "Near", "values": ["x"]})},
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator",
            id="bad-operator",
        ),
        pytest.param(
            {"affinity": _required({"key": "a", "operator": "Gt", "values": ["x"]})},
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].values",
            id="gt-not-integer",
        ),
        pytest.param(
            {"tolerations": [{"key": "a", "operator": "Maybe"}]}, "spec.tolerations[0].operator", id="bad-toleration"
        ),
        pytest.param({"priority": "high"}, "spec.priority", id="bad-priority"),
    ],
)
def test_bad_pod_input_names_the_field(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidField) as err:
        _pod(**extra)
    assert err.value.field == field


def test_node_record() -> None:
    n = node_from_api(node_obj("x", cpu="8", memory="16Gi", gpu=4, unschedulable=True))
    assert n.allocatable == {"cpu": 8000, "memory": 16 << 30, "pods": 110, "nvidia.com/gpu": 4}
    assert n.unschedulable
    other = node_from_api(node_obj("y", cpu="8", memory="16Gi", gpu=4))
    assert other.allocatable is n.allocatable  # identical allocatable maps are shared
    with pytest.raises(InvalidField, match=r"status\.allocatable\.cpu"):
        node_from_api(node_obj("z", cpu="many"))


@pytest.mark.parametrize(
    ("operator", "toleration", "taint", "tolerated"),
    [
        ("Lt", "100", "50", True),  # the taint's value is below the toleration's
        ("Lt", "100", "100", False),
        ("Lt", "100", "150", False),
        ("Gt", "10", "11", True),
        ("Gt", "10", "10", False),
        ("Gt", "-5", "0", True),  # signed
        ("Lt", "0700", "5", False),  # not canonical: leading zero (content.IsDecimalInteger)
        ("Lt", "100", "+5", False),  # not canonical: a plus sign
        ("Gt", "1", "-0", False),
        ("Gt", "1", "abc", False),
        ("Lt", "99999999999999999999", "1", False),  # beyond int64 (strconv.ParseInt fails)
    ],
)
def test_lt_gt_tolerations_compare_integers(operator: str, toleration: str, taint: str, tolerated: bool) -> None:
    """Kubernetes 1.37 toleration operators Lt and Gt (k8s.io/api core/v1/toleration.go ToleratesTaint and
    compareNumericValues, TaintTolerationComparisonOperators on; kube-scheduler's TaintToleration filter calls it):
    Lt tolerates a taint value smaller than the toleration's, Gt a larger one, both canonical decimal int64."""
    node = node_from_api(node_obj("n", taints=[{"key": "gpu-gen", "value": taint, "effect": "NoSchedule"}]))
    tol = [{"key": "gpu-gen", "operator": operator, "value": toleration, "effect": "NoSchedule"}]
    assert (static_block(_pod(tolerations=tol).sclass, node) is None) is tolerated


def test_unknown_toleration_operator_is_a_clear_error() -> None:
    with pytest.raises(InvalidField, match=r"spec.tolerations\[0\].operator.*Equal, Exists, Lt or Gt"):
        _pod(tolerations=[{"key": "k", "operator": "Ge", "value": "1"}])


def test_a_class_registry_interns_its_own_classes_and_label_keys() -> None:
    """core/records/records.py ClassRegistry (issue 23: the class tables are one object's, not module state).
    Oracle: Kubernetes matches a pod selector against the pod's own namespace and labels (k8s.io/apimachinery
    labels.Selector.Matches), so a class projected for selectors must carry exactly the keys some selector reads,
    and only in the registry that registered them."""
    mine, other = ClassRegistry(), ClassRegistry()
    a = mine.scheduling_class({"cpu": 1000})
    assert mine.scheduling_class({"cpu": 1000}) is a and a.id == 0 and a.registry is mine
    assert other.scheduling_class({"cpu": 2000}).id == 0  # (ids are per registry)
    labels = (("app", "web"), ("tier", "x"))
    assert mine.with_labels(a, "ns", labels) is a  # no selector reads pods yet
    mine.register_label_keys(["app"])
    projected = mine.with_labels(a, "ns", labels)
    assert (projected.namespace, projected.labels, projected.id) == ("ns", (("app", "web"),), 1)
    assert other.with_labels(other.scheduling_class({"cpu": 2000}), "ns", labels).labels == ()


def test_each_state_has_its_own_registry_and_refuses_another_ones_classes() -> None:
    """Issue 23 item 3: no process-wide registry; class ids are positions in one registry, so a class of another
    registry would alias one of the store's (same id, other constraints): the store refuses it, and so does a
    registry asked to derive a class (with_required, with_requests, with_labels) from another one's."""
    one, two = SchedulerState(), SchedulerState()
    assert one.classes is not two.classes
    assert SchedulerState(classes=one.classes).classes is one.classes
    stranger = pod_record(pod_obj("p"), two)
    with pytest.raises(ValueError, match="pod default/p: its scheduling class #0 was interned in another"):
        one.upsert_pod(stranger)
    assert not one.pods
    with pytest.raises(ValueError, match="another ClassRegistry"):
        one.classes.with_required(stranger.sclass, None)
    one.upsert_pod(pod_record(pod_obj("p"), one))
    assert one.pods["default/p"].sclass.registry is one.classes
