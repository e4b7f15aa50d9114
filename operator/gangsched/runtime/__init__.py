"""gangsched.runtime: one operator replica, the asynchronous side of the scheduler.

Contract: operator.py wires the cache (state), the scheduling loop (a round of `core` cycles: cluster model ->
Plan, applied to the model, then carried out) and the API side (k8s: binder, writers, reflectors, leader
election, fence). podgroups.py writes PodGroup status and creates the PodGroups of annotation-only gangs,
preemption.py carries out evictions and nominations, topology.py keeps the topology tree, supervisor.py restarts
crashed tasks, metrics.py exports Prometheus metrics. Decisions are the core's; nothing here decides placement.
"""
