"""The operator's one label matcher: node selectors, node affinity, taints and label selectors (pure).

Contract:
- `static_block(cls, node) -> str | None`: None when the node passes nodeSelector, required node affinity,
  taints (NoSchedule / NoExecute must be tolerated; PreferNoSchedule never blocks) and cordoning (treated as
  the taint node.kubernetes.io/unschedulable:NoSchedule, as Kubernetes does); otherwise a short human reason
  used to aggregate "blocked by" messages, e.g. `taint dedicated=infer`, `node selector`, `node affinity`,
  `unschedulable`.
- `preference(cls, node) -> int`: higher is better: the sum of the weights of matching preferred
  node-affinity terms, minus 100 per PreferNoSchedule taint the class does not tolerate.
- `term_matches(term, node) -> bool` and `requirement_matches(req, labels)`: Kubernetes node selector
  semantics (a term without any requirement matches nothing; Gt/Lt compare integers; a label that is not an
  integer never matches Gt/Lt).
- `LabelSelector(labels, expressions).matches(labels) -> bool`: a metav1.LabelSelector (matchLabels pairs and
  In/NotIn/Exists/DoesNotExist requirements, parsed by models/selectors.py), through `requirement_matches`;
  an empty selector matches everything (callers that give it another meaning, such as the Eviction API's
  "selects nothing", say so themselves: core/preemption/preempt_pdb.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gangsched.core.values.records import NodeRecord, Requirement, SchedulingClass, Taint, Term

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    op = req.operator
    if op == "Exists":
        return req.key in labels
    if op == "DoesNotExist":
        return req.key not in labels
    value = labels.get(req.key)
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if value is None:
        return False
    try:
        have = int(value)
    except ValueError:
        return False
    want = int(req.values[0])
    return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    labels: tuple[tuple[str, str], ...]  # matchLabels
    expressions: tuple[Requirement, ...]  # matchExpressions

    @property
    def empty(self) -> bool:
        return not (self.labels or self.expressions)

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.labels:
            if labels.get(key) != value:
                return False
        return all(requirement_matches(req, labels) for req in self.expressions)


def term_matches(term: Term, node: NodeRecord) -> bool:
    if not term.expressions and not term.fields:
        return False
    for req in term.expressions:
        if not requirement_matches(req, node.labels):
            return False
    if term.fields:
        name_labels = {"metadata.name": node.name}
        for req in term.fields:
            if not requirement_matches(req, name_labels):
                return False
    return True


def _tolerated(cls: SchedulingClass, taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in cls.tolerations)


def static_block(cls: SchedulingClass, node: NodeRecord) -> str | None:
    if node.unschedulable and not _tolerated(cls, UNSCHEDULABLE_TAINT):
        return "unschedulable"
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule" and not _tolerated(cls, taint):
            shown = f"{taint.key}={taint.value}" if taint.value else taint.key
            return f"taint {shown}"
    labels = node.labels
    for key, value in cls.node_selector:
        if labels.get(key) != value:
            return "node selector"
    if cls.required is not None and not any(term_matches(t, node) for t in cls.required):
        return "node affinity"
    return None


def preference(cls: SchedulingClass, node: NodeRecord) -> int:
    score = 0
    for weight, term in cls.preferred:
        if term_matches(term, node):
            score += weight
    for taint in node.taints:
        if taint.effect == "PreferNoSchedule" and not _tolerated(cls, taint):
            score -= 100
    return score
