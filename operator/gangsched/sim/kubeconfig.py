"""Kubeconfig files for the emulator: plain http, no authentication, one context named "gangsched-sim".

Contract: `write_kubeconfig(path, *, server, namespace="default") -> Path` writes (creating parent directories)
a kubeconfig whose current context "gangsched-sim" points at `server` with the given default namespace, so
kubectl, kubernetes_asyncio and Kopf connect as they would to a cluster. `kubeconfig_dict(...)` is the same
document as a dict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONTEXT = "gangsched-sim"


def kubeconfig_dict(*, server: str, namespace: str = "default") -> dict[str, Any]:
    if not server.startswith(("http://", "https://")):
        raise ValueError(f"kubeconfig server {server!r}: must be an http:// or https:// URL")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": CONTEXT, "user": {}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, *, server: str, namespace: str = "default") -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(kubeconfig_dict(server=server, namespace=namespace), sort_keys=False))
    return target
