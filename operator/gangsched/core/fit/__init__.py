"""Fit: whether a pod may run on a node, with kube-scheduler's semantics (parity with its filter and score plugins).

Node selectors, node affinity and taints (matching), the filters that depend on what else runs on a node (ports,
inter-pod affinity, topology spread) over incremental per-selector pod counts, preferred-affinity scores, and the
per-class node capacity a cycle's workspace keeps: how many more pods of a scheduling class each node can take; the
protocol and registry of the store's incremental caches (store_cache.py).
"""

from gangsched.core.fit.capacity import ClassIndex, ClassView, Workspace, class_index, fit_count
from gangsched.core.fit.filters import NodeFilter, filters_for
from gangsched.core.fit.matching import static_block
from gangsched.core.fit.pod_counts import PodCounts

__all__ = [
    "ClassIndex",
    "ClassView",
    "NodeFilter",
    "PodCounts",
    "Workspace",
    "class_index",
    "filters_for",
    "fit_count",
    "static_block",
]
