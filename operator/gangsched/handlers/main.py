"""Starting the operator: `gangsched run` and the in-process form used by the demo and the tests.

Contract:
- `run_kopf(operator, *, stop_flag, ready_flag, liveness_endpoint)` runs one replica (Kopf with a registry of its
  own, plus the runtime's tasks) until `stop_flag` or SIGINT/SIGTERM; the operator's tasks stop in Kopf's cleanup;
  Kopf failing as a whole is logged and raised (the process exits non-zero). Several replicas may share a process.
- `connect(kubeconfig, config, identity, *, allow_insecure_http=False) -> KubeClient`: credentials never go to a
  plain-http server unless allowed. `operate(...)` connects, builds the Operator and runs it.
- `run_operator(...)` is the command: loads the config (a bad one: exit 2), serves probes and /metrics, checks the
  API server first (handlers/failures.py `preflight`) and reports any failure in one or two lines with an exit code
  of gangsched/exits.py; its first INFO line names version, identity, server, leader election and ports.
More: docs/modules.md#handlersmainpy.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import uuid

import kopf

from gangsched import version
from gangsched.exits import report
from gangsched.handlers.failures import explain, listening, preflight
from gangsched.handlers.kopf_app import build_registry, configure, quiet_optional_kinds
from gangsched.handlers.probes import serve_probes
from gangsched.k8s.client import KubeClient
from gangsched.k8s.credentials import load_credentials, refuse_credentials_over_http
from gangsched.models.config import InvalidConfig, OperatorConfig, bind_address, load_config
from gangsched.runtime.operator import Operator

log = logging.getLogger(__name__)


def default_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}-{uuid.uuid4().hex[:6]}"


def start_line(config: OperatorConfig, identity: str, server: str, metrics: bool, probes_port: int | None) -> str:
    """The operator's first INFO line: version, identity, API server, leader election, where metrics and probes are."""
    le = config.leader_election
    election = f"leader election on Lease {config.namespace}/{le.lease_name}" if le.enabled else "leader election off"
    metrics_at, probes_at = f"{config.metrics_bind_address}:{config.metrics_port}", f"{config.probes_bind_address}:"
    served = [f"metrics on {metrics_at}/metrics" if metrics else "metrics not served"]
    served.append(f"probes on {probes_at}{probes_port} (livez, readyz)" if probes_port else "probes not served")
    return f"gangsched {version()} starting as {identity} against {server}: {election}; {', '.join(served)}"


async def run_kopf(
    operator: Operator,
    *,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    liveness_endpoint: str | None = None,
) -> None:
    """Run Kopf for this operator replica until stop_flag is set (or Kopf is stopped by a signal); the operator's
    tasks stop with it (in Kopf's cleanup activity, see the module docstring). Kopf failing is logged and raised:
    Kopf cancels every task started while it ran, the operator's included, so the replica cannot go on."""
    settings = kopf.OperatorSettings()
    configure(settings)
    quiet_optional_kinds()
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
    except Exception:
        if stop_flag is None or not stop_flag.is_set():
            log.exception("Kopf failed; the replica stops (its Deployment restarts it)")
            raise
    finally:
        await operator.stop()  # idempotent; normally done already by the cleanup handler


async def connect(
    kubeconfig: str | None, config: OperatorConfig, identity: str, *, allow_insecure_http: bool = False
) -> KubeClient:
    credentials = await load_credentials(kubeconfig)
    refuse_credentials_over_http(credentials, allow=allow_insecure_http)
    return KubeClient(
        credentials,
        user_agent=f"gangsched/{identity}",
        fence_hooks=True,
        qps=config.api_client.qps,
        burst=config.api_client.burst,
    )


async def operate(
    *,
    kubeconfig: str | None,
    config: OperatorConfig,
    identity: str | None = None,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    liveness_endpoint: str | None = None,
    serve_metrics: bool = False,
    serve_probes_port: int | None = None,
    allow_insecure_http: bool = False,
    check_first: bool = False,
) -> None:
    identity = identity or default_identity()
    client = await connect(kubeconfig, config, identity, allow_insecure_http=allow_insecure_http)
    probes = None
    try:
        if check_first:
            await preflight(client)
        operator = Operator(client=client, config=config, identity=identity)
        if serve_metrics:
            with listening("metricsPort", config.metrics_port):
                operator.metrics.serve(config.metrics_port, host=config.metrics_bind_address)
        if serve_probes_port:
            with listening("probesPort", serve_probes_port):
                probes = await serve_probes(operator, serve_probes_port, host=config.probes_bind_address)
        log.info("%s", start_line(config, identity, client.settings.server, serve_metrics, serve_probes_port))
        await run_kopf(operator, stop_flag=stop_flag, ready_flag=ready_flag, liveness_endpoint=liveness_endpoint)
    finally:
        if probes is not None:
            await probes.cleanup()
        await client.close()


def run_operator(
    *,
    kubeconfig: str | None,
    namespace: str | None,
    config_path: str | None,
    allow_insecure_http: bool = False,
    metrics_bind_address: str | None = None,
    probes_bind_address: str | None = None,
) -> int:
    """`gangsched run`; the options given on the command line win over the config file's."""
    try:
        config = load_config(config_path)
    except InvalidConfig as bad:  # every problem of the file, one a line; a traceback would only hide them
        print(f"gangsched run: invalid --config {bad}", file=sys.stderr)
        return 2
    update: dict[str, str] = {}
    if namespace:
        update["namespace"] = namespace
    if metrics_bind_address:
        update["metrics_bind_address"] = bind_address(metrics_bind_address)  # ValueError: not an IP address
    if probes_bind_address:
        update["probes_bind_address"] = bind_address(probes_bind_address)
    if update:
        config = config.model_copy(update=update)
    logging.basicConfig(
        level=os.environ.get("GANGSCHED_LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("kopf").setLevel(logging.WARNING)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # probes are not logged
    try:
        asyncio.run(
            operate(
                kubeconfig=kubeconfig,
                config=config,
                serve_metrics=True,
                serve_probes_port=config.probe_port,
                allow_insecure_http=allow_insecure_http,
                check_first=True,
            )
        )
    except KeyboardInterrupt:
        pass
    except Exception as exc:  # handlers/failures.py: one or two lines, an exit code of exits.py
        return report("gangsched run", explain(exc))
    return 0
