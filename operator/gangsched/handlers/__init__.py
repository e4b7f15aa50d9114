"""gangsched.handlers: the operator's entry points and its Kopf side.

Contract: thin handlers only. Kopf `on.event` handlers hand raw objects (PodGroups, nodes, PodDisruptionBudgets)
to the state cache and return; nothing here parses, decides or writes to the API (kopf_app.py). main.py starts a
replica (`gangsched run`, and the in-process form of the demo and the tests), thread.py runs one in a thread with
its own event loop, probes.py serves /livez, /readyz and /healthz. May import every layer below (runtime, k8s,
state, models, core).
"""
