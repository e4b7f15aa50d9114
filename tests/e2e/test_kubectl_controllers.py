"""Every controller's gang, end to end with the real kubectl (issue 14 item 8): objects built the way each
controller's source builds them (tests/controllers.py cites the files), applied with kubectl on the emulator, one
replica of gangsched.

Per controller, on six nodes of 4 cpu in three units of two (one member of 3 cpu per node), n1 taken by another
scheduler's pod (so n0 is alone in its unit):
- all or nothing: a workload of 6 members, applied first (5 of them would fit one by one as kube-scheduler would
  place them), binds nothing and its PodGroup says why;
- the gang is recognized: a workload of 4 members binds whole, with the topology its template asks for
  (`scheduling.gangsched.io/*` annotations: hard, highest tier 2, groups of 2 ranks): the ranks the controller's
  labels give (the order tests/controllers.py builds, from the controller's source) are the ranks the replica
  read, and ranks (0, 1) and (2, 3) each share a unit, never n0 (the network-topology design of seed 004: a
  data-parallel group of `groupSize` consecutive ranks in one domain);
- its PodGroup's status is right: `Running`, `scheduled` and `running` = 4;
- restart: `kubectl delete pods -l <the workload's selector>`, then the pods created again as the controller
  creates them (new names where it names them anew): while one is missing nothing binds (the PodGroup says
  `3 of ...`), then the gang binds whole again, with the same ranks and topology, and the status is right again
  (docs/concepts.md "Semantics": a job restarted whole starts whole or not at all).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.core.values.naming import natural_key
from gangsched.sim.serve import Cluster, running_cluster
from tests import controllers as ctl
from tests import workloads as w
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, get_podgroup, on_replica, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
NODE = {"cpu": "4", "memory": "32Gi", "pods": "110"}
CPU = 3
TREE = [
    {"layer": 2, "name": "spine0", "children": ["unit0", "unit1", "unit2"]},
    {"layer": 1, "name": "unit0", "parents": ["spine0"], "children": ["n0", "n1"]},
    {"layer": 1, "name": "unit1", "parents": ["spine0"], "children": ["n2", "n3"]},
    {"layer": 1, "name": "unit2", "parents": ["spine0"], "children": ["n4", "n5"]},
]
UNIT = {f"n{i}": f"unit{i // 2}" for i in range(6)}
BLOCKER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "other-scheduler", "namespace": "default"},
    "spec": {
        "nodeName": "n1",
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "3"}}}],
    },
}
TOPOLOGY = {
    "scheduling.gangsched.io/network-topology-mode": "hard",
    "scheduling.gangsched.io/highest-tier-allowed": "2",
    "scheduling.gangsched.io/group-size": "2",
}


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE) as c:
        await kubectl(c, "apply", "-f", str(ROOT / "tests" / "data" / "workload-crds.yaml"))
        configmap = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
            "data": {"topology.json": json.dumps(TREE)},
        }
        await kubectl(c, "apply", "-f", "-", input=json.dumps(configmap))
        await kubectl(c, "apply", "-f", "-", input=json.dumps(BLOCKER))  # n0 is the only free node of unit0
        yield c


async def kubectl_create(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    """`kubectl create -f - -o json`: the object as stored (its uid is what its dependents' ownerReferences name)."""
    body = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}
    created: dict[str, Any] = json.loads(
        await kubectl(cluster, "create", "-f", "-", "-o", "json", input=json.dumps(body))
    )
    return created


