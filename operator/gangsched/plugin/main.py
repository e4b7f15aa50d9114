"""The `kubectl-gang` executable (`kubectl gang ...`): reads PodGroups, pods, events and the topology ConfigMap with
the project's client and prints what plugin/view.py computes. Exit status 0, or 1 with a one-line error on stderr
(no kubeconfig, the API server unreachable, a pod not found).

Usage (kubectl passes every argument after `gang` through):
  kubectl gang [tree] [NAME...] [-n NS | -A]     gangs as trees (all gangs of the namespace without NAME)
  kubectl gang why POD [-n NS]                   why a pod is pending
  kubectl gang top [-n NS | -A]                  waiting gangs, longest waiting first
Options: --kubeconfig FILE (else $KUBECONFIG, ~/.kube/config), --context NAME, --topology NS/NAME (the topology
ConfigMap, default gangsched-system/gangsched-topology; units are shown when it is readable).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.k8s.credentials import CredentialError, load_credentials
from gangsched.models.podgroup import GROUP, PLURAL, VERSION
from gangsched.models.topology import TOPOLOGY_KEY, parse_topology
from gangsched.plugin.view import explain_pod, gangs_of, key_of, render_top, render_tree

COMMANDS = ("tree", "why", "top")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubectl gang", description="Gangs as gangsched schedules them.")
    parser.add_argument("command", nargs="?", default="tree", help="tree (default), why POD, top, or a gang name")
    parser.add_argument("names", nargs="*", help="gang names (tree) or the pod (why)")
    parser.add_argument("-n", "--namespace", help="the namespace (default: the kubeconfig context's, else default)")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (tree, top)")
    parser.add_argument("--kubeconfig", help="kubeconfig file(s), as kubectl takes them")
    parser.add_argument("--context", help="the kubeconfig context to use")
    parser.add_argument("--topology", default="gangsched-system/gangsched-topology", help="topology ConfigMap ns/name")
    return parser


async def _items(client: KubeClient, path: str) -> list[dict[str, Any]]:
    items = (await client.get(path)).get("items")
    return items if isinstance(items, list) else []


async def _units(client: KubeClient, where: str) -> dict[str, str]:
    """node -> its tier-1 unit, from the topology ConfigMap (empty when it cannot be read)."""
    namespace, _, name = where.partition("/")
    try:
        cm = await client.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        tree = parse_topology(str((cm.get("data") or {}).get(TOPOLOGY_KEY) or "[]"))
    except (ApiError, ValueError):
        return {}
    units: dict[str, str] = {}
    for node in tree.nodes():
        path = tree.node_path(node)
        if path:
            units[node] = path[0]
    return units


async def _run(args: argparse.Namespace) -> str:
    creds = await load_credentials(args.kubeconfig, context=args.context)
    namespace = args.namespace or creds.settings.default_namespace or "default"
    scope = "" if args.all_namespaces and args.command != "why" else f"/namespaces/{namespace}"
    async with KubeClient(creds) as client:
        podgroups = await _items(client, f"/apis/{GROUP}/{VERSION}{scope}/{PLURAL}")
        pods = await _items(client, f"/api/v1{scope}/pods")
        gangs = gangs_of(podgroups, pods)
        if args.command == "top":
            return render_top(gangs, time.time())
        if args.command == "why":
            if len(args.names) != 1:
                raise SystemExit("kubectl gang why: name exactly one pod")
            wanted = f"{namespace}/{args.names[0]}"
            pod = next((p for p in pods if key_of(p) == wanted), None)
            if pod is None:
                raise SystemExit(f'kubectl gang why: pod "{args.names[0]}" not found in namespace {namespace}')
            gang = next((g for g in gangs.values() if any(key_of(p) == wanted for p in g.pods)), None)
            events = await _items(client, f"/api/v1/namespaces/{namespace}/events")
            involved = {args.names[0], gang.key.split("/", 1)[1] if gang else ""}
            related = [e for e in events if (e.get("involvedObject") or {}).get("name") in involved]
            return explain_pod(pod, gang, related)
        names = args.names if args.command == "tree" else [args.command, *args.names]
        return render_tree(gangs, names, await _units(client, args.topology))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        print(asyncio.run(_run(args)))
    except (ApiError, CredentialError, OSError) as exc:
        print(f"kubectl gang: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
