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
  go through the coalescing PatchWriter; events through the EventRecorder. Annotation-only gangs get a
  PodGroup created for them, owned by their pods (garbage-collected with the last one).
- Nothing here raises out of the loop for one bad object: bad input becomes events (see state/cache.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Sequence
from typing import Any

from gangsched.core.errors import InvalidField
from gangsched.core.gangspec import GangSpec
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
from gangsched.models.topology import parse_topology, render_topology, tree_from_node_labels
from gangsched.runtime.metrics import Metrics
from gangsched.runtime.preemption import Preemptions
from gangsched.state.cache import ClusterCache
from gangsched.state.status import GangStatusBook

log = logging.getLogger(__name__)

MANAGED_BY = "app.kubernetes.io/managed-by"


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def podgroup_path(namespace: str, name: str | None = None, *, status: bool = False) -> str:
    return resource_path(
        group=PG_GROUP, version=PG_VERSION, plural=PG_PLURAL, namespace=namespace, name=name, subresource="status" if status else None
    )


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
        self.cache = ClusterCache(scheduler_name=config.scheduler_name, on_change=self.wake, on_status=self.wake_for_status)
        self.status_delay = 0.1  # status-only changes (pods seen bound / Running) wake the loop this much later, merged
        self._status_wake: asyncio.TimerHandle | None = None
        self.binder = Binder(client, concurrency=config.bind_concurrency)
        # events and status patches give way to bindings (for 2 s at most): a burst binds first, then reports
        self.writer = PatchWriter(client, defer_to=self.binder.idle)
        self.events = EventRecorder(client, component=config.scheduler_name, instance=identity, defer_to=self.binder.idle)
        self.statuses = GangStatusBook()
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
        self._creating: set[str] = set()
        self._topology_text: str | None = None  # last topology written from node labels
        self._nodes_rendered = -1
        self.pod_reflector = Reflector(client, "/api/v1/pods", on_list=self.cache.on_pod_list, on_event=self.cache.on_pod_event)

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        if self._tasks:
            return
        await self._seed()
        self._tasks.append(asyncio.create_task(self.pod_reflector.run(), name="gangsched-pods"))
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
        topo = self.config.topology
        try:
            cm = await self.client.get(resource_path(group="", version="v1", plural="configmaps", namespace=self.config.namespace, name=topo.config_map_name))
            self.on_topology_configmap(None, cm)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("reading the topology ConfigMap: %s", exc)

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

    # ----------------------------------------------------------------- topology
    def is_topology_configmap(self, *, namespace: str | None, name: str | None) -> bool:
        return namespace == self.config.namespace and name == self.config.topology.config_map_name

    def on_topology_configmap(self, kind: str | None, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            if not self.config.topology.node_label_tiers:
                self.cache.set_topology(None)
            return
        text = (obj.get("data") or {}).get(self.config.topology.key)
        meta = obj.get("metadata") or {}
        if text is None:
            self._warn_configmap(meta, f"{self.config.topology.key}: missing: the ConfigMap must hold the topology under this key")
            return
        try:
            tree = parse_topology(text, field=self.config.topology.key)
        except InvalidField as exc:
            self._warn_configmap(meta, f"{exc}; the last good topology stays in force")
            return
        self.cache.set_topology(tree)

    def _warn_configmap(self, meta: dict[str, Any], message: str) -> None:
        log.warning("topology ConfigMap %s/%s rejected: %s", meta.get("namespace"), meta.get("name"), message)
        self.events.record(
            ObjectRef("ConfigMap", "v1", meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")), "Warning", "InvalidTopology", message
        )

    async def _write_topology_from_labels(self) -> None:
        tiers = self.config.topology.node_label_tiers
        if not tiers or self._nodes_rendered == self.cache.nodes_version:
            return
        self._nodes_rendered = self.cache.nodes_version
        try:
            tree = tree_from_node_labels(self.cache.node_labels(), tiers)
        except InvalidField as exc:
            log.warning("cannot derive the topology from node labels %s: %s", tiers, exc)
            return
        text = render_topology(tree)
        if text == self._topology_text:
            return
        self._topology_text = text
        self.cache.set_topology(tree)
        topo = self.config.topology
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": topo.config_map_name, "namespace": self.config.namespace, "labels": {MANAGED_BY: "gangsched"}},
            "data": {topo.key: text},
        }
        path = resource_path(group="", version="v1", plural="configmaps", namespace=self.config.namespace)
        try:
            await self.client.create(path, body)
        except ApiError as exc:
            if exc.status != 409:
                log.warning("writing the topology ConfigMap: %s", exc)
                return
            await self.client.patch(f"{path}/{topo.config_map_name}", {"data": body["data"]})

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
                self.cache.dirty_gangs.update(self.cluster.gangs)
            try:
                next_wakeup = await self._round()
            except Exception:  # the loop never dies of one bad object
                log.exception("scheduling round failed; retrying")
                next_wakeup = time.time() + 1.0

    async def _round(self) -> float | None:
        await self._write_topology_from_labels()
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
            task = asyncio.create_task(self._bind(plan.bindings))
            self._binds.add(task)
            task.add_done_callback(self._binds.discard)
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

    async def _bind(self, bindings: Sequence[tuple[str, str]]) -> None:
        for key, _node in bindings:  # a PodScheduled=False not yet sent would land after the binding's True
            self.writer.discard(pod_path(*_split(key), status=True), content_type=STRATEGIC_MERGE_PATCH)
        results = await self.binder.bind_all([(*_split(key), node) for key, node in bindings])
        failed = False
        for result in results:
            self._bound(result)
            failed |= not result.ok
        if failed:
            self.wake()

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
        if self.config.create_pod_groups_for_annotation_gangs:
            for key, spec in list(self.cache.podgroups_to_create.items()):
                if key not in self._creating:
                    self._creating.add(key)
                    task = asyncio.create_task(self._create_podgroup(key, spec))
                    self._binds.add(task)
                    task.add_done_callback(self._binds.discard)
        self._write_statuses()
        self.metrics.pending_gangs.set(sum(1 for g in self.cluster.gangs.values() if g.pending))

    def _write_statuses(self) -> None:
        dirty, self.cache.dirty_gangs = self.cache.dirty_gangs, set()
        now = now_iso()
        in_flight: dict[str, int] = {}
        if dirty:
            for pod_key, _node in self.cluster.bindings_in_flight():
                pod = self.cluster.pods.get(pod_key)
                if pod is not None and pod.gang in dirty and not pod.node_name:
                    in_flight[pod.gang] = in_flight.get(pod.gang, 0) + 1
        for key in dirty:
            pg = self.cache.podgroup(key)
            if pg is None:
                continue  # no PodGroup object (yet): nothing to write to
            gs = self.cluster.gangs.get(key)
            spec: GangSpec | None = gs.spec if gs is not None else None
            min_member = spec.min_member if spec is not None else (pg.spec.min_member if pg.spec else 1)
            members = self.cache.members(key)
            body = self.statuses.status_of(
                key,
                min_member=min_member,
                members=members,
                generation=pg.generation,
                decided=gs.last_status if gs is not None else None,
                satisfied=bool(gs and gs.satisfied),
                timed_out=bool(gs and gs.timed_out),
                invalid=pg.error,
                in_flight=in_flight.get(key, 0),
                now_iso=now,
            )
            if body is not None:
                ns, name = _split(key)
                self.writer.patch(podgroup_path(ns, name, status=True), {"status": body})

    async def _create_podgroup(self, key: str, spec: GangSpec) -> None:
        ns, name = _split(key)
        owners = [
            {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid}
            for pod in self.cache.members(key)
            if pod.uid
        ]
        body: dict[str, Any] = {
            "apiVersion": PG_API_VERSION,
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {MANAGED_BY: "gangsched"},
                "annotations": {"gangsched.io/created-for": "annotation-only gang"},
                "ownerReferences": owners,
            },
            "spec": {"minMember": spec.min_member},
        }
        if spec.total_member is not None:
            body["spec"]["totalMember"] = spec.total_member
        if spec.mode:
            body["spec"]["mode"] = str(spec.mode)
        if spec.wait_seconds:
            body["spec"]["scheduleTimeoutSeconds"] = int(spec.wait_seconds)
        if spec.group:
            body["spec"]["gangGroup"] = list(spec.group)
        if spec.network_topology is not None:
            nt = spec.network_topology
            body["spec"]["networkTopology"] = {"mode": str(nt.mode), "groupSize": nt.group_size}
            if nt.highest_tier_allowed is not None:
                body["spec"]["networkTopology"]["highestTierAllowed"] = nt.highest_tier_allowed
        try:
            await self.client.create(podgroup_path(ns), body)
        except ApiError as exc:
            if exc.status != 409:
                log.warning("creating PodGroup %s for an annotation-only gang: %s", key, exc)
                self._creating.discard(key)  # try again next round
