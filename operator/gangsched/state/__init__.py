"""gangsched.state: the operator's in-memory view of the cluster, fed by watch events; no I/O.

Contract: cache.py takes raw API objects (pods, nodes, PodGroups, PodDisruptionBudgets, the topology tree),
parses them at the boundary (models) and keeps the core's cluster model current, reporting bad objects as
problems instead of raising; it says when the scheduler may decide something new. status.py computes the
PodGroup status `kubectl get podgroups` shows from the cache.
"""