class Run:
    """One workload of one controller in the cluster: its objects, and its pods applied as the controller would."""

    def __init__(
        self,
        cluster: Cluster,
        controller: ctl.Controller,
        name: str,
        n: int,
        annotations: dict[str, str],
        *,
        inferred: bool,
    ):
        self.c, self.ctl, self.name, self.n, self.annotations = cluster, controller, name, n, annotations
        self.inferred = inferred
        self.pg = controller.inferred_podgroup(name) if inferred else controller.podgroup(name)
        self.created: list[dict[str, Any]] = []
        self.owners: dict[tuple[str, str], str] = {}  # the Jobs / StatefulSets between workload and pods

    async def start(self) -> None:
        workload = self.ctl.setup(self.name, self.n)
        if workload is not None:
            self.created.append(await kubectl_create(self.c, workload))
            then = self.ctl.then(self.created[0], self.n)
            if then is not None:
                self.created.append(await kubectl_create(self.c, then))
        docs = [] if self.inferred else self.ctl.declarations(self.created, self.name, self.n, CPU)
        if docs:
            await kubectl(self.c, "apply", "-f", "-", input=yaml.safe_dump_all(docs))

    async def build(self, attempt: int) -> list[dict[str, Any]]:
        """The pods in rank order, their owners created (once) as the controller creates them."""
        members = self.ctl.pods(self.created, self.name, self.n, self.annotations, attempt)
        if self.inferred:
            members = ctl.undeclared(members)
        for p in members:
            p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": str(CPU)}}
        parent = self.created[-1] if self.created else None
        await w.materialize(lambda obj: kubectl_create(self.c, obj), members, parent, self.owners)
        return members

    async def apply(self, members: list[dict[str, Any]]) -> None:
        await kubectl(self.c, "apply", "-f", "-", input=yaml.safe_dump_all(members))

    async def admit(self, members: list[dict[str, Any]]) -> None:
        """Kueue's admission: its pod controller lifts each pod's gate once the whole group exists."""
        if self.ctl.gates():
            for p in members:
                patch = '[{"op":"remove","path":"/spec/schedulingGates"}]'
                await kubectl(self.c, "patch", "pod", p["metadata"]["name"], "--type=json", "-p", patch)

    async def status(self) -> dict[str, Any]:
        return ((await get_podgroup(self.c.client, self.pg)) or {}).get("status") or {}

    async def placed(self, members: list[dict[str, Any]]) -> dict[str, str]:
        found = bound(await pods(self.c.client))
        return {m["metadata"]["name"]: found[m["metadata"]["name"]] for m in members if m["metadata"]["name"] in found}


async def whole(run: Run, members: list[dict[str, Any]], what: str) -> dict[str, str]:
    async def probe() -> dict[str, str] | None:
        placed = await run.placed(members)
        return placed if len(placed) == len(members) else None

    return await eventually(probe, what=what)


async def running(run: Run) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        status = await run.status()
        ok = status.get("phase") == "Running" and status.get("running") == run.n
        return status if ok else None

    status = await eventually(probe, what=f"PodGroup {run.pg} Running with {run.n} running")
    assert status.get("scheduled") == run.n, status
    return status


def check_ranks_and_topology(op: Any, members: list[dict[str, Any]], placed: dict[str, str]) -> None:
    names = [m["metadata"]["name"] for m in members]
    ranks = on_replica(op, lambda: {p.name: p.rank for p in op.cluster.pods.values() if p.name in names})
    # the replica's rank order (core/transaction/session.py: explicit ranks first, then natural name order) is the
    # controller's
    order = sorted(names, key=lambda n: (ranks[n] is None, ranks[n] or 0, natural_key(n)))
    assert order == names, ranks
    # groups of 2 consecutive ranks, each in one unit: never on n0 (alone in unit0), which placing members one
    # by one in rank order would use
    units = [UNIT[placed[n]] for n in names]
    assert units[0] == units[1] != units[2] == units[3], dict(zip(names, units, strict=True))
    assert "unit0" not in units, placed


MATRIX = [
    *[pytest.param(c, False, id=c.kind) for c in ctl.CONTROLLERS],
    *[pytest.param(c, True, id=f"{c.kind}-inferred") for c in ctl.INFERRED],
]


