"""Starting the operator: `gangsched run` and the in-process form used by the demo and the tests.

Contract:
- `run_kopf(operator, *, stop_flag, ready_flag, liveness_endpoint)` runs one operator replica (Kopf with a
  registry of its own, plus the runtime's tasks) until `stop_flag` is set. Several replicas may run in one
  process (each has its own registry, memo and metrics).
- `operate(*, kubeconfig, config, identity, ...)` connects, builds the Operator and runs it that way.
- `run_operator(...)` is the command: it loads the config file, sets up logging and runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid

import kopf

from gangsched.handlers.kopf_app import build_registry, configure
from gangsched.k8s.client import KubeClient
from gangsched.models.config import OperatorConfig, load_config
from gangsched.runtime.operator import Operator

log = logging.getLogger(__name__)


def default_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}-{uuid.uuid4().hex[:6]}"


async def run_kopf(
    operator: Operator,
    *,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    liveness_endpoint: str | None = None,
) -> None:
    """Run Kopf for this operator replica until stop_flag is set; the operator's tasks stop with it."""
    settings = kopf.OperatorSettings()
    configure(settings)
    try:
        await kopf.operator(
            registry=build_registry(),
            settings=settings,
            memo=kopf.Memo(operator=operator),
            clusterwide=True,
            standalone=True,  # no Kopf peering: our own Lease decides who schedules
            stop_flag=stop_flag,
            ready_flag=ready_flag,
            liveness_endpoint=liveness_endpoint,
        )
    finally:
        await operator.stop()


async def operate(
    *,
    kubeconfig: str | None,
    config: OperatorConfig,
    identity: str | None = None,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    liveness_endpoint: str | None = None,
    serve_metrics: bool = False,
) -> None:
    client = await KubeClient.connect(kubeconfig, qps=config.api_client.qps, burst=config.api_client.burst)
    operator = Operator(client=client, config=config, identity=identity or default_identity())
    if serve_metrics:
        operator.metrics.serve(config.metrics_port)
    try:
        await run_kopf(operator, stop_flag=stop_flag, ready_flag=ready_flag, liveness_endpoint=liveness_endpoint)
    finally:
        await client.close()


def run_operator(*, kubeconfig: str | None, namespace: str | None, config_path: str | None) -> int:
    config = load_config(config_path)
    if namespace:
        config = config.model_copy(update={"namespace": namespace})
    logging.basicConfig(level=os.environ.get("GANGSCHED_LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kopf").setLevel(logging.WARNING)
    endpoint = f"http://0.0.0.0:{config.probe_port}/healthz" if config.probe_port else None
    try:
        asyncio.run(operate(kubeconfig=kubeconfig, config=config, liveness_endpoint=endpoint, serve_metrics=True))
    except KeyboardInterrupt:
        pass
    return 0
