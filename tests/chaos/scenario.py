"""One chaos run: the operator, in-process, against the emulator while it injects faults; checked from outside.

`await run_chaos(seed, kinds)` builds a small cluster (6 nodes of 4 GPUs), starts one operator replica, switches
on fault rules of the given kinds (sim/faults.py; parameters drawn from `random.Random(seed)`), drives a seeded
workload of single-class Strict gangs (every member requests the same resources): gangs that fit (together they
fit the cluster at once, so each must end up bound whatever the order), gangs that can never fit, and deletions
of whole gangs; then stops the faults and lets the cluster settle. It returns a ChaosReport:
- `violations`: what broke an invariant (empty when all is well):
  * no pod bound twice: per pod, at most one `pods/binding` request was carried out (the emulator's binding log,
    which also counts bindings whose answer a fault lost), and no pod is ever seen moving to another node;
  * no node over-committed, on every pod event seen by an outside watch and in the final listing;
  * a Strict gang below minMember only transiently: once the faults stop and the cluster settles, every gang is
    whole (all members bound) or has no member bound;
  * every gang that fits is eventually bound; a gang that can never fit has no member bound;
  * the loop alive: the operator's tasks are all running, it completes scheduling rounds after the faults stop,
    and a last gang created then is bound.
- `faults_injected` (by kind), `bindings` (binding requests carried out), `pods`, `gangs`, `seconds`.
The test's own requests carry the User-Agent `chaos-driver`, which the fault rules do not match: the faults hit
the operator (`gangsched`, `kopf`) and the simulated kubelet (which shares the operator's client), not the judge.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import ssl
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from gangsched.sim.serve import running_cluster
from tests.integration.harness import on_replica, replica

GPU = "nvidia.com/gpu"
PG = "/apis/scheduling.x-k8s.io/v1alpha1"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
NODES = 6
NODE = {"cpu": "16", "memory": "64Gi", GPU: "4", "pods": "20"}
PROFILES = {"gpu1": {"cpu": "1", "memory": "1Gi", GPU: "1"}, "gpu2": {"cpu": "2", "memory": "2Gi", GPU: "2"}}
AGENTS = "gangsched|kopf"  # the operator's own client and Kopf's; the test's client is "chaos-driver"
ALL_KINDS = (
    "http429",
    "http500",
    "http502",
    "http503",
    "http504",
    "reset",
    "latency",
    "stall",
    "watch-cut",
    "watch-gone",
    "continue-expired",
)


def fault_rules(kinds: tuple[str, ...], rng: random.Random) -> list[dict[str, Any]]:
    """Rules of the given kinds, their rates and parameters drawn from rng (scaled to a few seconds of chaos)."""
    rules: list[dict[str, Any]] = []
    for kind in kinds:
        base: dict[str, Any] = {"kind": kind, "agent": AGENTS}
        if kind == "http429":
            rules.append({**base, "p": round(rng.uniform(0.1, 0.25), 3), "retry_after": rng.choice([0, 1])})
        elif kind in ("http500", "http504", "reset"):
            extra = {"delay": round(rng.uniform(0.05, 0.3), 3)} if kind == "http504" else {}
            rules.append(
                {
                    **base,
                    "verb": "create",
                    "resource": "pods/binding",
                    "p": round(rng.uniform(0.15, 0.3), 3),
                    "commit": True,
                    **extra,
                }
            )
            rules.append(
                {**base, "verb": "get|list|create|update|patch|delete", "p": round(rng.uniform(0.05, 0.15), 3), **extra}
            )
        elif kind in ("http502", "http503"):
            rules.append({**base, "p": round(rng.uniform(0.05, 0.2), 3)})
        elif kind == "latency":
            rules.append({**base, "p": 0.3, "delay": round(rng.uniform(0.02, 0.2), 3)})
        elif kind == "stall":
            rules.append({**base, "every": rng.randint(15, 30), "seconds": round(rng.uniform(0.3, 0.8), 3), "limit": 2})
        elif kind == "watch-cut":
            if rng.random() < 0.5:
                rules.append({**base, "p": 0.6, "events": rng.randint(1, 15)})
            else:
                rules.append({**base, "p": 0.6, "seconds": round(rng.uniform(0.2, 1.0), 3)})
        elif kind == "watch-gone":
            rules.append({**base, "p": round(rng.uniform(0.3, 0.7), 3)})
        elif kind == "continue-expired":
            rules.append({**base, "p": 0.5})
        else:
            raise ValueError(kind)
    return rules


@dataclass
class GangPlan:
    name: str
    size: int  # minMember == number of members (Strict, single class)
    profile: str
    fits: bool
    deleted: bool = False

    def members(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.size)]


@dataclass
class ChaosReport:
    seed: int
    kinds: tuple[str, ...]
    violations: list[str] = field(default_factory=list)
    faults_injected: dict[str, int] = field(default_factory=dict)
    bindings: int = 0
    events: int = 0  # pod events the outside watch checked
    lost_answers: int = 0  # bindings carried out whose answer a fault lost (the operator had to find out)
    pods: int = 0
    gangs: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"seed {self.seed} kinds {','.join(self.kinds)}: {self.gangs} gangs, {self.pods} pods, {self.bindings} "
            f"bindings ({self.lost_answers} answers lost), {self.events} pod events, "
            f"faults {self.faults_injected}, {len(self.violations)} violations, {self.seconds:.1f}s"
        )


def quantity(value: str) -> float:
    for suffix, factor in (("Gi", 1024.0**3), ("Mi", 1024.0**2), ("m", 0.001)):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value)


def requests_of(pod: dict[str, Any]) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for c in pod["spec"].get("containers") or []:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] += quantity(str(value))
    total["pods"] = 1.0
    return dict(total)


class Judge:
    """The test's view: its own HTTP session (never faulted), a pod watch checking every event."""

    def __init__(self, server: Any) -> None:
        """The judge is the cluster's admin: the server's admin token over its TLS (auth is on, as in sim serve)."""
        headers = {"User-Agent": "chaos-driver", "Accept": "application/json"}
        connector = None
        if server.ca_pem is not None:
            headers["Authorization"] = f"Bearer {server.authenticator.admin_token}"
            connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cadata=server.ca_pem.decode()))
        self.session = aiohttp.ClientSession(server.url, headers=headers, connector=connector)
        self.allocatable = {k: quantity(v) for k, v in NODE.items()}
        self.node_of: dict[str, str] = {}  # pod uid -> node
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> latest object
        self.violations: list[str] = []
        self.events = 0

    async def close(self) -> None:
        await self.session.close()

    async def call(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201)) -> Any:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else None
        async with self.session.request(method, path, data=data, headers=headers) as r:
            raw = await r.read()
            if r.status not in ok:
                raise AssertionError(f"{method} {path}: {r.status} {raw[:300]!r}")
            return orjson.loads(raw) if raw else None

    async def watch(self) -> None:
        rv = "0"
        while True:
            try:
                params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true"}
                async with self.session.get(
                    "/api/v1/pods", params=params, timeout=aiohttp.ClientTimeout(total=None)
                ) as r:
                    async for line in r.content:
                        event = orjson.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            rv = "0"
                            break
                        rv = obj["metadata"]["resourceVersion"]
                        if event["type"] == "BOOKMARK":
                            continue
                        self.observe(event["type"], obj)
            except aiohttp.ClientError:
                continue

    def observe(self, kind: str, obj: dict[str, Any]) -> None:
        self.events += 1
        uid = obj["metadata"]["uid"]
        name = obj["metadata"]["name"]
        node = obj["spec"].get("nodeName")
        before = self.node_of.get(uid)
        if before is not None and node != before:
            self.violations.append(f"pod {name} moved from node {before} to {node!r}")
        if node:
            self.node_of[uid] = node
        if kind == "DELETED":
            self.pods.pop(uid, None)
        else:
            self.pods[uid] = obj
        if node and kind != "DELETED":
            self.check_node(node, f"after {kind} {name}")

    def check_node(self, node: str, when: str, pods: list[dict[str, Any]] | None = None) -> None:
        used: dict[str, float] = defaultdict(float)
        for p in pods if pods is not None else self.pods.values():
            if p["spec"].get("nodeName") == node and (p.get("status") or {}).get("phase") not in (
                "Succeeded",
                "Failed",
            ):
                for r, v in requests_of(p).items():
                    used[r] += v
        over = {r: v for r, v in used.items() if v > self.allocatable.get(r, 0.0) + 1e-9}
        if over:
            self.violations.append(f"node {node} over-committed {when}: {over}")


