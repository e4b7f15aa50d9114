"""The `kubectl-gang` executable (`kubectl gang ...`): reads PodGroups, pods, events and the topology ConfigMap with the
project's client (and Kubernetes 1.37's PodGroups and Workloads when served: plugin/native.py) and prints what
plugin/view.py computes (text) or plugin/records.py (`-o json|yaml`).

Usage: `kubectl gang [tree] [NAME...] [-n NS | -A]`, `kubectl gang why POD [-n NS]`, `kubectl gang top [-n NS | -A]`;
options `--kubeconfig`, `--context`, `--topology NS/NAME`, `-o json|yaml|wide` (docs/cli.md).
Failures are one or two lines on stderr (`kubectl gang: <problem>`, `  fix: <fix>`), no traceback, with the exit
codes of gangsched/exits.py: 2 a bad option or no usable kubeconfig, 3 the API server unreachable or refusing, 4 a
gang, pod or named topology ConfigMap not found (the gangs found still printed), 1 anything else.
More: docs/modules.md#pluginmainpy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from gangsched.exits import CommandError, ExitCode, report
from gangsched.k8s.client import ApiError, KubeClient
from gangsched.k8s.credentials import CredentialError, load_credentials
from gangsched.k8s.diagnose import KUBECONFIG_FIX, api_problem, credential_problem
from gangsched.k8s.retry import RetryPolicy
from gangsched.models.podgroup import GROUP, PLURAL, VERSION
from gangsched.models.topology import TOPOLOGY_KEY, parse_topology
from gangsched.plugin.native import WorkloadRow, workload_rows
from gangsched.plugin.records import top_record, tree_record, why_record
from gangsched.plugin.trees import TreeView, render_trees, tree_nodes, trees_of, trees_record
from gangsched.plugin.view import (
    TOP_WIDTH,
    Gang,
    explain_pod,
    gangs_of,
    key_of,
    render_top,
    render_tree,
    tree_keys,
    unmatched,
    wanted_workloads,
)

COMMAND = "kubectl gang"
COMMANDS = ("tree", "why", "top")
DEFAULT_TOPOLOGY = "gangsched-system/gangsched-topology"
RETRY = RetryPolicy(initial_backoff=0.2, max_backoff=1.0, max_attempts=3, max_elapsed=5.0)  # a person is waiting
DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
TOPOLOGY_REF = re.compile(rf"{DNS_LABEL}/[a-z0-9]([-.a-z0-9]{{0,251}}[a-z0-9])?")
READ_FIX = (
    "use a kubeconfig whose user may get and list pods, events and podgroups, and on a cluster serving"
    " scheduling.k8s.io/v1beta1 its podgroups and workloads (kubectl auth can-i list pods)"
)


@dataclass
class Output:
    """What the command prints: text or a record on stdout, and an error (exit code) after it, if any."""

    text: str = ""
    record: dict[str, Any] = field(default_factory=dict)
    error: CommandError | None = None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=COMMAND,
        description="Gangs as gangsched schedules them: trees, why a pod waits, the waiting gangs.",
        epilog="exit codes: 0 ok, 1 failed, 2 bad usage, 3 API server unreachable or refusing access, 4 not found."
        " Reference: docs/cli.md",
    )
    parser.add_argument("command", nargs="?", default="tree", help="tree (default), why POD, top, or a gang name")
    parser.add_argument("names", nargs="*", help="gang names (tree) or the pod (why)")
    parser.add_argument("-n", "--namespace", help="the namespace (default: the kubeconfig context's, else default)")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (tree, top)")
    parser.add_argument("--kubeconfig", help="kubeconfig file(s), as kubectl takes them")
    parser.add_argument("--context", help="the kubeconfig context to use")
    parser.add_argument(
        "--topology", default=None, metavar="NS/NAME", help=f"topology ConfigMap (default {DEFAULT_TOPOLOGY})"
    )
    parser.add_argument(
        "-o", "--output", choices=("json", "yaml", "wide"), help="json or yaml: data with stable keys; wide: no cuts"
    )
    return parser


def _check(args: argparse.Namespace) -> None:
    if args.topology is not None and not TOPOLOGY_REF.fullmatch(args.topology):
        raise CommandError(
            ExitCode.USAGE,
            f"--topology {args.topology!r}: must be NAMESPACE/NAME of a ConfigMap",
            f"e.g. --topology {DEFAULT_TOPOLOGY} (the default)",
        )
    if args.command == "why" and len(args.names) != 1:
        raise CommandError(ExitCode.USAGE, "why: name exactly one pod", "kubectl gang why POD [-n NAMESPACE]")


async def _items(client: KubeClient, path: str) -> list[dict[str, Any]]:
    items = (await client.get(path)).get("items")
    return items if isinstance(items, list) else []


async def _podgroups(client: KubeClient, scope: str) -> list[dict[str, Any]]:
    try:
        return await _items(client, f"/apis/{GROUP}/{VERSION}{scope}/{PLURAL}")
    except ApiError as exc:
        if exc.status != 404:
            raise
        raise CommandError(
            ExitCode.FAILURE,
            f"the PodGroup CRD ({PLURAL}.{GROUP}) is not installed on this cluster",
            "install gangsched's CRDs: kubectl apply -f crds/",
        ) from None


NATIVE = "/apis/scheduling.k8s.io/v1beta1"


async def _native(client: KubeClient, scope: str, plural: str) -> list[dict[str, Any]]:
    """Kubernetes 1.37's own PodGroups or Workloads; none when the cluster does not serve them (404)."""
    try:
        return await _items(client, f"{NATIVE}{scope}/{plural}")
    except ApiError as exc:
        if exc.status != 404:
            raise
        return []


