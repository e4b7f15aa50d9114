"""models/rank: where a member's rank comes from, the resulting order, numeric ranks, bad values."""

from __future__ import annotations

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.rank import (
    JOB_COMPLETION_INDEX,
    JOBSET_JOB_GLOBAL_INDEX,
    JOBSET_JOB_INDEX,
    KUBEFLOW_REPLICA_INDEX,
    KUBEFLOW_REPLICA_TYPE,
    RANK_ANNOTATION,
    MemberMeta,
    RankKey,
    member_rank_key,
    member_ranks,
    rank_order,
)


def m(name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> MemberMeta:
    return MemberMeta(name=name, labels=labels or {}, annotations=annotations or {})


@pytest.mark.parametrize(
    ("member", "key"),
    [
        pytest.param(
            m("p", annotations={RANK_ANNOTATION: "7", JOB_COMPLETION_INDEX: "1"}),
            RankKey("annotation", (7,)),
            id="gang-annotation-wins",
        ),
        pytest.param(
            m("p", annotations={JOB_COMPLETION_INDEX: "3"}),
            RankKey("job-completion-index", (3,)),
            id="completion-index-annotation",
        ),
        pytest.param(
            m("p", labels={JOB_COMPLETION_INDEX: "4"}),
            RankKey("job-completion-index", (4,)),
            id="completion-index-label",
        ),
        pytest.param(
            m("p", labels={JOBSET_JOB_INDEX: "2"}, annotations={JOB_COMPLETION_INDEX: "1"}),
            RankKey("jobset", (2, 1)),
            id="jobset-job-index",
        ),
        pytest.param(
            m(
                "p",
                labels={JOBSET_JOB_INDEX: "0", JOBSET_JOB_GLOBAL_INDEX: "5"},
                annotations={JOB_COMPLETION_INDEX: "1"},
            ),
            RankKey("jobset", (5, 1)),
            id="jobset-global-index",
        ),
        pytest.param(
            m("p", labels={KUBEFLOW_REPLICA_INDEX: "2", KUBEFLOW_REPLICA_TYPE: "worker"}),
            RankKey("kubeflow", (1, 2)),
            id="kubeflow-worker",
        ),
        pytest.param(
            m("p", labels={KUBEFLOW_REPLICA_INDEX: "0", KUBEFLOW_REPLICA_TYPE: "Master"}),
            RankKey("kubeflow", (0, 0)),
            id="kubeflow-master",
        ),
        pytest.param(m("p", labels={"app": "x"}), None, id="none"),
    ],
)
def test_rank_sources_in_order(member: MemberMeta, key: RankKey | None) -> None:
    assert member_rank_key(member) == key


def test_natural_name_order_without_ranks() -> None:
    members = [m("w-10"), m("w-2"), m("w-1"), m("w-0")]
    assert rank_order(members) == ["w-0", "w-1", "w-2", "w-10"]
    assert member_ranks(members) == {"w-0": 0, "w-1": 1, "w-2": 2, "w-10": 3}


def test_explicit_ranks_beat_names_and_come_first() -> None:
    members = [m("a", annotations={RANK_ANNOTATION: "1"}), m("b", annotations={RANK_ANNOTATION: "0"}), m("c")]
    assert rank_order(members) == ["b", "a", "c"]
    assert member_ranks(members) == {"b": 0, "a": 1, "c": 2}


def test_jobset_ranks_are_job_index_times_pods_per_job_plus_completion_index() -> None:
    members = [
        m(f"js-{j}-{c}", labels={JOBSET_JOB_INDEX: str(j)}, annotations={JOB_COMPLETION_INDEX: str(c)})
        for j in (1, 0)
        for c in (2, 0, 1)
    ]
    assert rank_order(members) == ["js-0-0", "js-0-1", "js-0-2", "js-1-0", "js-1-1", "js-1-2"]
    ranks = member_ranks(members)
    assert ranks["js-1-0"] == 3 and ranks["js-1-2"] == 5  # pods per job = 3


def test_kubeflow_master_first_then_workers_shifted_by_one() -> None:
    members = [
        m("job-worker-1", labels={KUBEFLOW_REPLICA_INDEX: "1", KUBEFLOW_REPLICA_TYPE: "worker"}),
        m("job-worker-0", labels={KUBEFLOW_REPLICA_INDEX: "0", KUBEFLOW_REPLICA_TYPE: "worker"}),
        m("job-master-0", labels={KUBEFLOW_REPLICA_INDEX: "0", KUBEFLOW_REPLICA_TYPE: "master"}),
    ]
    assert rank_order(members) == ["job-master-0", "job-worker-0", "job-worker-1"]
    assert member_ranks(members) == {"job-master-0": 0, "job-worker-0": 1, "job-worker-1": 2}


def test_duplicate_ranks_fall_back_to_names() -> None:
    members = [m("b", annotations={RANK_ANNOTATION: "0"}), m("a", annotations={RANK_ANNOTATION: "0"})]
    assert rank_order(members) == ["a", "b"]


@pytest.mark.parametrize(
    ("member", "field"),
    [
        pytest.param(
            m("p", annotations={RANK_ANNOTATION: "one"}),
            f"pod p: metadata.annotations[{RANK_ANNOTATION}]",
            id="gang-annotation",
        ),
        pytest.param(
            m("p", annotations={JOB_COMPLETION_INDEX: "-1"}),
            f"pod p: metadata.annotations[{JOB_COMPLETION_INDEX}]",
            id="negative-completion-index",
        ),
        pytest.param(
            m("p", labels={KUBEFLOW_REPLICA_INDEX: "1.5"}),
            f"pod p: metadata.labels[{KUBEFLOW_REPLICA_INDEX}]",
            id="kubeflow-fraction",
        ),
    ],
)
def test_bad_rank_values_name_the_key(member: MemberMeta, field: str) -> None:
    with pytest.raises(InvalidField) as err:
        member_rank_key(member)
    assert err.value.field == field
    assert "non-negative integer" in str(err.value)