def gang_objects(plan: GangPlan) -> list[tuple[str, dict[str, Any]]]:
    requests = PROFILES[plan.profile]
    objs: list[tuple[str, dict[str, Any]]] = [
        (
            f"{PG}/namespaces/default/podgroups",
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": plan.name, "namespace": "default"},
                "spec": {"minMember": plan.size},
            },
        )
    ]
    for member in plan.members():
        objs.append(
            (
                "/api/v1/namespaces/default/pods",
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": member, "namespace": "default", "labels": {GROUP_LABEL: plan.name}},
                    "spec": {
                        "schedulerName": "gangsched",
                        "containers": [
                            {
                                "name": "main",
                                "image": "registry.k8s.io/pause:3.9",
                                "resources": {"requests": dict(requests), "limits": {GPU: requests[GPU]}},
                            }
                        ],
                    },
                },
            )
        )
    return objs


def plan_workload(rng: random.Random) -> list[GangPlan]:
    """Gangs that fit all together (GPU sizes 1 or 2 divide a node's 4, so any set whose total fits packs), a few
    that can never fit (more GPUs than the cluster has, or members bigger than a node)."""
    capacity = NODES * int(NODE[GPU])
    plans: list[GangPlan] = []
    used = 0
    budget = capacity - 2 - rng.randint(0, 2)  # room for the last gang, created once the faults stop
    index = 0
    while True:
        profile = rng.choice(list(PROFILES))
        size = rng.randint(2, 4)
        need = size * int(PROFILES[profile][GPU])
        if used + need > budget:
            break
        index += 1
        plans.append(GangPlan(f"fit{index}", size, profile, fits=True))
        used += need
    for i in range(rng.randint(1, 2)):
        profile = rng.choice(list(PROFILES))
        size = capacity // int(PROFILES[profile][GPU]) + rng.randint(1, 3)  # more members than the cluster can hold
        plans.append(GangPlan(f"nofit{i + 1}", size, profile, fits=False))
    rng.shuffle(plans)
    return plans