async def _units(client: KubeClient, where: str | None) -> dict[str, str]:
    """node -> its tier-1 unit, from the topology ConfigMap (empty when it cannot be read; an explicitly named
    ConfigMap that does not exist is an error)."""
    namespace, _, name = (where or DEFAULT_TOPOLOGY).partition("/")
    try:
        cm = await client.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        tree = parse_topology(str((cm.get("data") or {}).get(TOPOLOGY_KEY) or "[]"))
    except ApiError as exc:
        if exc.status == 404 and where is not None:
            raise CommandError(
                ExitCode.NOT_FOUND,
                f"topology ConfigMap {where} not found",
                f"name the ConfigMap gangsched reads (default {DEFAULT_TOPOLOGY}), or leave --topology out",
            ) from None
        return {}
    except ValueError:
        return {}
    units: dict[str, str] = {}
    for node in tree.nodes():
        path = tree.node_path(node)
        if path:
            units[node] = path[0]
    return units


def _where(args: argparse.Namespace, namespace: str) -> str:
    return "in any namespace" if args.all_namespaces else f"in namespace {namespace}"


async def _why(
    client: KubeClient, args: argparse.Namespace, namespace: str, gangs: dict[str, Gang], pods: list[dict[str, Any]]
) -> Output:
    wanted = f"{namespace}/{args.names[0]}"
    pod = next((p for p in pods if key_of(p) == wanted), None)
    if pod is None:
        problem = f'pod "{args.names[0]}" not found in namespace {namespace}'
        return Output(error=CommandError(ExitCode.NOT_FOUND, problem, "kubectl get pods -n " + namespace))
    gang = next((g for g in gangs.values() if any(key_of(p) == wanted for p in g.pods)), None)
    events = await _items(client, f"/api/v1/namespaces/{namespace}/events")
    involved = {args.names[0], gang.key.split("/", 1)[1] if gang else ""}
    related = [e for e in events if (e.get("involvedObject") or {}).get("name") in involved]
    return Output(explain_pod(pod, gang, related), why_record(pod, gang, related))


async def _optional(client: KubeClient, path: str) -> list[dict[str, Any]]:
    """The items of a kind the cluster may not serve (404, or 403 for a kind the user may not read: none)."""
    try:
        return await _items(client, path)
    except ApiError as exc:
        if exc.status in (403, 404):
            return []
        raise


