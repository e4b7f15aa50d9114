"""A whole simulated cluster: the API server emulator, the CRDs, simulated nodes and the simulated kubelet.

Contract:
- `async with running_cluster(*, nodes, node_resources, topology=None, ...) as cluster:` starts ApiServer, writes
  a kubeconfig, applies `crds/` then `crds/compat/`, (by default) enforces auth and RBAC and installs
  manifests/namespace.yaml and rbac.yaml, creates the nodes (named and labelled after the topology when given)
  and runs SimKubelet until exit; `faults` are switched on once all that is set up. Options: `gates` (the API
  profile), `dra` (the simulated GPU DRA driver publishes the GPUs instead of the nodes), `topology_configmap_from`.
- `serve_forever(...) -> int` is `gangsched sim serve`: that cluster until SIGINT or SIGTERM. Bad arguments or an
  unwritable kubeconfig path return 2, a --port in use 5 (gangsched/exits.py).
- `find_crds_dir()` locates `crds/` next to the source tree or under $GANGSCHED_ROOT.
More: docs/modules.md#simservepy.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gangsched.core import InvalidField
from gangsched.exits import CommandError, ExitCode, report, writable_file
from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.cluster import (
    TOPOLOGY_LABEL_PREFIX,
    create_nodes,
    node_names_from_topology,
    parse_node_resources,
    topology_labels,
)
from gangsched.sim.dra import driver as gpu_driver
from gangsched.sim.faults import FaultRule, FaultSpecError, load_rules
from gangsched.sim.features import DEFAULT as DEFAULT_GATES
from gangsched.sim.features import FULL as FULL_PROFILE
from gangsched.sim.features import FeatureGates
from gangsched.sim.features import resolve as resolve_gates
from gangsched.sim.kubelet import SimKubelet

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def find_crds_dir() -> Path | None:
    """The repository's crds/ directory, if it can be found."""
    candidates = []
    if os.environ.get("GANGSCHED_ROOT"):
        candidates.append(Path(os.environ["GANGSCHED_ROOT"]) / "crds")
    candidates.append(Path(__file__).resolve().parents[3] / "crds")
    candidates.append(Path.cwd() / "crds")
    return next((c for c in candidates if c.is_dir()), None)


def find_manifests_dir() -> Path | None:
    """The repository's manifests/ directory (next to crds/), if it can be found."""
    crds = find_crds_dir()
    candidates = [crds.parent / "manifests"] if crds is not None else []
    candidates.append(Path.cwd() / "manifests")
    return next((c for c in candidates if c.is_dir()), None)


# kind -> (API path prefix, plural, namespaced) of what manifests/namespace.yaml and rbac.yaml hold
_MANIFEST_KINDS: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
}
# the manifests a cluster with gangsched installed has (README's install order); the Deployment is not run here
INSTALLED_MANIFESTS = ("namespace.yaml", "rbac.yaml")
OPERATOR_NAMESPACE = "gangsched-system"
TOPOLOGY_CONFIGMAP = "gangsched-topology"


async def apply_manifests(client: KubeClient, docs: Sequence[Mapping[str, Any]]) -> None:
    """Create each object (kinds of _MANIFEST_KINDS; an existing one is left as it is)."""
    for doc in docs:
        kind = str(doc.get("kind"))
        if kind not in _MANIFEST_KINDS:
            raise ValueError(
                f"manifest kind {kind!r} cannot be installed into the emulator: allowed kinds: "
                f"{sorted(_MANIFEST_KINDS)}"
            )
        prefix, plural, namespaced = _MANIFEST_KINDS[kind]
        path = (
            f"{prefix}/namespaces/{doc['metadata'].get('namespace') or 'default'}/{plural}"
            if namespaced
            else f"{prefix}/{plural}"
        )
        try:
            await client.create(path, dict(doc))
        except ApiError as exc:
            if exc.status != 409:
                raise


def load_manifests(directory: Path | None, names: Sequence[str] = INSTALLED_MANIFESTS) -> list[dict[str, Any]]:
    """The documents of the named files of manifests/ (none if the directory is not found)."""
    if directory is None:
        return []
    docs: list[dict[str, Any]] = []
    for name in names:
        path = directory / name
        if path.is_file():
            docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return docs


def topology_configmap(topology_path: str | Path) -> dict[str, Any]:
    """The topology ConfigMap (gangsched-system/gangsched-topology, key topology.json) holding the file's text."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": TOPOLOGY_CONFIGMAP,
            "namespace": OPERATOR_NAMESPACE,
            "labels": {"app.kubernetes.io/name": "gangsched"},
        },
        "data": {"topology.json": Path(topology_path).read_text()},
    }


def load_crds(directory: Path | None) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition document of the YAML files in directory, then of its compat/ subdirectory
    (none if it is None)."""
    if directory is None:
        return []
    docs = []
    for path in [*sorted(directory.glob("*.y*ml")), *sorted(directory.glob("compat/*.y*ml"))]:
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


