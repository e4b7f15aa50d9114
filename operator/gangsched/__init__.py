"""gangsched: a gang scheduler for Kubernetes, built as a Kopf operator.

Layers import downwards only: handlers > runtime > k8s | state > models > core.
"""

SCHEDULER_NAME = "gangsched"
__version__ = "0.1.0"
