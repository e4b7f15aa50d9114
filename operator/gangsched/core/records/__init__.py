"""Records: what the core knows of nodes and pods, and of what pods declare about nodes, labels and other pods.

Node and pod records, the interned scheduling classes they share, and the taints, tolerations, host ports, node
selector terms, label and pod selectors, pod affinity terms and spread constraints pods declare (each matching by
Kubernetes semantics). Parsers (models/) build them; every package of the core above `values` reads them.
"""

from gangsched.core.records.records import (
    ClassRegistry,
    HostPort,
    LabelSelector,
    NodeRecord,
    PodRecord,
    PodSelector,
    PodTerm,
    Requirement,
    SchedulingClass,
    SpreadConstraint,
    Taint,
    Term,
    Toleration,
)

__all__ = [
    "ClassRegistry",
    "HostPort",
    "LabelSelector",
    "NodeRecord",
    "PodRecord",
    "PodSelector",
    "PodTerm",
    "Requirement",
    "SchedulingClass",
    "SpreadConstraint",
    "Taint",
    "Term",
    "Toleration",
]
