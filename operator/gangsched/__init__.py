"""gangsched: a gang scheduler for Kubernetes, built as a Kopf operator.

Layers import downwards only: handlers > runtime > k8s | state > models > core; sim (the API emulator) uses
core, models and k8s.client only. docs/architecture.md describes the layers, the pod state machine, the
scheduling cycle and the data path.
"""

__version__ = "0.1.0"


def version() -> str:
    """The installed distribution's version (its package metadata: what `gangsched --version` and the operator's
    start line say), else `__version__` (a source tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gangsched")
    except PackageNotFoundError:
        return __version__
