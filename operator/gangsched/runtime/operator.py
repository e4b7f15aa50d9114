"""One operator replica: the cache, the scheduling loop and the writers, wired together.

Contract:
- `Operator(client=..., config=..., identity=...)`; `await start()` seeds the cache, waits for the pod reflector's
  first list, then starts the loop, the writers and leader election; `await stop()` cancels them, gives the Lease up.
- The loop wakes on cache changes (debounced) and on the Plan's `next_wakeup`; a round runs cycles until a plan is
  empty, carrying each out (bindings in the background, after the pods' DRA claims; coalesced writes; evictions:
  runtime/preemption.py; PodGroups: runtime/podgroups.py). Nothing here builds an API path or body.
- Only the leader decides and writes, fenced (k8s/fence.py); becoming leader restores what the previous leader kept
  in memory; losing it cancels everything in flight and rebuilds as a follower: a plan decided before is never sent.
- Tasks run supervised (runtime/supervisor.py); probes: handlers/probes.py (API problems never fail liveness).
  Nothing raises out of the loop for one bad object: it becomes events. More: docs/modules.md#runtimeoperatorpy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from gangsched.core import Plan, SchedulerState, UnitKey, run_cycle
from gangsched.core.devices import PodFit
from gangsched.k8s.api import KubeApi
from gangsched.k8s.binder import Binder, BindResult
from gangsched.k8s.claims import ClaimWriter
from gangsched.k8s.client import KubeClient
from gangsched.k8s.coalescing import EventRecorder, ObjectRef, PatchWriter
from gangsched.k8s.errors import ApiError
from gangsched.k8s.fence import FencedClient
from gangsched.k8s.forbidden import ForbiddenBook
from gangsched.k8s.lease import Clock, LeaderElector
from gangsched.k8s.retry import NO_RETRY
from gangsched.k8s.writes import Writes
from gangsched.models import keys
from gangsched.models.composite import API_VERSION as COMPOSITE_API_VERSION
from gangsched.models.composite import PLURAL as COMPOSITE_PLURAL
from gangsched.models.config import OperatorConfig
from gangsched.models.grove import API_VERSION as GROVE_API_VERSION
from gangsched.models.grove import PLURAL as GROVE_PLURAL
from gangsched.models.native import API_VERSION as NATIVE_API_VERSION
from gangsched.models.podgroup import API_VERSION as PG_API_VERSION
from gangsched.models.podgroup import SIGS_API_VERSION as SIGS_PODGROUP_API_VERSION
from gangsched.runtime.activity import ActivityLog
from gangsched.runtime.bind_backoff import BindBackoff
from gangsched.runtime.claims import DeviceClaims
from gangsched.runtime.inferred import InferenceSource
from gangsched.runtime.metrics import Metrics, oldest_waiting_seconds
from gangsched.runtime.podgroups import PodGroupReporter
from gangsched.runtime.podgroups import split_key as _split
from gangsched.runtime.preemption import Preemptions
from gangsched.runtime.supervisor import Supervisor, finish_cancelled
from gangsched.runtime.topology import TopologySource
from gangsched.state.cache import ClusterCache
from gangsched.state.dra_feed import flush_devices
from gangsched.state.volcano import API_VERSION as VOLCANO_API_VERSION

log = logging.getLogger(__name__)
BIND_REQUEST = "create pods/binding"


def _failed(result: BindResult) -> bool:
    """A failed binding that backs its unit off: not a success, and neither gone nor waiting for its gates."""
    return not result.ok and result.outcome not in ("gone", "gated")


class Operator:
    def __init__(
        self,
        *,
        client: KubeClient,
        config: OperatorConfig,
        identity: str,
        debounce: float = 0.01,
        max_cycles_per_round: int = 10_000,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.identity = identity
        self.sched_config = config.scheduler_config()
        self.metrics = Metrics()
        self.activity = ActivityLog(log)  # one INFO line per gang scheduled, preempting, timed out (rate-limited)
        self._optional_absent: set[str] = set()  # optional kinds already said to be absent (said once)
        self.metrics.export_requests(client.requests)
        self.supervisor = Supervisor()
        self.status_delay = 0.1  # status-only changes (pods seen bound / Running) wake the loop this much later, merged
        self.progress_deadline = config.progress_deadline_seconds
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
                release_timeout=le.release_timeout_seconds,
                clock=clock,
            )
            if le.enabled
            else None
        )
        if self.elector is not None:
            self.elector.on_stopped_leading.append(self._lost_leadership)
        # every write of the replica goes through the fence: sent only while the Lease is fresh (k8s/fence.py); the
        # runtime's calls are typed (k8s/api.py, k8s/writes.py): it builds no paths or bodies
        self.fence = FencedClient(client, self.may_write)
        self.api = KubeApi(self.fence)
        self.debounce = debounce
        self.max_cycles_per_round = max_cycles_per_round
        self.ready = asyncio.Event()
        self.synced = False  # caches listed (readiness); false while rebuilding after a lost leadership
        self.bound = 0  # pods this replica bound (the tests' and benchmarks' witness)
        self.cycles = 0
        self.rebuilds = 0
        self.last_cycle_at = time.monotonic()  # end of the last completed round (liveness, metrics)
        self._work_since: float | None = None  # the loop was woken while leading and no round has run since
        self._round_started: float | None = None
        self._status_wake: asyncio.TimerHandle | None = None
        self._binds: set[asyncio.Task[Any]] = set()
        self._started = False
        self._stopped = False
        self._rebuilding: asyncio.Task[None] | None = None
        self._dropped_before = 0
        self.forbidden = ForbiddenBook()  # 403 answers by cause: logged once each, listed by /readyz (k8s/forbidden.py)
        # one pod reflector for the replica's life: its sinks go to whatever cache is current
        self.pod_reflector = self.api.pod_reflector(on_list=self._on_pod_list, on_event=self._on_pod_event)
        # the topology ConfigMap, watched by name (not through Kopf, which would watch every ConfigMap)
        self.topology_reflector = self.api.configmap_reflector(
            config.namespace,
            config.topology.config_map_name,
            on_list=self._on_topology_list,
            on_event=self._on_topology_event,
        )
        self._build()
        self.metrics.attach(self)

    def _build(self) -> None:
        """The leader's working state, fresh: a follower's (or a new leader's) view of the cluster."""
        self.cache = ClusterCache(
            scheduler_name=self.config.scheduler_name,
            scheduler_names=self.config.served_names,
            on_change=self.wake,
            on_status=self.wake_for_status,
        )
        self.cache.native.tier_keys = tuple(self.config.topology.node_label_tiers)  # native topology constraints
        self.cache.grove.tier_keys = self.cache.native.tier_keys  # (and Grove's required topology keys)
        self.binder = Binder(self.fence, concurrency=self.config.bind_concurrency)
        self.device_claims = DeviceClaims(ClaimWriter(self.fence), self.cache)  # DRA: before the bindings
        backoff = self.config.bind_backoff
        self.bind_backoff = BindBackoff(initial=backoff.initial_seconds, maximum=backoff.max_seconds)
        # events and status patches give way to bindings (for 2 s at most): a burst binds first, then reports
        self.writer = PatchWriter(self.fence, defer_to=self.binder.idle, forbidden=self.forbidden)
        self.writes = Writes(self.writer)
        self.events = EventRecorder(
            self.fence,
            component=self.config.scheduler_name,
            instance=self.identity,
            defer_to=self.binder.idle,
            forbidden=self.forbidden,
        )
        self.podgroups = PodGroupReporter(
            api=self.api,
            cache=self.cache,
            writes=self.writes,
            create_for_annotation_gangs=self.config.create_pod_groups_for_annotation_gangs,
            events=self.events,
            status_compatibility=self.config.status_compatibility,
        )
        self.topology = TopologySource(
            api=self.api,
            cache=self.cache,
            events=self.events,
            namespace=self.config.namespace,
            config=self.config.topology,
        )
        self.preemptions = Preemptions(
            api=self.api,
            cache=self.cache,
            writes=self.writes,
            events=self.events,
            wake=self.wake,
            pdb=self.config.preemption.pdb,
        )
        self.inference = (  # gangs inferred from workloads (runtime/inferred.py): config inferGangs
            InferenceSource(api=self.api, cache=self.cache, config=self.config.infer_gangs)
            if self.config.infer_gangs.enabled
            else None
        )
        self._wake = asyncio.Event()
        self._was_leader = False

    def _on_pod_list(self, items: list[dict[str, Any]]) -> None:
        self.cache.on_pod_list(items)

    def _on_pod_event(self, kind: str, obj: dict[str, Any]) -> None:
        self.cache.on_pod_event(kind, obj)

    def _on_topology_list(self, items: list[dict[str, Any]]) -> None:
        self.topology.on_list(items)

    def _on_topology_event(self, kind: str, obj: dict[str, Any]) -> None:
        self.topology.on_configmap(kind, obj)

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        await self._start_components()
        if self.elector is not None:
            self.supervisor.start("lease", self.elector.run)
        self.ready.set()
        log.info(
            "%s ready: caches synced (%d nodes, %d pods, %d gangs); %s",
            self.identity,
            len(self.cluster.nodes),
            len(self.cluster.pods),
            len(self.cluster.gangs),
            "waiting for the lease to schedule" if self.elector is not None else "scheduling (no leader election)",
        )

    async def _start_components(self) -> None:
        await self._seed()
        if self.inference is not None:  # the opted-in namespaces are known before the pods are listed
            await self.inference.seed()
            if self.inference.reflector is not None:
                self.supervisor.start("namespaces", self.inference.reflector.run)
        self.pod_reflector.synced.clear()  # a new run lists first
        self.supervisor.start("pods", self.pod_reflector.run)
        self.supervisor.start("topology", self.topology_reflector.run)
        await self.pod_reflector.synced.wait()
        self.supervisor.start("writer", self.writer.run)
        self.supervisor.start("events", self.events.run)
        self.supervisor.start("loop", self._loop)
        self.synced = True
        self.wake()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        rebuilding = [self._rebuilding] if self._rebuilding is not None else []
        evictions = self.preemptions.cancel()
        for task in [*rebuilding, *self._binds]:
            task.cancel()
        await self.supervisor.stop()
        await finish_cancelled([*rebuilding, *evictions, *self._binds])
        if self.elector is not None:
            with contextlib.suppress(Exception):
                await self.elector.release()

    def may_write(self) -> bool:
        """The fence (k8s/fence.py): this replica leads on a Lease renewed within renewDeadline."""
        return self.elector is None or self.elector.is_leader

    def _lost_leadership(self) -> None:
        """Called synchronously by the elector the moment leadership ends: cancel all queued and in-flight work
        before anything else can run, then rebuild as a follower (kube-scheduler exits here instead:
        cmd/kube-scheduler/app/server.go, OnStoppedLeading)."""
        if self._stopped:
            return
        cancelled = self.supervisor.stop_now(["pods", "topology", "namespaces", "writer", "events", "loop"])
        cancelled += self.preemptions.cancel()
        for task in list(self._binds):
            task.cancel()
            cancelled.append(task)
        if self._status_wake is not None:
            self._status_wake.cancel()
            self._status_wake = None
        self.synced = False
        self._work_since = self._round_started = None
        if self._rebuilding is not None:
            self._rebuilding.cancel()
        log.warning("%s stopped leading: %d tasks cancelled; rebuilding as a follower", self.identity, len(cancelled))
        self._rebuilding = asyncio.get_running_loop().create_task(self._rebuild(cancelled), name="gangsched-rebuild")

    async def _rebuild(self, cancelled: list[asyncio.Task[Any]]) -> None:
        await finish_cancelled(cancelled)
        self._dropped_before += self.events.dropped
        backoff = 0.1
        while True:
            self._build()
            try:
                await self._start_components()
                break
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("rebuilding as a follower failed; retrying in %.1fs", backoff)
                await self.supervisor.stop(["pods", "topology", "namespaces", "writer", "events", "loop"])
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
        self.rebuilds += 1
        log.warning("%s rebuilt its state as a follower (rebuild %d)", self.identity, self.rebuilds)

    async def _seed(self) -> None:
        """Lists first, so the first decision is taken on a complete view (restart safety). PodDisruptionBudgets,
        PersistentVolumes and their claims, and namespaces too: Kopf's watches do not replay them when the state is
        rebuilt."""
        for node in await self.api.list_nodes():
            self.cache.on_node(None, node)
        try:
            podgroups = await self.api.list_podgroups()
        except ApiError as exc:
            log.error("cannot list PodGroups (is the CRD installed? kubectl apply -f crds/): %s", exc)
            podgroups = []
        for pg in podgroups:
            self.cache.on_podgroup(None, pg)
        sigs = self.api.list_podgroups(SIGS_PODGROUP_API_VERSION)
        for pg in await self._optional_list(f"PodGroup {SIGS_PODGROUP_API_VERSION}", sigs):
            self.cache.on_podgroup(None, pg)  # Koordinator's PodGroups (crds/compat/), when their CRD is installed
        volcano = self.api.list_podgroups(VOLCANO_API_VERSION)
        for pg in await self._optional_list(f"PodGroup {VOLCANO_API_VERSION}", volcano):
            self.cache.on_volcano_podgroup(None, pg)  # read only: the count of Volcano-style gangs
        native = self.api.list_podgroups(NATIVE_API_VERSION)
        for pg in await self._optional_list(f"PodGroup {NATIVE_API_VERSION}", native):
            self.cache.on_native_podgroup(None, pg)  # Kubernetes 1.37's own PodGroups, when served
        composites = self.api.list_kind(COMPOSITE_API_VERSION, COMPOSITE_PLURAL, "CompositePodGroup")
        for cpg in await self._optional_list(f"CompositePodGroup {COMPOSITE_API_VERSION}", composites):
            self.cache.on_composite_podgroup(None, cpg)  # their trees (scheduling.k8s.io/v1alpha3), when served
        podgangs = self.api.list_kind(GROVE_API_VERSION, GROVE_PLURAL, "PodGang")
        for gang in await self._optional_list(f"PodGang {GROVE_API_VERSION}", podgangs):
            self.cache.on_podgang(None, gang)  # Grove's PodGangs, when their CRD is installed
        dra = (
            ("deviceclasses", "DeviceClass", self.cache.on_device_class),
            ("resourceslices", "ResourceSlice", self.cache.on_resource_slice),
            ("resourceclaims", "ResourceClaim", self.cache.on_resource_claim),
        )
        for plural, kind, feed in dra:  # DRA (resource.k8s.io/v1, GA since 1.34): read when served
            listing = self.api.list_kind("resource.k8s.io/v1", plural, kind)
            for obj in await self._optional_list(f"{kind} resource.k8s.io/v1", listing):
                feed(None, obj)
        seeds = (
            ("PodDisruptionBudgets", self.api.list_pdbs, self.cache.on_pdb),
            ("PersistentVolumes", self.api.list_pvs, self.cache.on_pv),
            ("PersistentVolumeClaims", self.api.list_pvcs, self.cache.on_pvc),
            ("Namespaces", self.api.list_namespaces, self.cache.on_namespace),  # pod affinity's namespaceSelector
        )
        for what, lister, feed in seeds:
            try:
                objs = await lister()
            except ApiError as exc:
                log.warning("cannot list %s: %s", what, exc)
                continue
            for obj in objs:
                feed(None, obj)
        await self.topology.seed()

    async def _optional_list(
        self, kind: str, listing: Coroutine[Any, Any, list[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """The items of a list of a kind whose CRD may not be installed (404: none, said once per process at INFO,
        naming the kind; another failure is a WARNING each time)."""
        try:
            return await listing
        except ApiError as exc:
            if exc.status != 404:
                log.warning("optional kind %s not listed: %s", kind, exc)
            elif kind not in self._optional_absent:
                self._optional_absent.add(kind)
                log.info("optional kind %s is not installed (no CRD): its objects are not read", kind)
            return []

    @property
    def is_leader(self) -> bool:
        """Whether this replica leads, without side effects: safe from any thread (tests, the metrics server).
        The runtime itself checks `may_write()`, which also ends a leadership whose renewal is too old."""
        return self.holds_lease()

    @property
    def dropped_events(self) -> int:
        """Kubernetes events dropped (recorder backlog full) by every recorder this replica had: a plain read."""
        return self._dropped_before + self.events.dropped

    def holds_lease(self) -> bool:
        """Leadership without side effects (safe from the metrics thread); what /readyz and gangsched_leader say."""
        return self.elector is None or self.elector.holds_lease()

    def health(self) -> dict[str, Any]:
        pending = sum(1 for g in self.cluster.gangs.values() if g.pending)
        return {
            "ready": self.ready.is_set() and self.synced,
            "leader": self.holds_lease(),
            "pendingGangs": pending,
            "cycles": self.cycles,
        }

    def liveness_problems(self, now: float | None = None) -> list[str]:
        """Why /livez should fail: a vital task down, or the loop not completing a round it owes for longer than
        progressDeadlineSeconds (a follower owes none; a gang that never fits completes rounds)."""
        now = time.monotonic() if now is None else now
        problems = [f"task {name} is down" for name in self.supervisor.down()]
        if self._round_started is not None and now - self._round_started > self.progress_deadline:
            problems.append(f"a scheduling round has been running for {now - self._round_started:.0f}s")
        if self._work_since is not None and self.holds_lease() and now - self._work_since > self.progress_deadline:
            problems.append(f"no scheduling round completed for {now - self._work_since:.0f}s while there is work")
        return problems

    def api_problems(self, now: float | None = None) -> list[str]:
        """API-side problems (config readiness): the pod cache stale (no pod watch open for longer than
        staleCacheSeconds), bindings failing (none succeeding) for longer than bindsFailingSeconds, forbidden
        answers (k8s/forbidden.py). /readyz reports them; /livez never does (a restart does not cure the API).
        Plain reads: safe from the metrics thread."""
        now = time.monotonic() if now is None else now
        bounds = self.config.readiness
        problems = [  # the most specific first: a forbidden request names its fix
            f"forbidden: {cause} (is the ClusterRoleBinding gangsched in place? kubectl apply -f manifests/rbac.yaml)"
            for cause in self.forbidden.causes(now)
        ]
        stale = self.cache_stale_seconds(now)
        if stale > bounds.stale_cache_seconds:
            problems.append(
                f"the pod cache is stale: no pod watch open for {stale:.0f}s (is the API server reachable?)"
            )
        failing = self.binds_failing_seconds(now)
        if failing > bounds.binds_failing_seconds:
            problems.append(f"bindings have been failing for {failing:.0f}s, none succeeding")
        return problems

    def cache_stale_seconds(self, now: float | None = None) -> float:
        """Seconds since a pod watch was last open (0 while one is, or before the first list)."""
        down = self.pod_reflector.down_since
        if down is None or not self.synced:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - down)

    def binds_failing_seconds(self, now: float | None = None) -> float:
        """Seconds since bindings began failing with none succeeding since (0 while they work)."""
        since = self.bind_backoff.failing_since
        return 0.0 if since is None else max(0.0, (time.monotonic() if now is None else now) - since)

    def readiness(self) -> dict[str, Any]:
        """/readyz's body: ready once the caches are synced, unless leader election has a problem only the user can
        fix (missing namespace, forbidden Lease) or the API has one (`api_problems`): `problem` names the first,
        `problems` lists them all."""
        problems = [self.elector.problem] if self.elector is not None and self.elector.problem else []
        problems += self.api_problems()
        return {
            "ready": self.ready.is_set() and self.synced and not problems,
            "problem": problems[0] if problems else None,
            "problems": problems,
            "leader": self.holds_lease(),
            "identity": self.identity,
            "term": self.elector.term if self.elector is not None else 0,
            "holder": self.elector.observed_holder if self.elector is not None else self.identity,
            "cacheStaleSeconds": round(self.cache_stale_seconds(), 1),
            "bindsFailingSeconds": round(self.binds_failing_seconds(), 1),
            "forbidden": self.forbidden.causes(),
        }

    @property
    def cluster(self) -> SchedulerState:
        return self.cache.cluster

    def wake(self) -> None:
        if self._work_since is None and (self.elector is None or self.elector.leading.is_set()):
            self._work_since = time.monotonic()
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
            if self.elector is not None and not self.elector.is_leader:
                # a follower waits for leadership itself (not for a "change" that a late renewal never makes)
                self._was_leader = False
                self._work_since = None
                await self.elector.leading.wait()
                self.wake()
                continue
            timeout = None if next_wakeup is None else max(0.0, next_wakeup - time.time())
            with contextlib.suppress(TimeoutError):  # asyncio.timeout: wait_for may swallow a cancel (Python 3.11)
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            self._wake.clear()
            if self.debounce:
                await asyncio.sleep(self.debounce)  # let a burst of watch events land before deciding
            if not self.may_write():
                continue
            if not self._was_leader:  # a new leader rewrites every gang's status from its own view
                self._was_leader = True
                self._restore()
                self.cache.dirty_gangs.update(self.cluster.gangs)
            self._round_started = time.monotonic()
            self._work_since = None
            try:
                next_wakeup = await self._round()
            except Exception:  # the loop never dies of one bad object
                log.exception("scheduling round failed; retrying")
                next_wakeup = time.time() + 1.0
            self._round_started = None
            self.last_cycle_at = time.monotonic()

    def _restore(self) -> None:
        """Becoming leader (start, or a follower taking over): what the previous leader held in memory comes back
        from the API: the waiting-time start of gangs that were Scheduling (status.scheduleStartTime), then the
        preemptors' nominations and their terminating victims (core/memory/restore.py); nominations shown in a pod's
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
            flush_devices(self.cache)  # DRA: free device counts and claims as the cycle sees them (state/dra_feed.py)
            plan = run_cycle(self.cluster, time.time(), self.sched_config)  # schedule, then record the plan
            self.metrics.cycle_seconds.observe(time.perf_counter() - t0)
            self.cycles += 1
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
        self.activity.plan(plan)
        if plan.bindings:
            self.device_claims.assume(plan.device_fits)  # (the next cycle must not take the same devices)
            # the UIDs of the pods decided on, now: a pod re-created before its binding is sent is not bound
            uids = {key: self._uid(key) for key, _node in plan.bindings}
            self._spawn(self._bind_supervised(plan.bindings, uids, dict(plan.device_fits)))
        wall = time.time()
        for gang in plan.satisfied:  # from the gang's first member to its quorum being bound
            state = self.cluster.gangs.get(gang)
            if state is not None and state.member_created != float("inf"):
                self.metrics.gang_wait_seconds.observe(max(0.0, wall - state.member_created))
        self.metrics.preemptions.inc(len(plan.evictions))
        self.metrics.record_deadlocks(plan.deadlocks)
        for timeout in plan.timeouts:
            for pod_key in timeout.pods:
                self.writes.annotate_pod(*_split(pod_key), {keys.KOORD_TIMEOUT: "true"})
        for cond in plan.conditions:
            self.writes.set_pod_condition(
                *_split(cond.pod_key), type_="PodScheduled", status="False", reason=cond.reason, message=cond.message
            )
        for event in plan.events:
            self.events.record(
                self._ref(event.kind, event.namespace, event.name), event.type, event.reason, event.message
            )
        for many in plan.pod_events:  # (one message for every member of a failed attempt)
            for pod_key in many.pod_keys:
                self.events.record(self._ref("Pod", *_split(pod_key)), many.type, many.reason, many.message)
        self.cache.dirty_gangs.update(plan.gang_status)
        self.cache.dirty_gangs.update(plan.health)  # the Degraded condition (core/gang/health.py)

    def _ref(self, kind: str, namespace: str, name: str) -> ObjectRef:
        key = f"{namespace}/{name}"
        if kind == "Pod":
            pod = self.cluster.pods.get(key)
            return ObjectRef("Pod", "v1", namespace, name, pod.uid if pod else "")
        pg = self.cache.podgroup(key)
        return ObjectRef(kind, PG_API_VERSION, namespace, name, pg.uid if pg else "")

    async def _bind(
        self,
        bindings: Sequence[tuple[str, str]],
        uids: dict[str, str] | None = None,
        fits: Mapping[str, PodFit] | None = None,
    ) -> None:
        """Bind, then back off every unit whose attempt failed (runtime/bind_backoff.py): a unit that failed before
        gets one POST per pod (NO_RETRY), a fresh one the binder's own retries of transient errors. The pods' DRA
        claims are written first (runtime/claims.py); a pod whose claims could not be written is not bound."""
        for key, _node in bindings:  # a PodScheduled=False not yet sent would land after the binding's True
            self.writes.discard_pod_conditions(*_split(key))
        uids = uids if uids is not None else {key: self._uid(key) for key, _node in bindings}
        units = {key: self._unit_of(key) for key, _node in bindings}
        refused: dict[str, str] = await self.device_claims.reserve(bindings, fits) if fits else {}
        if refused:
            for key, node in bindings:
                if key in refused:
                    log.warning("pod %s not bound to %s: its ResourceClaims: %s", key, node, refused[key])
            bindings = [(key, node) for key, node in bindings if key not in refused]
        fresh: list[tuple[str, ...]] = []
        again: list[tuple[str, ...]] = []
        for key, node in bindings:
            (fresh if self.bind_backoff.retry_in_binder(units[key]) else again).append(
                (*_split(key), node, uids.get(key, ""))
            )
        first, retried = await asyncio.gather(self.binder.bind_all(fresh), self.binder.bind_all(again, retry=NO_RETRY))
        results = [*first, *retried]
        if fits:
            failed = [f"{r.namespace}/{r.name}" for r in results if not r.ok]
            await self.device_claims.release(failed, fits)
        results += [BindResult(*_split(key), "", "failed", f"ResourceClaims: {why}") for key, why in refused.items()]
        retry_at = self._back_off(results, units)
        for result in results:
            self._bound(result, retry_at.get(units[f"{result.namespace}/{result.name}"]))
        if any(not r.ok and r.outcome != "gated" for r in results):  # (a gated pod waits for its gates to go)
            self.wake()

    def _back_off(self, results: Sequence[BindResult], units: dict[str, UnitKey]) -> dict[UnitKey, float]:
        """The units whose binding attempt failed -> when they may be tried again (wall clock); the others reset."""
        failed = {units[f"{r.namespace}/{r.name}"] for r in results if _failed(r)}
        for unit in {units[f"{r.namespace}/{r.name}"] for r in results if r.ok} - failed:
            self.bind_backoff.succeeded(unit)
        now, wall = time.monotonic(), time.time()
        return {unit: wall + self.bind_backoff.failed(unit, now) for unit in failed}

    def _unit_of(self, pod_key: str) -> UnitKey:
        pod = self.cluster.pods.get(pod_key)
        return UnitKey.gang(pod.gang) if pod is not None and pod.gang is not None else UnitKey.pod(pod_key)

    def _uid(self, pod_key: str) -> str:
        """The pod's UID as the cache knows it: the Binding's precondition."""
        pod = self.cluster.pods.get(pod_key)
        return pod.uid if pod is not None else ""

    async def _bind_supervised(
        self, bindings: Sequence[tuple[str, str]], uids: dict[str, str], fits: Mapping[str, PodFit] | None = None
    ) -> None:
        """`_bind`, and if it fails unexpectedly: logged with the pods concerned, and every binding it left in flight
        goes back to the core as failed (requeued), never "binding in flight" forever."""
        try:
            await self._bind(bindings, uids, fits)
        except Exception:
            log.exception(
                "binding %d pods failed unexpectedly (%s...); requeueing them",
                len(bindings),
                ", ".join(key for key, _ in bindings[:5]),
            )
            for key, _node in bindings:
                reservation = self.cluster.reservation_of(key)
                if reservation is not None and reservation[1]:
                    self.cluster.bind_failed(key)
            self.wake()

    def _bound(self, result: BindResult, retry_at: float | None = None) -> None:
        key = f"{result.namespace}/{result.name}"
        if result.ok:
            self.bound += 1
            self.metrics.bound_pods.inc()
            self.forbidden.clear(BIND_REQUEST)
            self.cluster.bind_succeeded(key)
            pod = self.cluster.pods.get(key)
            if pod is not None and pod.gang is not None:
                self.cache.dirty_gangs.add(pod.gang)
                # a status round: the pod's watch event may have come first, or may now change nothing the cache
                # wakes for (the record already shows the node), and the PodGroup would stay Scheduling
                self.wake_for_status()
            if result.outcome == "bound":  # as kube-scheduler reports it
                self.events.record(
                    self._ref("Pod", result.namespace, result.name),
                    "Normal",
                    "Scheduled",
                    f"Successfully assigned {key} to {result.node}",
                )
            return
        self.metrics.bind_errors.inc()
        self.cluster.bind_failed(key, now=time.time(), retry_at=retry_at)
        if result.status == 403:
            self._forbidden(BIND_REQUEST, result)
        if (
            result.outcome != "gone"
        ):  # one event per pod, its count raised (k8s/coalescing.py): the message names no node
            self.events.record(
                self._ref("Pod", result.namespace, result.name),
                "Warning",
                "FailedBinding",
                f"Binding rejected: {result.message}",
            )

    def _forbidden(self, request: str, result: BindResult) -> None:
        """A 403: logged once per cause (k8s/forbidden.py), listed by /readyz and counted by the metrics."""
        if self.forbidden.note(request, ApiError(403, "Forbidden", result.message)):
            log.error(
                "%s is forbidden: %s; is the ClusterRoleBinding gangsched in place (kubectl apply -f "
                "manifests/rbac.yaml)? Further 403s of this cause are not logged",
                request,
                result.message,
            )

    def _after_round(self) -> None:
        dirty, self.cache.dirty_gangs = self.cache.dirty_gangs, set()
        if self.inference is not None:
            self.inference.read_wanted(self._spawn)
        self.podgroups.sync_owned(self._spawn, dirty)
        self.podgroups.write_statuses(dirty)  # (may report problems: the events below include them)
        for problem in self.cache.problems:
            self.events.record(
                ObjectRef(problem.kind, problem.api_version, problem.namespace, problem.name, problem.uid),
                problem.type,
                problem.reason,
                problem.message,
            )
        self.cache.problems.clear()
        self.activity.flush()
        self.metrics.pending_gangs.set(sum(1 for g in self.cluster.gangs.values() if g.pending))
        self.metrics.oldest_waiting_gang_seconds.set(oldest_waiting_seconds(self.cluster.gangs.values(), time.time()))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if not self.may_write():  # decided by a leader that no longer is one: never sent
            coro.close()
            return
        task = asyncio.create_task(coro)
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)
