"""The what-if simulator (`gangsched sim replay`): a discrete-event replay of a cluster's workload through the real
scheduling core (core/cycle/scheduler.py `schedule()` and the pod state machine, never a copy) and through baseline
policies, with virtual time: no HTTP, no Kopf, no clock.

Layout: `model.py` is the vocabulary every part shares (nodes, jobs, the workload); inputs, the engine, the policies,
the metrics and the report live in modules of their own (see each module's docstring).
"""