async def _trees(
    client: KubeClient, scope: str, pods: list[dict[str, Any]], native: list[dict[str, Any]]
) -> list[TreeView]:
    """The gang trees in sight (plugin/trees.py): CompositePodGroups with native PodGroups, Grove PodGangs."""
    composites = await _optional(client, f"/apis/scheduling.k8s.io/v1alpha3{scope}/compositepodgroups")
    podgangs = await _optional(client, f"/apis/scheduler.grove.io/v1alpha1{scope}/podgangs")
    return trees_of(composites, native if composites else [], podgangs, pods)


async def _tree(
    client: KubeClient,
    args: argparse.Namespace,
    namespace: str,
    gangs: dict[str, Gang],
    rows: list[WorkloadRow],
    trees: list[TreeView],
) -> Output:
    names = args.names if args.command == "tree" else [args.command, *args.names]
    units = await _units(client, args.topology)
    shown = wanted_workloads(rows, names)
    out = Output(render_tree(gangs, names, units, rows), tree_record(gangs, tree_keys(gangs, names), units, shown))
    if trees and (text := render_trees(trees, names)):  # gang trees (plugin/trees.py), after the gangs
        out.text = text if out.text == "No gangs found." or not out.text else f"{out.text}\n{text}"
        out.record["trees"] = trees_record(trees, names)
    known = tree_nodes(trees)
    missing = [n for n in unmatched(gangs, names, rows) if n not in known]
    if missing:
        listed = ", ".join(f'"{n}"' for n in missing)
        out.error = CommandError(
            ExitCode.NOT_FOUND,
            f"gang {listed} not found {_where(args, namespace)}",
            "kubectl gang -A lists every gang; kubectl get podgroups -A every PodGroup",
        )
        if len(missing) == len(names):
            out.text = ""
    return out


async def _run(args: argparse.Namespace) -> Output:
    try:
        creds = await load_credentials(args.kubeconfig, context=args.context)
    except CredentialError as exc:
        raise credential_problem(exc) from None
    namespace = args.namespace or creds.settings.default_namespace or "default"
    scope = "" if args.all_namespaces and args.command != "why" else f"/namespaces/{namespace}"
    async with KubeClient(creds, retry=RETRY, user_agent="kubectl-gang") as client:
        try:
            podgroups = await _podgroups(client, scope)
            pods = await _items(client, f"/api/v1{scope}/pods")
            native = await _native(client, scope, "podgroups")
            gangs = gangs_of(podgroups, pods, native)
            if args.command == "top":
                now = time.time()
                width = None if args.output == "wide" else TOP_WIDTH
                return Output(render_top(gangs, now, width), top_record(gangs, now))
            if args.command == "why":
                return await _why(client, args, namespace, gangs, pods)
            rows = workload_rows(await _native(client, scope, "workloads"), native)
            trees = await _trees(client, scope, pods, native)
            return await _tree(client, args, namespace, gangs, rows, trees)
        except ApiError as exc:
            raise api_problem(exc, server=creds.settings.server, need=READ_FIX) from None


def _print(out: Output, output: str | None) -> None:
    if output == "json":
        print(json.dumps(out.record, indent=2, sort_keys=False))
    elif output == "yaml":
        print(yaml.safe_dump(out.record, sort_keys=False), end="")
    elif out.text:
        print(out.text)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _check(args)
        out = asyncio.run(_run(args))
    except CommandError as exc:
        return report(COMMAND, exc)
    except OSError as exc:  # a certificate or key file of the kubeconfig that cannot be read or used
        return report(COMMAND, CommandError(ExitCode.USAGE, f"cannot use the kubeconfig: {exc}", KUBECONFIG_FIX))
    _print(out, args.output)
    return report(COMMAND, out.error) if out.error is not None else 0


if __name__ == "__main__":
    sys.exit(main())
