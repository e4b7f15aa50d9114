"""`kubectl(cluster, *args, input=None)`: the real kubectl against a `running_cluster` (sim/serve.py) with its
kubeconfig, run in a worker thread so the emulator on the test's event loop keeps answering; fails the test with
kubectl's output when it exits non-zero, else returns its stdout; `kubectl_apply(cluster, *objs)`: `kubectl apply` of
objects as one List. Shared by the kubectl end-to-end tests."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

from gangsched.sim.serve import Cluster


async def kubectl(cluster: Cluster, *args: str, input: str | None = None) -> str:
    result = await asyncio.to_thread(
        subprocess.run,
        ["kubectl", f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        input=input,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


async def kubectl_apply(cluster: Cluster, *objs: dict[str, Any]) -> None:
    await kubectl(cluster, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
