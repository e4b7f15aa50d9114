"""One operator replica: the cache, the scheduling loop and the writers, wired together.

Contract:
- `Operator(client=..., config=..., identity=...)`; `await start()` seeds the cache from lists (nodes,
  PodGroups, the topology ConfigMap), starts the pod reflector and waits for its first list, then starts the
  scheduling loop, the writers and leader election; `await stop()` cancels them and gives the lease up.
  Kopf handlers (handlers/) keep the cache current for nodes, PodGroups, PriorityClasses and the topology.
- The loop wakes on cache changes (debounced by `debounce` seconds, so a burst of watch events becomes one
  round) and on timers (the Plan's `next_wakeup`: waiting-time expiry, backoff end). A round runs cycles of
  `core.scheduler.schedule` until a plan is empty, applying each plan to the Cluster before carrying it out.
  Only the leader (when leader election is on) decides and writes; a follower keeps its cache warm.
- Carrying a Plan out: bindings go to the Binder in the background (a failed member goes back to the
  Cluster through `bind_failed` and is requeued); PodGroup status, pod conditions and the timeout annotation
  go through the coalescing PatchWriter; events through the EventRecorder. PodGroup status and the PodGroups
  of annotation-only gangs: runtime/podgroups.py; the topology tree's source: runtime/topology.py; group
  preemption's evictions and nominations: runtime/preemption.py.
- Becoming leader (at start, or a follower taking over) first restores what the previous leader kept in memory
  only (`_restore`): waiting-time starts from PodGroup status, nominations and their victims from pod status.
- Nothing here raises out of the loop for one bad object: bad input becomes events (see state/cache.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Sequence
from typing import Any

from gangsched.core.plan import Plan
from gangsched.core.scheduler import schedule
from gangsched.k8s.binder import Binder, BindResult
from gangsched.k8s.client import STRATEGIC_MERGE_PATCH, ApiError, KubeClient, resource_path
from gangsched.k8s.lease import LeaderElector
from gangsched.k8s.reflector import Reflector
from gangsched.k8s.writer import EventRecorder, ObjectRef, PatchWriter
from gangsched.models import keys
from gangsched.models.config import OperatorConfig
from gangsched.models.podgroup import API_VERSION as PG_API_VERSION
from gangsched.models.podgroup import GROUP as PG_GROUP
from gangsched.models.podgroup import PLURAL as PG_PLURAL
from gangsched.models.podgroup import VERSION as PG_VERSION
from gangsched.runtime.metrics import Metrics
from gangsched.runtime.podgroups import PodGroupReporter, now_iso
from gangsched.runtime.podgroups import split_key as _split
from gangsched.runtime.preemption import Preemptions
from gangsched.runtime.topology import TopologySource
from gangsched.state.cache import ClusterCache

log = logging.getLogger(__name__)

def pod_path(namespace: str, name: str, *, status: bool = False) -> str:
    return resource_path(group="", version="v1", plural="pods", namespace=namespace, name=name, subresource="status" if status else None)


class Operator:
    def __init__(
        self,
        *,
        client: KubeClient,
        config: OperatorConfig,
        identity: str,
        debounce: float = 0.01,
        max_cycles_per_round: int = 10_000,
    ) -> None:
        self.client = client
        self.config = config
        self.identity = identity
        self.sched_config = config.scheduler_config()
        self.metrics = Metrics()
        self.metrics.export_requests(client.requests)
        self.cache = ClusterCache(scheduler_name=config.scheduler_name, on_change=self.wake, on_status=self.wake_for_status)
        self.status_delay = 0.1  # status-only changes (pods seen bound / Running) wake the loop this much later, merged
        self._status_wake: asyncio.TimerHandle | None = None
        self.binder = Binder(client, concurrency=config.bind_concurrency)
        # events and status patches give way to bindings (for 2 s at most): a burst binds first, then reports
        self.writer = PatchWriter(client, defer_to=self.binder.idle)
        self.events = EventRecorder(client, component=config.scheduler_name, instance=identity, defer_to=self.binder.idle)
        self.podgroups = PodGroupReporter(client=client, cache=self.cache, writer=self.writer, create_for_annotation_gangs=config.create_pod_groups_for_annotation_gangs)
        self.topology = TopologySource(client=client, cache=self.cache, events=self.events, namespace=config.namespace, config=config.topology)
        self.preemptions = Preemptions(client=client, cache=self.cache, writer=self.writer, events=self.events, wake=self.wake)
        le = config.leader_election
        self.elector = (
            LeaderElector(
                client,
                namespace=config.namespace,
                name=le.lease_name,
                identity=identity,
                lease_duration=le.lease_duration_seconds,
                renew_deadline=le.renew_deadline_seconds,
                retry_period=le.retry_period_seconds,
            )
            if le.enabled
            else None
        )
        self.debounce = debounce
        self.max_cycles_per_round = max_cycles_per_round
        self.ready = asyncio.Event()
        self.bound = 0  # pods this replica bound (the tests' and benchmarks' witness)
        self.cycles = 0
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._binds: set[asyncio.Task[Any]] = set()
        self._stopped = False
        self._was_leader = False
        self.pod_reflector = Reflector(client, "/api/v1/pods", on_list=self.cache.on_pod_list, on_event=self.cache.on_pod_event)
        self.topology_reflector = self.topology.reflector()

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        if self._tasks:
            return
        await self._seed()
        self._tasks.append(asyncio.create_task(self.pod_reflector.run(), name="gangsched-pods"))
        self._tasks.append(asyncio.create_task(self.topology_reflector.run(), name="gangsched-topology"))
        await self.pod_reflector.synced.wait()
        self._tasks += [
            asyncio.create_task(self.writer.run(), name="gangsched-writer"),
            asyncio.create_task(self.events.run(), name="gangsched-events"),
            asyncio.create_task(self._loop(), name="gangsched-loop"),
        ]
        if self.elector is not None:
            self._tasks.append(asyncio.create_task(self.elector.run(), name="gangsched-lease"))
        self.ready.set()
        self.wake()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        for task in [*self._tasks, *self._binds]:
            task.cancel()
        for task in [*self._tasks, *self._binds]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.elector is not None:
            with contextlib.suppress(Exception):
                await self.elector.release()

    async def _seed(self) -> None:
        """Lists first, so the first decision is taken on a complete view (restart safety)."""
        nodes, _ = await self.client.list_all("/api/v1/nodes")
        for node in nodes:
            self.cache.on_node(None, node)
        try:
            podgroups, _ = await self.client.list_all(f"/apis/{PG_GROUP}/{PG_VERSION}/{PG_PLURAL}")
        except ApiError as exc:
            log.error("cannot list PodGroups (is the CRD installed? kubectl apply -f crds/): %s", exc)
            podgroups = []
        for pg in podgroups:
            self.cache.on_podgroup(None, pg)
        await self.topology.seed()

    @property
    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def health(self) -> dict[str, Any]:
        pending = sum(1 for g in self.cluster.gangs.values() if g.pending)
        return {"ready": self.ready.is_set(), "leader": self.is_leader, "pendingGangs": pending, "cycles": self.cycles}

    @property
    def cluster(self) -> Any:
        return self.cache.cluster

    def wake(self) -> None:
        self._wake.set()

    def wake_for_status(self) -> None:
        """Only PodGroup status may have changed: one round soon, shared by everything until then."""
        if self._status_wake is None:
            self._status_wake = asyncio.get_running_loop().call_later(self.status_delay, self._status_due)

    def _status_due(self) -> None:
        self._status_wake = None
        self.wake()

    # --------------------------------------------------------------------- loop
    async def _loop(self) -> None:
        next_wakeup: float | None = None
        while True:
            timeout = None if next_wakeup is None else max(0.0, next_wakeup - time.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            self._wake.clear()
            if self.debounce:
                await asyncio.sleep(self.debounce)  # let a burst of watch events land before deciding
            self.metrics.is_leader.set(1 if self.is_leader else 0)
            if not self.is_leader:
                self._was_leader = False
                if self.elector is not None:
                    await self.elector.changed.wait()
                    self.elector.changed.clear()
                next_wakeup = None
                continue
            if not self._was_leader:  # a new leader rewrites every gang's status from its own view
                self._was_leader = True
                self._restore()
                self.cache.dirty_gangs.update(self.cluster.gangs)
            try:
                next_wakeup = await self._round()
            except Exception:  # the loop never dies of one bad object
                log.exception("scheduling round failed; retrying")
                next_wakeup = time.time() + 1.0

    def _restore(self) -> None:
        """Becoming leader (start, or a follower taking over): what the previous leader held in memory comes back
        from the API: the waiting-time start of gangs that were Scheduling (status.scheduleStartTime), then the
        preemptors' nominations and their terminating victims (core/cluster.py); nominations shown in a pod's
        status that are no longer usable are cleared."""
        for key in list(self.cluster.gangs):
            pg = self.cache.podgroup(key)
            if pg is not None and pg.phase == "Scheduling" and pg.schedule_start is not None:
                self.cluster.restore_wait_start(key, pg.schedule_start)
        stale = self.cluster.restore_nominations(now=time.time())
        self.preemptions.clear_nominations(stale)

    async def _round(self) -> float | None:
        await self.topology.refresh_from_labels()
        next_wakeup: float | None = None
        for _ in range(self.max_cycles_per_round):
            t0 = time.perf_counter()
            plan = schedule(self.cluster, time.time(), self.sched_config)
            self.metrics.cycle_seconds.observe(time.perf_counter() - t0)
            self.cycles += 1
            self.cluster.apply(plan)
            self._carry_out(plan)
            next_wakeup = plan.next_wakeup
            if plan.empty:
                break
            await asyncio.sleep(0)  # let watch events and writers in between cycles
        self._after_round()
        return next_wakeup

    # ------------------------------------------------------------- carrying out
    def _carry_out(self, plan: Plan) -> None:
        self.preemptions.carry_out(plan)  # group preemption: evictions, nominations (runtime/preemption.py)
        if plan.bindings:
            # the UIDs of the pods decided on, now: a pod re-created before its binding is sent is not bound
            self._spawn(self._bind(plan.bindings, {key: self._uid(key) for key, _node in plan.bindings}))
        wall = time.time()
        for gang in plan.satisfied:  # from the gang's first member to its quorum being bound
            state = self.cluster.gangs.get(gang)
            if state is not None and state.member_created != float("inf"):
                self.metrics.gang_wait_seconds.observe(max(0.0, wall - state.member_created))
        self.metrics.preemptions.inc(len(plan.evictions))
        for timeout in plan.timeouts:
            for pod_key in timeout.pods:
                ns, name = _split(pod_key)
                self.writer.patch(pod_path(ns, name), {"metadata": {"annotations": {keys.KOORD_TIMEOUT: "true"}}})
        now = now_iso()
        for cond in plan.conditions:
            ns, name = _split(cond.pod_key)
            body = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": cond.reason, "message": cond.message, "lastTransitionTime": now}]}}
            self.writer.patch(pod_path(ns, name, status=True), body, content_type=STRATEGIC_MERGE_PATCH)
        for event in plan.events:
            self.events.record(self._ref(event.kind, event.namespace, event.name), event.type, event.reason, event.message)
        self.cache.dirty_gangs.update(plan.gang_status)

    def _ref(self, kind: str, namespace: str, name: str) -> ObjectRef:
        key = f"{namespace}/{name}"
        if kind == "Pod":
            pod = self.cluster.pods.get(key)
            return ObjectRef("Pod", "v1", namespace, name, pod.uid if pod else "")
        pg = self.cache.podgroup(key)
        return ObjectRef(kind, PG_API_VERSION, namespace, name, pg.uid if pg else "")

    async def _bind(self, bindings: Sequence[tuple[str, str]], uids: dict[str, str] | None = None) -> None:
        for key, _node in bindings:  # a PodScheduled=False not yet sent would land after the binding's True
            self.writer.discard(pod_path(*_split(key), status=True), content_type=STRATEGIC_MERGE_PATCH)
        uids = uids if uids is not None else {key: self._uid(key) for key, _node in bindings}
        results = await self.binder.bind_all([(*_split(key), node, uids.get(key, "")) for key, node in bindings])
        failed = False
        for result in results:
            self._bound(result)
            failed |= not result.ok and result.outcome != "gated"  # a gated pod waits for its gates to go
        if failed:
            self.wake()

    def _uid(self, pod_key: str) -> str:
        """The pod's UID as the cache knows it: the Binding's precondition."""
        pod = self.cluster.pods.get(pod_key)
        return pod.uid if pod is not None else ""

    def _bound(self, result: BindResult) -> None:
        key = f"{result.namespace}/{result.name}"
        if result.ok:
            self.bound += 1
            self.metrics.bound_pods.inc()
            self.cluster.bind_succeeded(key)
            pod = self.cluster.pods.get(key)
            if pod is not None and pod.gang is not None:
                self.cache.dirty_gangs.add(pod.gang)
            if result.outcome == "bound":  # as kube-scheduler reports it
                self.events.record(self._ref("Pod", result.namespace, result.name), "Normal", "Scheduled", f"Successfully assigned {key} to {result.node}")
            return
        self.metrics.bind_errors.inc()
        self.cluster.bind_failed(key)
        if result.outcome != "gone":
            self.events.record(self._ref("Pod", result.namespace, result.name), "Warning", "FailedBinding", f"binding to {result.node} failed: {result.message}")

    def _after_round(self) -> None:
        for problem in self.cache.problems:
            self.events.record(ObjectRef(problem.kind, problem.api_version, problem.namespace, problem.name, problem.uid), "Warning", problem.reason, problem.message)
        self.cache.problems.clear()
        dirty, self.cache.dirty_gangs = self.cache.dirty_gangs, set()
        self.podgroups.sync_owned(self._spawn, dirty)
        self.podgroups.write_statuses(dirty)
        self.metrics.pending_gangs.set(sum(1 for g in self.cluster.gangs.values() if g.pending))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)