@pytest.mark.parametrize(("controller", "inferred"), MATRIX)
async def test_controller_gang_all_or_nothing_ranks_topology_status_and_restart(
    cluster: Cluster, controller: ctl.Controller, inferred: bool
) -> None:
    """`inferred`: the controller's gang integration off, the gang inferred from the workload (opt-in)."""
    settings: dict[str, Any] = {"schedulerNames": [w.GANGSCHED]}
    if controller.scheduler != w.GANGSCHED and not inferred:
        settings["schedulerNames"].append(controller.scheduler)
    if inferred:
        settings["inferGangs"] = {"enabled": True}
        await kubectl(cluster, "apply", "-f", str(ROOT / "manifests" / "rbac-infer-gangs.yaml"))
        await kubectl(cluster, "label", "namespace", "default", "scheduling.gangsched.io/infer-gangs=true")
    async with replica(cluster.kubeconfig, **settings) as op:
        # all or nothing: 6 members on the 5 free nodes (one per node) bind nothing
        big = Run(cluster, controller, "big", 6, {}, inferred=inferred)
        await big.start()
        big_pods = await big.build(0)
        await big.apply(big_pods)
        await big.admit(big_pods)

        async def big_waits() -> str | None:
            return (await big.status()).get("message") or None

        message = await eventually(big_waits, what="the workload that cannot fit says why")
        assert not await big.placed(big_pods), f"a part of a gang that cannot fit started: {message}"

        # the gang: 4 members bind whole, ranks and topology honoured, status right
        run = Run(cluster, controller, "job", 4, dict(TOPOLOGY), inferred=inferred)
        await run.start()
        members = await run.build(0)
        await run.apply(members)
        await run.admit(members)
        placed = await whole(run, members, "the gang bound whole")
        check_ranks_and_topology(op, members, placed)
        await running(run)
        assert not await big.placed(big_pods)

        # restart: every pod deleted, then created again as the controller does; one missing: nothing binds
        await kubectl(cluster, "delete", "pods", "-l", controller.selector("job"))
        again = await run.build(1)
        await run.apply(again[:-1])

        async def short() -> str | None:
            message = (await run.status()).get("message") or ""
            return message if message.startswith("3 of") else None

        await eventually(short, what="the restarted gang waiting for its last member")
        assert not await run.placed(again), "a member of the restarted gang bound before the gang was whole"
        await run.apply(again[-1:])
        await run.admit(again)
        placed = await whole(run, again, "the restarted gang bound whole")
        check_ranks_and_topology(op, again, placed)
        await running(run)
        assert not await big.placed(big_pods)


async def test_spark_driver_is_the_quorum_min_resources_hold_it_and_a_resubmission_starts_again(
    cluster: Cluster,
) -> None:
    """The Spark operator's gang is the driver alone (minMember 1: the executors do not exist until the driver runs
    and asks for them), so all or nothing here is the PodGroup's minResources (driver + executors): an application
    whose minResources exceed the free capacity does not start its driver, although the driver alone would fit.
    Executors join the satisfied gang one by one. Ranks and topology: none (Spark sets no index; a gang of one).
    A failed application is resubmitted: every pod deleted, a new driver of the same name, new executors."""
    await kubectl(cluster, "apply", "-f", "-", input=json.dumps(ctl.SPARK_CRD))
    async with replica(cluster.kubeconfig):
        big = await kubectl_create(cluster, ctl.spark_application("big", executors=7, cpu=CPU))  # 24 cpu > 21 free
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(ctl.spark_podgroup(big, CPU)))
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(ctl.spark_driver(big, CPU, 0)))

        async def big_waits() -> str | None:
            pg = await get_podgroup(cluster.client, "big-pg")
            message: str = ((pg or {}).get("status") or {}).get("message") or ""
            return message if "minResources" in message else None

        await eventually(big_waits, what="the application whose minResources do not fit says why")
        assert "big-driver" not in bound(await pods(cluster.client))

        app = await kubectl_create(cluster, ctl.spark_application("pi", executors=2, cpu=CPU))
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(ctl.spark_podgroup(app, CPU)))
        for attempt in (0, 1):
            driver = await kubectl_create(cluster, ctl.spark_driver(app, CPU, attempt))
            await whole_names(cluster, ["pi-driver"], "the driver bound alone (the quorum)")
            executors = ctl.spark_executors(app, driver, CPU, attempt)
            await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(executors))
            await whole_names(cluster, [e["metadata"]["name"] for e in executors], "the executors bound")

            async def app_running() -> dict[str, Any] | None:
                status = ((await get_podgroup(cluster.client, "pi-pg")) or {}).get("status") or {}
                return status if status.get("phase") == "Running" and status.get("running") == 3 else None

            status = await eventually(app_running, what="pi-pg Running with the driver and 2 executors")
            assert status.get("scheduled") == 3, status
            if attempt == 0:  # the resubmission: the operator deletes the driver, its executors go with it
                await kubectl(cluster, "delete", "pods", "-l", "sparkoperator.k8s.io/app-name=pi")
        assert "big-driver" not in bound(await pods(cluster.client))


