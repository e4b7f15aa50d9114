"""The `gangsched` command line: run | demo | sim serve | sim replay | sim sweep | sim record | bench, and --version.

The command line is a contract: tests, docs (docs/cli.md, README.md) and users rely on it. Every failure is one or
two lines on stderr (what went wrong, what to do), no traceback, with an exit code of gangsched/exits.py.
Subcommands import their implementation lazily, so `gangsched --help` stays fast.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

from gangsched import version
from gangsched.exits import ExitCode

DESCRIPTION = """\
gangsched schedules gangs of pods on Kubernetes: all or nothing, topology-aware, with group preemption.
Pods opt in with `spec.schedulerName: gangsched`; `kubectl get podgroups` and `kubectl gang` show what happened."""
EPILOG = """\
exit codes: 0 ok, 1 failed, 2 bad usage or input, 3 API server unreachable or refusing access,
4 not found, 5 port in use. Reference: docs/cli.md; `gangsched COMMAND --help` for each command."""
DEFAULT_NODE_RESOURCES = "cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110"


def _bind_address(value: str) -> str:
    from gangsched.models.config import bind_address

    try:
        return bind_address(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_serve(sim_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sim_sub.add_parser(
        "serve",
        help="an emulated cluster (API server, simulated nodes and kubelet) for kubectl and `gangsched run`",
        description="Serve the Kubernetes API emulator with simulated nodes and kubelet until interrupted; the"
        " CRDs and manifests/namespace.yaml, rbac.yaml are installed, a kubeconfig is written.",
    )
    serve.add_argument(
        "--nodes", type=int, default=8, metavar="N", help="simulated nodes (default %(default)s; --topology names them)"
    )
    serve.add_argument(
        "--node-resources",
        default=DEFAULT_NODE_RESOURCES,
        metavar="LIST",
        help="each node's allocatable resources, name=quantity comma-separated (default %(default)s)",
    )
    serve.add_argument(
        "--topology", default=None, metavar="FILE", help="topology.json (the ConfigMap's format); names the nodes"
    )
    serve.add_argument("--port", type=int, default=0, help="port to serve on (default 0: a free port)")
    serve.add_argument(
        "--kubeconfig",
        default="gangsched-sim.kubeconfig",
        metavar="PATH",
        help="where to write the kubeconfig (default %(default)s)",
    )
    serve.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="inject a fault, e.g. 'kind=http500,verb=create,resource=pods/binding,p=0.2' "
        "(repeatable; docs/emulator.md)",
    )
    serve.add_argument(
        "--faults", default=None, metavar="FILE", help="fault rules as JSON or YAML (a list, or {seed, rules})"
    )
    serve.add_argument(
        "--fault-seed", type=int, default=None, help="seed of the fault rules' random choices (default 0)"
    )
    serve.add_argument(
        "--no-auth",
        action="store_true",
        help="plain http, no tokens, no RBAC (default: https, the kubeconfig holds an admin token, RBAC enforced)",
    )

    serve.add_argument(
        "--api-profile",
        choices=("full", "plain-1.37"),
        default="full",
        help=(
            "the Kubernetes 1.37 API served: full (default) turns on the feature gates of 1.37's gang API "
            "(scheduling.k8s.io/v1beta1 Workload and PodGroup, v1alpha3 CompositePodGroup, pod "
            "spec.schedulingGroup); plain-1.37 is a kube-apiserver 1.37 with default gates, without them "
            "(docs/emulator.md)"
        ),
    )
    serve.add_argument(
        "--dra",
        action="store_true",
        help=(
            "a simulated GPU DRA driver: each node's nvidia.com/gpu become devices of a ResourceSlice (driver "
            "gpu.nvidia.com) and DeviceClass gpu.nvidia.com, not an extended resource (docs/emulator.md)"
        ),
    )
    serve.add_argument(
        "--feature-gates",
        default="",
        metavar="GATES",
        help=(
            "on top of the profile, as kube-apiserver takes them: GenericWorkload, CompositePodGroup, "
            "TopologyAwareWorkloadScheduling, DRAWorkloadResourceClaims, PodGroupPreemptionPolicy, "
            "WorkloadAwarePreemption "
            "(e.g. CompositePodGroup=false)"
        ),
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gangsched",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gangsched {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run the scheduler (the operator) against a cluster or the emulator",
        description="Run the gangsched operator: it schedules and binds the pods that set schedulerName gangsched."
        " It checks the API server first and exits with a one-line reason if it cannot start.",
    )
    run.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)",
    )
    run.add_argument(
        "--namespace",
        default=None,
        metavar="NS",
        help="the operator's namespace: topology ConfigMap, Lease (default gangsched-system)",
    )
    run.add_argument(
        "--config", default=None, metavar="FILE", help="operator config file (YAML; default: built-in defaults)"
    )
    run.add_argument(
        "--allow-insecure-http",
        action="store_true",
        help="send the kubeconfig's credentials to a plain-http server (refused by default: kubectl never does)",
    )
    run.add_argument(
        "--metrics-bind-address",
        type=_bind_address,
        default=None,
        metavar="ADDRESS",
        help="IP address /metrics listens on (default 0.0.0.0)",
    )
    run.add_argument(
        "--probes-bind-address",
        type=_bind_address,
        default=None,
        metavar="ADDRESS",
        help="IP address the probes listen on (default 0.0.0.0)",
    )

    sub.add_parser("demo", help="try it without a cluster: the emulator, the operator and example gangs (`make demo`)")

    sim = sub.add_parser("sim", help="the emulated cluster and the what-if simulator")
    sim_sub = sim.add_subparsers(dest="sim_command", required=True, metavar="COMMAND")
    _add_serve(sim_sub)

    replay = sim_sub.add_parser(
        "replay", help="what-if: replay a workload through gangsched and other policies, compare the outcomes"
    )
    from gangsched.whatif.cli import add_arguments as add_replay_arguments

    add_replay_arguments(replay)

    sweep = sim_sub.add_parser(
        "sweep",
        help="what-if: policies x loads x seeds x speed models in parallel, resumable, with confidence intervals",
    )
    from gangsched.whatif.sweep import add_arguments as add_sweep_arguments

    add_sweep_arguments(sweep)

    from gangsched.whatif.inputs.record import add_record_parser  # light: argparse and whatif/model.py at import

    add_record_parser(sim_sub)

    bench = sub.add_parser("bench", help="benchmarks, one JSON object per line (what `make bench` runs)")
    bench.add_argument("names", nargs="*", help="benchmark groups to run (default: all)")
    return parser


def _bench(names: list[str]) -> int:
    root = Path(os.environ.get("GANGSCHED_ROOT", Path.cwd()))
    runner = root / "bench" / "run.py"
    if not runner.exists():
        print(f"gangsched bench: {runner} not found; run it from the repository root", file=sys.stderr)
        return ExitCode.USAGE
    sys.argv = [str(runner), *names]
    sys.path.insert(0, str(root))
    runpy.run_path(str(runner), run_name="__main__")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "run":
        from gangsched.handlers.main import run_operator

        return run_operator(
            kubeconfig=args.kubeconfig,
            namespace=args.namespace,
            config_path=args.config,
            allow_insecure_http=args.allow_insecure_http,
            metrics_bind_address=args.metrics_bind_address,
            probes_bind_address=args.probes_bind_address,
        )
    if args.command == "demo":
        from gangsched.demo import run_demo

        return run_demo()
    if args.command == "sim" and args.sim_command == "replay":
        from gangsched.whatif.cli import run as run_replay

        return run_replay(args)
    if args.command == "sim" and args.sim_command == "sweep":
        from gangsched.whatif.sweep import run as run_sweep

        return run_sweep(args)
    if args.command == "sim" and args.sim_command == "record":
        from gangsched.whatif.inputs.record import run_record

        return run_record(args)
    if args.command == "sim":
        from gangsched.sim.serve import serve_forever

        return serve_forever(
            nodes=args.nodes,
            node_resources=args.node_resources,
            topology_path=args.topology,
            port=args.port,
            kubeconfig_path=args.kubeconfig,
            fault_specs=args.fault,
            faults_path=args.faults,
            fault_seed=args.fault_seed,
            auth=not args.no_auth,
            api_profile=args.api_profile,
            feature_gates=args.feature_gates,
            dra=args.dra,
        )
    if args.command == "bench":
        return _bench(args.names)
    raise AssertionError(args.command)