async def apply_crds(client: KubeClient, crds: Sequence[Mapping[str, Any]]) -> None:
    """Create each CRD (replacing one that exists) and wait until its resource is served."""
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            await client.create(CRD_PATH, crd)
        except ApiError as exc:
            if exc.status != 409:
                raise
            current = await client.get(f"{CRD_PATH}/{name}")
            body = dict(crd, metadata=dict(crd["metadata"], resourceVersion=current["metadata"]["resourceVersion"]))
            await client.replace(f"{CRD_PATH}/{name}", body)
        group = crd["spec"]["group"]
        versions = [v["name"] for v in crd["spec"].get("versions") or [] if v.get("served", True)]
        for version in versions:
            await _wait_served(client, f"/apis/{group}/{version}", crd["spec"]["names"]["plural"])


async def _wait_served(client: KubeClient, path: str, plural: str, *, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            listing = await client.get(path)
            if any(r.get("name") == plural for r in listing.get("resources") or []):
                return
        except ApiError as exc:
            if exc.status != 404:
                raise
        if loop.time() > deadline:
            raise TimeoutError(f"{path}/{plural} was not served within {timeout}s of creating its CRD")
        await asyncio.sleep(0.02)  # polling a real condition (discovery) with a deadline


@dataclass
class Cluster:
    """A running simulated cluster (see module docstring)."""

    server: Any
    url: str
    kubeconfig: str
    client: KubeClient
    kubelet: SimKubelet
    node_names: list[str] = field(default_factory=list)


def _plan_nodes(
    nodes: int, topology: str | Path | Sequence[Mapping[str, Any]] | None
) -> tuple[list[str], dict[str, dict[str, str]]]:
    if nodes < 0:
        raise InvalidField("--nodes", nodes, "must be an integer >= 0")
    if topology is None:
        return [f"node-{i}" for i in range(nodes)], {}
    return node_names_from_topology(topology), topology_labels(topology)


@contextlib.asynccontextmanager
async def running_cluster(
    *,
    nodes: int,
    node_resources: str | Mapping[str, str],
    topology: str | Path | Sequence[Mapping[str, Any]] | None = None,
    kubeconfig_path: str | None = None,
    port: int = 0,
    kubelet_start_delay: float = 0.0,
    faults: Sequence[FaultRule] = (),
    fault_seed: int = 0,
    auth: bool = True,
    install_manifests: bool = True,
    topology_configmap_from: str | Path | None = None,
    gates: FeatureGates = DEFAULT_GATES,
    dra: bool = False,
) -> AsyncIterator[Cluster]:
    """A simulated cluster for the duration of the block (see module docstring)."""
    from gangsched.sim.apiserver import ApiServer

    resources = parse_node_resources(node_resources) if isinstance(node_resources, str) else dict(node_resources)
    gpus = 0
    if dra:  # the GPUs become DRA devices of the simulated driver, not also the extended resource nvidia.com/gpu
        resources, gpus = gpu_driver.split_gpus(resources)
    names, labels = _plan_nodes(nodes, topology)
    server = ApiServer(auth=auth, gates=gates)
    await server.start(host="127.0.0.1", port=port)
    temp_dir = None
    try:
        if kubeconfig_path is None:
            temp_dir = tempfile.mkdtemp(prefix="gangsched-sim-")
            kubeconfig_path = os.path.join(temp_dir, "kubeconfig")
        server.write_kubeconfig(kubeconfig_path)
        client = await KubeClient.connect(kubeconfig_path)
        try:
            await apply_crds(client, load_crds(find_crds_dir()))
            if install_manifests:
                await apply_manifests(client, load_manifests(find_manifests_dir()))
            if topology_configmap_from is not None:
                await apply_manifests(client, [topology_configmap(topology_configmap_from)])
            await create_nodes(client, names, resources, labels_for_name=lambda n: labels.get(n, {}))
            if dra:
                tier1 = f"{TOPOLOGY_LABEL_PREFIX}1"
                cliques = {n: labels.get(n, {}).get(tier1, n) for n in names}
                shared = tier1 if any(tier1 in labels.get(n, {}) for n in names) else None
                await gpu_driver.publish(client, names, gpus, cliques=cliques, clique_label=shared)
            kubelet = SimKubelet(client, start_delay=kubelet_start_delay)
            task = asyncio.create_task(kubelet.run(), name="sim-kubelet")
            try:
                waiter = asyncio.ensure_future(kubelet.synced.wait())
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if task.done():
                    task.result()  # the kubelet died before syncing: raise its error
                if faults:
                    server.faults.reseed(fault_seed)
                    server.faults.add(faults)
                yield Cluster(
                    server=server,
                    url=server.url,
                    kubeconfig=kubeconfig_path,
                    client=client,
                    kubelet=kubelet,
                    node_names=names,
                )
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            await client.close()
    finally:
        await server.stop()
        if temp_dir is not None:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(temp_dir, "kubeconfig"))
                os.rmdir(temp_dir)


