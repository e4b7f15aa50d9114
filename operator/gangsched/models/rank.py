"""A gang member's rank: which slot of a topology placement it takes (placement.nodes[i] is rank i's node).

Contract: `rank_order(members) -> list[str]` returns the members' names in rank order; position i in that list takes
`TopologyPlacement.nodes[i]`. `member_rank_key(member)` is the explicit rank of one member (or None),
`member_ranks(members)` the numeric ranks. Sources, first match wins per member: Koordinator's network-topology-index
annotation; JobSet's job (global) index with the completion index; an Indexed Job's completion index; Kubeflow's
replica index (master/chief/launcher first); LeaderWorkerSet's worker index; KubeRay's head as 0; otherwise natural
name order. Members with an explicit rank come first (ties by name), then the others in natural name order.
Every index is a decimal int32 >= 0, refused before conversion when longer; bad values raise `InvalidField` naming
the label or annotation, the value and what is allowed. More: docs/modules.md#modelsrankpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from gangsched.core import natural_key
from gangsched.models.fields import INT32_MAX, decimal

RANK_ANNOTATION: Final = "gang.scheduling.koordinator.sh/network-topology-index"
JOB_COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
KUBEFLOW_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
KUBEFLOW_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
JOBSET_JOB_GLOBAL_INDEX: Final = "jobset.sigs.k8s.io/job-global-index"
JOBSET_JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
LWS_WORKER_INDEX: Final = "leaderworkerset.sigs.k8s.io/worker-index"
RAY_NODE_TYPE: Final = "ray.io/node-type"

_LEADER_TYPES: Final = frozenset({"master", "chief", "launcher"})


@dataclass(frozen=True)
class MemberMeta:
    """What rank ordering needs of a pod: its name, labels and annotations."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RankKey:
    """An explicit rank: `source` names where it came from; `parts` orders members of that source."""

    source: str
    parts: tuple[int, ...]


def _index(member: MemberMeta, key: str, *, where: str) -> int | None:
    mapping = member.annotations if where == "annotation" else member.labels
    raw = mapping.get(key)
    if raw is None:
        return None
    plural = "annotations" if where == "annotation" else "labels"
    return decimal(
        raw,
        field=f"pod {member.name}: metadata.{plural}[{key}]",
        minimum=0,
        maximum=INT32_MAX,
        allowed=f"must be a non-negative integer <= {INT32_MAX} (the member's index)",
    )


def _either(member: MemberMeta, key: str) -> int | None:
    value = _index(member, key, where="annotation")
    return value if value is not None else _index(member, key, where="label")


def member_rank_key(member: MemberMeta) -> RankKey | None:
    """The member's explicit rank, or None when it has none (see the module docstring for the order)."""
    value = _index(member, RANK_ANNOTATION, where="annotation")
    if value is not None:
        return RankKey("annotation", (value,))
    completion = _either(member, JOB_COMPLETION_INDEX)
    job = _either(member, JOBSET_JOB_GLOBAL_INDEX)
    if job is None:
        job = _either(member, JOBSET_JOB_INDEX)
    if job is not None:
        return RankKey("jobset", (job, completion or 0))
    if completion is not None:
        return RankKey("job-completion-index", (completion,))
    replica = _index(member, KUBEFLOW_REPLICA_INDEX, where="label")
    if replica is not None:
        kind = member.labels.get(KUBEFLOW_REPLICA_TYPE, "worker").strip().lower()
        order = 0 if kind in _LEADER_TYPES else 1 if kind == "worker" else 2
        return RankKey("kubeflow", (order, replica))
    worker = _index(member, LWS_WORKER_INDEX, where="label")
    if worker is not None:
        return RankKey("leaderworkerset", (worker,))
    if member.labels.get(RAY_NODE_TYPE) == "head":
        return RankKey("ray-head", (0,))
    return None


def rank_order(members: Sequence[MemberMeta]) -> list[str]:
    """Names in rank order: explicit ranks first (ties by name), then natural name order."""
    keyed: list[tuple[tuple[int, int, str, tuple[int, ...]], tuple[tuple[int, int | str], ...], str]] = []
    for m in members:
        key = member_rank_key(m)
        if key is None:
            keyed.append(((1, 0, "", ()), natural_key(m.name), m.name))
        else:
            kind = m.labels.get(KUBEFLOW_REPLICA_TYPE, "").strip().lower() if key.source == "kubeflow" else ""
            keyed.append(((0, key.parts[0], kind, key.parts[1:]), natural_key(m.name), m.name))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [name for _, _, name in keyed]


def member_ranks(members: Sequence[MemberMeta]) -> dict[str, int]:
    """Numeric ranks. Explicit ranks keep their number (JobSet: job_index * pods_per_job + completion index,
    pods_per_job = 1 + the largest completion index among the gang's JobSet members; Kubeflow with a master:
    worker i is i + 1); members without one take the positions after the largest explicit rank, in natural
    name order."""
    keys = {m.name: member_rank_key(m) for m in members}
    per_job = 1 + max((k.parts[1] for k in keys.values() if k is not None and k.source == "jobset"), default=0)
    has_leader = any(k is not None and k.source == "kubeflow" and k.parts[0] == 0 for k in keys.values())
    out: dict[str, int] = {}
    top = -1
    for name in rank_order(members):
        key = keys[name]
        if key is None:
            out[name] = top + 1
        elif key.source == "jobset":
            out[name] = key.parts[0] * per_job + key.parts[1]
        elif key.source == "kubeflow":
            out[name] = key.parts[1] + (1 if has_leader and key.parts[0] > 0 else 0)
        else:
            out[name] = key.parts[0]
        top = max(top, out[name])
    return out