@contextlib.asynccontextmanager
async def chaos_cluster() -> AsyncIterator[Any]:
    async with running_cluster(nodes=NODES, node_resources=NODE) as cluster:
        yield cluster


async def run_chaos(
    seed: int,
    kinds: tuple[str, ...],
    *,
    chaos_seconds: float = 4.0,
    settle_seconds: float = 20.0,
    rules: list[dict[str, Any]] | None = None,
) -> ChaosReport:
    """One seeded run; `rules` (sim/faults.py rule objects) replace the ones drawn for `kinds`."""
    rng = random.Random(seed)
    report = ChaosReport(seed, kinds)
    started = time.monotonic()
    async with chaos_cluster() as cluster:
        judge = Judge(cluster.server)
        watch = asyncio.create_task(judge.watch())
        try:
            settings: dict[str, Any] = {"backoff": {"initialSeconds": 0.1, "maxSeconds": 0.5}}
            async with replica(cluster.kubeconfig, **settings) as operator:
                plans = plan_workload(rng)
                report.gangs = len(plans)
                report.pods = sum(p.size for p in plans)
                await judge.call(
                    "POST",
                    "/sim/faults",
                    {"seed": seed, "record": True, "rules": rules if rules is not None else fault_rules(kinds, rng)},
                )
                # the workload, paced over the chaos window: gangs arrive, a few are deleted again
                deadline = time.monotonic() + chaos_seconds
                steps: list[tuple[str, GangPlan]] = [("create", p) for p in plans]
                for p in rng.sample([p for p in plans if p.fits], k=min(2, sum(1 for p in plans if p.fits))):
                    steps.insert(rng.randint(steps.index(("create", p)) + 1, len(steps)), ("delete", p))
                for action, plan in steps:
                    if action == "create":
                        for path, obj in gang_objects(plan):
                            await judge.call("POST", path, obj)
                    else:
                        plan.deleted = True
                        await judge.call("DELETE", f"{PG}/namespaces/default/podgroups/{plan.name}", ok=(200, 404))
                        for member in plan.members():
                            await judge.call(
                                "DELETE",
                                f"/api/v1/namespaces/default/pods/{member}?gracePeriodSeconds=0",
                                ok=(200, 404),
                            )
                    await asyncio.sleep(rng.uniform(0.0, 2 * chaos_seconds / len(steps)))  # pacing the scenario
                await asyncio.sleep(max(0.0, deadline - time.monotonic()))  # the rest of the chaos window
                state = await judge.call("GET", "/sim/faults")
                await judge.call("DELETE", "/sim/faults")
                report.faults_injected = dict(state["injected"])
                cycles_at_calm = on_replica(operator, lambda: operator.cycles)

                async def settled() -> list[str]:
                    pods = {
                        p["metadata"]["name"]: p
                        for p in (await judge.call("GET", "/api/v1/namespaces/default/pods"))["items"]
                    }
                    problems = []
                    for plan in plans:
                        bound = [m for m in plan.members() if (pods.get(m) or {}).get("spec", {}).get("nodeName")]
                        if plan.deleted:
                            continue
                        if not plan.fits and bound:
                            problems.append(f"gang {plan.name} cannot fit but has {len(bound)} members bound")
                        if plan.fits and len(bound) != plan.size:
                            problems.append(f"gang {plan.name} fits but has {len(bound)}/{plan.size} members bound")
                    return problems

                deadline = time.monotonic() + settle_seconds
                problems = await settled()
                while problems and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)  # polling a real condition with a deadline
                    problems = await settled()
                report.violations += [f"not settled {settle_seconds}s after the faults stopped: {p}" for p in problems]

                # the loop alive: every supervised task runs (never restarted after a crash), rounds go on, a last
                # gang binds
                dead = on_replica(operator, operator.supervisor.down)
                if dead:
                    report.violations.append(f"operator tasks down: {dead}")
                crashed = on_replica(
                    operator, lambda: {n: s for n, s in operator.supervisor.status().items() if s["lastError"]}
                )
                if crashed:
                    report.violations.append(f"operator tasks crashed (restarted by the supervisor): {crashed}")
                last = GangPlan("last", 2, "gpu1", fits=True)
                if not problems:
                    for path, obj in gang_objects(last):
                        await judge.call("POST", path, obj)
                    plans.append(last)
                    end = time.monotonic() + 10
                    while time.monotonic() < end and await settled():  # noqa: ASYNC110 (polls the API: no event)
                        await asyncio.sleep(0.1)
                    if await settled():
                        report.violations.append(
                            f"the last gang was not bound after the faults stopped: {await settled()}"
                        )
                if on_replica(operator, lambda: operator.cycles) <= cycles_at_calm:
                    report.violations.append("the operator completed no scheduling round after the faults stopped")

            # no pod bound twice, no node over-committed (final listing)
            log = (await judge.call("GET", "/sim/faults/bindings"))["items"]
            committed = Counter(b["pod"] for b in log if b["status"] == 201)
            report.bindings = sum(committed.values())
            report.lost_answers = sum(1 for b in log if b["status"] == 201 and b["lostAnswer"])
            report.violations += [f"pod {pod} was bound {n} times" for pod, n in committed.items() if n > 1]
            final = (await judge.call("GET", "/api/v1/pods"))["items"]
            for node in {p["spec"].get("nodeName") for p in final if p["spec"].get("nodeName")}:
                judge.check_node(node, "in the final listing", final)
            report.violations = judge.violations + report.violations
            report.events = judge.events
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watch
            await judge.close()
    report.seconds = time.monotonic() - started
    return report
