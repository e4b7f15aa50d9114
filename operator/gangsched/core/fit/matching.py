"""The operator's one label matcher: node selectors, node affinity, taints and label selectors (pure).

Contract:
- `static_block(cls, node) -> str | None`: None when the node passes nodeSelector, required node affinity, taints
  (NoSchedule / NoExecute tolerated) and cordoning (the unschedulable taint); else a short reason for "blocked by"
  messages (`taint dedicated=infer`, `node selector`, `node affinity`, `unschedulable`).
- `preference(cls, node) -> int`: the weights of matching preferred node-affinity terms, minus 100 per
  PreferNoSchedule taint not tolerated.
- `term_matches(term, node) -> bool`: Kubernetes node selector semantics (an empty term matches nothing; Gt/Lt
  compare integers), through `requirement_matches` (core/records/records.py). More: docs/modules.md#corefitmatchingpy.
"""

from __future__ import annotations

from gangsched.core.records.records import NodeRecord, SchedulingClass, Taint, Term, requirement_matches

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


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


def refusal(cls: SchedulingClass, node: NodeRecord) -> tuple[str, Taint | None] | None:
    """The first static check the node fails for the class, None when it passes them all: ("unschedulable",
    None) when cordoned, ("taint", the taint), ("node selector", None), ("node affinity", None). The one
    implementation behind `static_block` and core/cycle/recheck.py's `node_refuses`, which word it each their way."""
    if node.unschedulable and not _tolerated(cls, UNSCHEDULABLE_TAINT):
        return "unschedulable", None
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule" and not _tolerated(cls, taint):
            return "taint", taint
    labels = node.labels
    for key, value in cls.node_selector:
        if labels.get(key) != value:
            return "node selector", None
    if cls.required is not None and not any(term_matches(t, node) for t in cls.required):
        return "node affinity", None
    return None


def taint_shown(taint: Taint) -> str:
    """`key=value` (`key` when the value is empty), as messages show a taint."""
    return f"{taint.key}={taint.value}" if taint.value else taint.key


def static_block(cls: SchedulingClass, node: NodeRecord) -> str | None:
    found = refusal(cls, node)
    if found is None:
        return None
    what, taint = found
    return what if taint is None else f"taint {taint_shown(taint)}"


def preference(cls: SchedulingClass, node: NodeRecord) -> int:
    score = 0
    for weight, term in cls.preferred:
        if term_matches(term, node):
            score += weight
    for taint in node.taints:
        if taint.effect == "PreferNoSchedule" and not _tolerated(cls, taint):
            score -= 100
    return score
