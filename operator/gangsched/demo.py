"""`gangsched demo` (what `make demo` runs): the whole product on the embedded emulator, driven by real kubectl.

Contract: starts the API emulator with 8 simulated nodes (cpu=32, memory=256Gi, nvidia.com/gpu=8 each) and its
simulated kubelet, starts one operator replica (in a thread with its own event loop), applies `crds/`,
`manifests/namespace.yaml`, `manifests/topology-configmap.yaml` and every file of `manifests/examples/` with kubectl,
waits until each example gang has settled (or a deadline passes), and prints
`kubectl get podgroups.scheduling.x-k8s.io -A`,
`kubectl gang -A` and `kubectl get pods -A -o wide` plus the gangs' events. Then the preemption scenario
(manifests/examples/preemption/): a scavenger gang runs, an urgent gang preempts it whole, and the
Preempting/Preempted events show who preempted whom.
The kubeconfig is kept in `.demo/kubeconfig` while it runs. Returns 0 when every gang ended as its example file says, 1
otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from gangsched.handlers.thread import OperatorThread
from gangsched.k8s.client import KubeClient
from gangsched.models.config import config_from_mapping
from gangsched.sim.serve import running_cluster

ROOT = Path(__file__).resolve().parents[2]
NODE_RESOURCES = "cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110"
# gang -> the phases it should settle in (see the comments at the top of each example file)
EXPECTED = {
    "default/train-small": {"Running", "Succeeded"},
    "default/train-huge": {"Timeout"},
    "default/koord-small": {"Running", "Succeeded"},
    "gang-group-a/trainer": {"Running", "Succeeded"},
    "gang-group-b/evaluator": {"Running", "Succeeded"},
    "default/topo-train": {"Running", "Succeeded"},
}
DEADLINE_S = 50.0
# the preemption scenario (manifests/examples/preemption/), applied once the gangs above have settled
PREEMPTION_DIR = ROOT / "manifests" / "examples" / "preemption"
PREEMPTION_EXPECTED = {
    "default/train-urgent": {"Running", "Succeeded"},
    "default/batch-low": {"Pending"},  # preempted whole: its pods were evicted
}
PREEMPTION_DEADLINE_S = 20.0


def say(text: str) -> None:
    print(text, flush=True)


async def kubectl(kubeconfig: str, *args: str, check: bool = True) -> str:
    proc = await asyncio.create_subprocess_exec(
        "kubectl", f"--kubeconfig={kubeconfig}", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    text = out.decode()
    if check and proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed:\n{text}")
    return text


async def kubectl_gang(kubeconfig: str, *args: str) -> str:
    """`kubectl gang ARGS` (the plugin this package installs, plugin/main.py): kubectl refuses flags before a
    plugin's name, so the kubeconfig goes in $KUBECONFIG; the package's executables are put first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "gang",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=dict(os.environ, PATH=path, KUBECONFIG=kubeconfig),
    )
    out, _ = await proc.communicate()
    return out.decode()


async def phases(client: KubeClient) -> dict[str, str]:
    items = (await client.get("/apis/scheduling.x-k8s.io/v1alpha1/podgroups"))["items"]
    return {
        f"{pg['metadata']['namespace']}/{pg['metadata']['name']}": (pg.get("status") or {}).get("phase", "")
        for pg in items
    }


