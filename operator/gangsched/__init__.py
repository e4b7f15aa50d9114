"""gangsched: a gang scheduler for Kubernetes, built as a Kopf operator.

Layers import downwards only: handlers > runtime > k8s | state > models > core; sim (the API emulator) uses
core, models and k8s.client only. docs/architecture.md describes the layers, the pod state machine, the
scheduling cycle and the data path.
"""

__version__ = "0.1.0"
