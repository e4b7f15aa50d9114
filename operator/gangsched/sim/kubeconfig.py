"""Kubeconfig files for the emulator: plain http, a bearer token (or none), one context named "gangsched-sim".

Contract: `write_kubeconfig(path, *, server, namespace="default", token=None) -> Path` writes (creating parent
directories, mode 0600 as it may hold a token) a kubeconfig whose current context "gangsched-sim" points at
`server` with the given default namespace and, when given, the user's bearer token and the server's CA
certificate (PEM, as certificate-authority-data), so
kubectl, kubernetes_asyncio and Kopf connect as they would to a cluster. `kubeconfig_dict(...)` is the same
document as a dict.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

CONTEXT = "gangsched-sim"


def kubeconfig_dict(
    *, server: str, namespace: str = "default", token: str | None = None, ca_pem: bytes | None = None
) -> dict[str, Any]:
    if not server.startswith(("http://", "https://")):
        raise ValueError(f"kubeconfig server {server!r}: must be an http:// or https:// URL")
    cluster: dict[str, Any] = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token} if token else {}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(
    path: str | Path, *, server: str, namespace: str = "default", token: str | None = None, ca_pem: bytes | None = None
) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(mode=0o600)
    target.chmod(0o600)
    target.write_text(
        yaml.safe_dump(kubeconfig_dict(server=server, namespace=namespace, token=token, ca_pem=ca_pem), sort_keys=False)
    )
    return target