async def run_demo_async() -> int:
    if shutil.which("kubectl") is None:
        say("kubectl is not installed; the demo drives the emulator with it")
        return 2
    workdir = Path(os.environ.get("GANGSCHED_DEMO_DIR", ROOT / ".demo"))
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = str(workdir / "kubeconfig")
    say("== starting the API emulator: 8 nodes x {cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}")
    async with running_cluster(nodes=8, node_resources=NODE_RESOURCES, kubeconfig_path=kubeconfig) as cluster:
        say(f"   kubeconfig: {kubeconfig}  (try: kubectl --kubeconfig {kubeconfig} get nodes)")
        await kubectl(
            kubeconfig,
            "apply",
            "-f",
            str(ROOT / "manifests" / "namespace.yaml"),
            "-f",
            str(ROOT / "manifests" / "topology-configmap.yaml"),
        )
        config = config_from_mapping(
            {
                "namespace": "gangsched-system",
                "leaderElection": {"leaseDurationSeconds": 6, "renewDeadlineSeconds": 4, "retryPeriodSeconds": 1},
            }
        )
        say("== starting the operator (one replica, in a thread and event loop of its own)")
        operator = OperatorThread(kubeconfig=kubeconfig, config=config, identity="gangsched-demo")
        await operator.start()
        say("== kubectl apply -f manifests/examples/")
        say((await kubectl(kubeconfig, "apply", "-f", str(ROOT / "manifests" / "examples"))).rstrip())
        started = time.monotonic()
        settled = False
        last: dict[str, str] = {}
        while time.monotonic() - started < DEADLINE_S:
            now = await phases(cluster.client)
            if now != last:
                say(
                    f"   t={time.monotonic() - started:4.1f}s  "
                    + "  ".join(f"{k}={v or '-'}" for k, v in sorted(now.items()))
                )
                last = now
            if all(now.get(k) in ok for k, ok in EXPECTED.items()):
                settled = True
                break
            await asyncio.sleep(0.5)  # polling what a user would watch; the operator does not depend on it
        if settled:
            settled, last = await preemption_step(kubeconfig, cluster.client)
        say("\n$ kubectl get podgroups.scheduling.x-k8s.io -A")
        say((await kubectl(kubeconfig, "get", "podgroups.scheduling.x-k8s.io", "-A")).rstrip())
        say("\n$ kubectl gang -A   # the kubectl plugin installed with the package (docs/cli.md: kubectl gang)")
        say((await kubectl_gang(kubeconfig, "-A")).rstrip())
        say("\n$ kubectl get pods -A -o wide")
        say((await kubectl(kubeconfig, "get", "pods", "-A", "-o", "wide")).rstrip())
        say("\n$ kubectl get events -A --field-selector involvedObject.kind=PodGroup")
        say(
            (
                await kubectl(
                    kubeconfig, "get", "events", "-A", "--field-selector", "involvedObject.kind=PodGroup", check=False
                )
            ).rstrip()
        )
        await operator.stop()
    wrong = {k: last.get(k) for k, ok in {**EXPECTED, **PREEMPTION_EXPECTED}.items() if last.get(k) not in ok}
    if settled:
        say("\n== every example gang ended as its manifest says")
        return 0
    say(f"\n== not settled within {DEADLINE_S:.0f}s: {wrong}")
    return 1


async def wait_phases(
    client: KubeClient, expected: dict[str, set[str]], deadline: float
) -> tuple[bool, dict[str, str]]:
    started = time.monotonic()
    now: dict[str, str] = {}
    while time.monotonic() - started < deadline:
        now = await phases(client)
        if all(now.get(k) in ok for k, ok in expected.items()):
            return True, now
        await asyncio.sleep(0.25)  # polling what a user would watch; the operator does not depend on it
    return False, now


async def preemption_step(kubeconfig: str, client: KubeClient) -> tuple[bool, dict[str, str]]:
    """A scavenger gang fills part of the free GPUs, then an urgent gang preempts it whole (see the files)."""
    say(
        "\n== group preemption: kubectl apply -f manifests/examples/preemption/00-priorityclasses.yaml "
        "-f .../10-batch-low.yaml"
    )
    say(
        (
            await kubectl(
                kubeconfig,
                "apply",
                "-f",
                str(PREEMPTION_DIR / "00-priorityclasses.yaml"),
                "-f",
                str(PREEMPTION_DIR / "10-batch-low.yaml"),
            )
        ).rstrip()
    )
    ok, now = await wait_phases(client, {"default/batch-low": {"Running"}}, PREEMPTION_DEADLINE_S)
    say(f"   batch-low={now.get('default/batch-low') or '-'}")
    if not ok:
        return False, now
    say("== kubectl apply -f manifests/examples/preemption/20-train-urgent.yaml  (it must preempt)")
    say((await kubectl(kubeconfig, "apply", "-f", str(PREEMPTION_DIR / "20-train-urgent.yaml"))).rstrip())
    ok, now = await wait_phases(client, PREEMPTION_EXPECTED, PREEMPTION_DEADLINE_S)
    say("   " + "  ".join(f"{k}={now.get(k) or '-'}" for k in sorted(PREEMPTION_EXPECTED)))
    say("\n== who preempted whom")
    say("$ kubectl get events -A --field-selector reason=Preempting")
    say(
        (
            await kubectl(kubeconfig, "get", "events", "-A", "--field-selector", "reason=Preempting", check=False)
        ).rstrip()
    )
    say("$ kubectl get events -A --field-selector reason=Preempted")
    say(
        (await kubectl(kubeconfig, "get", "events", "-A", "--field-selector", "reason=Preempted", check=False)).rstrip()
    )
    return ok, now


def run_demo() -> int:
    logging.basicConfig(level=os.environ.get("GANGSCHED_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    return asyncio.run(run_demo_async())