async def _serve(
    *,
    nodes: int,
    node_resources: str,
    topology_path: str | None,
    port: int,
    kubeconfig_path: str,
    faults: Sequence[FaultRule],
    fault_seed: int,
    auth: bool = True,
    gates: FeatureGates = DEFAULT_GATES,
    dra: bool = False,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    kubeconfig = os.path.abspath(kubeconfig_path)
    async with running_cluster(
        nodes=nodes,
        node_resources=node_resources,
        topology=topology_path,
        kubeconfig_path=kubeconfig,
        port=port,
        topology_configmap_from=topology_path,
        auth=auth,
        faults=faults,
        fault_seed=fault_seed,
        gates=gates,
        dra=dra,
    ) as cluster:
        print(
            f"gangsched sim: Kubernetes API emulator at {cluster.url} with {len(cluster.node_names)} simulated nodes",
            flush=True,
        )
        if faults:
            print(
                f"injecting {len(faults)} fault rule(s) (seed {fault_seed}); see or change them at "
                f"{cluster.url}/sim/faults",
                flush=True,
            )
        print(f"kubeconfig written to {kubeconfig}", flush=True)
        print(f"Kubernetes v1.37 API, feature gates {gates.describe()} (see docs/emulator.md)", flush=True)
        if auth:
            print(
                "https, tokens and RBAC enforced; the kubeconfig's user is an admin (group system:masters)", flush=True
            )
        print(
            "installed: crds/, manifests/namespace.yaml, manifests/rbac.yaml"
            + (f", topology ConfigMap {OPERATOR_NAMESPACE}/{TOPOLOGY_CONFIGMAP}" if topology_path else ""),
            flush=True,
        )
        if dra:
            print(
                f"DRA: driver {gpu_driver.DRIVER} publishes each node's GPUs as a ResourceSlice; DeviceClass "
                f"{gpu_driver.DRIVER}; the nodes do not advertise {gpu_driver.GPU_RESOURCE}",
                flush=True,
            )
        print(f"run the operator: gangsched run --kubeconfig {kubeconfig}", flush=True)
        print(f"try: kubectl --kubeconfig {kubeconfig} get nodes", flush=True)
        print("press Ctrl-C to stop", flush=True)
        await stop.wait()
    print("gangsched sim: stopped", flush=True)


def serve_forever(
    *,
    nodes: int,
    node_resources: str,
    topology_path: str | None,
    port: int,
    kubeconfig_path: str,
    fault_specs: Sequence[str] = (),
    faults_path: str | None = None,
    fault_seed: int | None = None,
    auth: bool = True,
    api_profile: str = FULL_PROFILE,
    feature_gates: str = "",
    dra: bool = False,
) -> int:
    """`gangsched sim serve` (see module docstring); returns the process exit code."""
    try:
        writable_file(kubeconfig_path, "--kubeconfig")
        faults, file_seed = load_rules(fault_specs, faults_path)
        seed = fault_seed if fault_seed is not None else file_seed if file_seed is not None else 0
        try:
            gates = resolve_gates(api_profile, feature_gates)
        except ValueError as exc:
            raise InvalidField(
                "--feature-gates" if feature_gates else "--api-profile", feature_gates or api_profile, str(exc)
            ) from None
        asyncio.run(
            _serve(
                nodes=nodes,
                node_resources=node_resources,
                topology_path=topology_path,
                port=port,
                kubeconfig_path=kubeconfig_path,
                faults=faults,
                fault_seed=seed,
                auth=auth,
                gates=gates,
                dra=dra,
            )
        )
    except (InvalidField, FaultSpecError) as exc:
        print(f"gangsched sim serve: {exc}", file=sys.stderr)
        return 2
    except CommandError as exc:
        return report("gangsched sim serve", exc)
    except OSError as exc:  # binding --port, writing the kubeconfig
        return report("gangsched sim serve", _os_problem(exc, port))
    except KeyboardInterrupt:
        pass
    return 0


def _os_problem(exc: OSError, port: int) -> CommandError:
    if exc.errno == errno.EADDRINUSE:
        return CommandError(
            ExitCode.LISTEN,
            f"--port {port} is already in use",
            "stop what listens there, or leave --port out (0: a free port)",
        )
    return CommandError(ExitCode.FAILURE, f"the emulator stopped: {exc}")