async def whole_names(cluster: Cluster, names: list[str], what: str) -> None:
    async def probe() -> bool:
        placed = bound(await pods(cluster.client))
        return all(n in placed for n in names)

    await eventually(probe, what=what)


async def test_mpijob_wait_for_workers_ready_needs_min_available_and_then_the_launcher_joins_alone(
    cluster: Cluster,
) -> None:
    """mpi-operator `launcherCreationPolicy: WaitForWorkersReady` creates the launcher Job only once every worker is
    Ready (pkg/controller/mpi_job_controller.go `syncHandler`), while its PodGroup counts the launcher
    (pkg/controller/podgroup.go `calculateMinAvailable`: workers + 1): the workers wait for a member that is never
    created, and the PodGroup says so (docs/integrations.md, "Known upstream deadlocks"). With
    `schedulingPolicy.minAvailable: <workers>` (then `calculateMinAvailable` returns it) the workers bind all or
    nothing and the launcher, created once they run, joins the satisfied gang alone."""
    mpi = ctl.MPIJob("mpijob")
    async with replica(cluster.kubeconfig):
        stuck = Run(cluster, mpi, "stuck", 4, {}, inferred=False)
        await stuck.start()
        _, *stuck_workers = await stuck.build(0)  # the launcher last: not created yet
        await stuck.apply(stuck_workers)

        async def deadlocked() -> str | None:
            message: str = (await stuck.status()).get("message") or ""
            return message if message == "3 of minMember 4 pods exist" else None

        await eventually(deadlocked, what="the WaitForWorkersReady deadlock reported")
        assert not await stuck.placed(stuck_workers)

        job = Run(cluster, mpi, "job", 4, {}, inferred=False)
        workload = mpi.setup("job", 4)
        assert workload is not None
        workload["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
        workload["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 3}}
        job.created.append(await kubectl_create(cluster, workload))
        pg = ctl.podgroup("job", 3, job.created[0], cpu=CPU)  # minMember = minAvailable
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(pg))
        *workers, launcher = await job.build(0)
        await job.apply(workers)
        await whole(job, workers, "the 3 workers bound together")

        async def workers_run() -> bool:
            found = await pods(cluster.client)
            return all(found[m["metadata"]["name"]]["status"].get("phase") == "Running" for m in workers)

        await eventually(workers_run, what="the workers running (mpi-operator then creates the launcher Job)")
        await job.apply([launcher])
        await whole(job, [launcher], "the launcher, created once the workers run, bound alone")

        async def all_running() -> dict[str, Any] | None:
            status = await job.status()
            return status if status.get("phase") == "Running" and status.get("running") == 4 else None

        await eventually(all_running, what="the MPIJob's PodGroup Running with the launcher and 3 workers")
        assert not await stuck.placed(stuck_workers)
