"""Carrying out the preemption part of a Plan: evictions, nominations, and the PodDisruptionBudget feed.

Contract:
- `Preemptions(api=..., cache=..., writes=..., events=..., wake=...)`; `carry_out(plan)` never blocks. Evictions go
  through the Eviction API in the background; under `pdb="respect"` a victim gang's PDB-selected members go first,
  one at a time, and a refusal spares the rest of the gang (never left below its quorum). 429 and transient errors
  are retried (backoff, Retry-After) while the core waits for the victim, within `attempts` and `retry_window`;
  then `eviction_failed`, Warning `EvictionRefused`, a cool-down. `pdb="prefer"` deletes such a victim instead.
- Nominations are set and cleared through the coalesced writes (also cleared on a binding); a native PodGroup whose
  members are evicted for another unit gets DisruptionTarget True / PreemptionByScheduler.
- `clear_nominations`; `drain()`, `stop()`; PDBs go straight to the cache, no API call.
More: docs/modules.md#runtimepreemptionpy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Mapping
from typing import Any

from gangsched.core import Plan, PodRecord
from gangsched.k8s.api import KubeApi
from gangsched.k8s.coalescing import EventRecorder, ObjectRef
from gangsched.k8s.errors import ApiError
from gangsched.k8s.retry import NO_RETRY
from gangsched.k8s.writes import Writes
from gangsched.models.native import API_VERSION as NATIVE_API_VERSION
from gangsched.models.native_status import disruption_condition
from gangsched.models.timestamps import now_time
from gangsched.state.cache import ClusterCache

log = logging.getLogger(__name__)


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def _gang_of(pods: Mapping[str, PodRecord], key: str) -> str | None:
    pod = pods.get(key)
    return pod.gang if pod is not None else None


class Preemptions:
    def __init__(
        self,
        *,
        api: KubeApi,
        cache: ClusterCache,
        writes: Writes,
        events: EventRecorder,
        wake: Callable[[], None],
        attempts: int = 8,
        initial_backoff: float = 0.5,
        max_backoff: float = 8.0,
        retry_window: float = 30.0,
        cooldown_base: float = 5.0,
        cooldown_max: float = 120.0,
        jitter: float = 0.2,
        rng: random.Random | None = None,
        pdb: str = "respect",
    ) -> None:
        self._api = api
        self._cache = cache
        self._writes = writes
        self._events = events
        self._wake = wake
        self.attempts = attempts  # eviction requests per victim and task, at most
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.retry_window = retry_window  # seconds a task keeps retrying
        self.cooldown_base = cooldown_base  # after a refusal, the pod is not asked again before this (doubling)
        self.cooldown_max = cooldown_max
        self.jitter = jitter  # +-fraction of every delay
        self._rng = rng or random.Random()
        self._cooldown: dict[str, tuple[int, float]] = {}  # pod -> (refusals, loop time before which it is not asked)
        self.requests = 0  # eviction requests sent (the tests' witness against storms)
        self.throttled = 0  # 429 answers
        self.already_gone = 0  # 404 answers (the pod went meanwhile)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.evicted = 0  # evictions the API accepted (the tests' witness)
        self.refused = 0
        self.pdb = pdb  # "respect" | "prefer" (see the module docstring)
        self.deleted = 0  # victims deleted past their PodDisruptionBudget (pdb: prefer)
        self._nominated: set[str] = set()  # pods whose nominatedNodeName this replica set and has not cleared

    def carry_out(self, plan: Plan) -> None:
        if len(self._nominated) > 4096:  # forget pods deleted while nominated
            self._nominated &= self._cache.cluster.pods.keys()
        clears = list(plan.nomination_clears)
        pods = self._cache.cluster.pods
        for key, _node in plan.bindings:  # (the status may come from before a restart)
            pod = pods.get(key)
            if key in self._nominated or (pod is not None and pod.nominated_node):
                clears.append(key)
        for key in clears:
            self._nominated.discard(key)
            self._writes.nominate(*_split(key), None)
        for key, node in plan.nominations:
            self._nominated.add(key)
            self._writes.nominate(*_split(key), node)
        own = {v for preemptor, victims in plan.preemptions.items() for v in victims if _gang_of(pods, v) == preemptor}
        if plan.preemptions and self._cache.native.objects:
            self._disruption_targets(plan.preemptions, own)
        for first, rest in self._order(plan.evictions, own):
            work = self._evict_in_order(first, rest) if first else self._evict(rest[0])
            task = asyncio.create_task(work, name=f"gangsched-evict-{(first or rest)[0]}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _disruption_targets(self, preemptions: Mapping[str, tuple[str, ...]], own: set[str]) -> None:
        """DisruptionTarget on the native PodGroups whose members are preempted (see the module docstring)."""
        native = self._cache.native
        pods = self._cache.cluster.pods
        now = now_time()
        for preemptor, victims in preemptions.items():
            what = "pod group" if preemptor in self._cache.cluster.gangs else "pod"
            message = f"{self._cache.scheduler_name}: preempting to accommodate a higher priority {what}"
            for gang in sorted({g for v in victims if v not in own and (g := _gang_of(pods, v)) is not None}):
                obj = native.objects.get(gang)
                if obj is None:
                    continue
                conditions = disruption_condition(
                    obj.conditions, message=message, generation=obj.generation, now_iso=now
                )
                if conditions is not None:
                    native.wrote(gang, conditions)
                    namespace, name = _split(gang)
                    self._writes.set_podgroup_status(
                        namespace, name, {"conditions": conditions}, api_version=NATIVE_API_VERSION
                    )

    def _order(self, victims: list[str], own: set[str]) -> list[tuple[list[str], list[str]]]:
        """(evicted first, one by one; then the rest at once) per task: under `respect`, a victim gang's members some
        PDB selects go first; every other victim is a task of its own, and so are the members a gang evicts of
        itself (core/gang/partial_gangs.py, core/gang/health.py: no other gang waits for them)."""
        pods = self._cache.cluster.pods
        by_gang: dict[str, list[str]] = {}
        out: list[tuple[list[str], list[str]]] = []
        for key in victims:
            pod = pods.get(key)
            if self.pdb == "respect" and pod is not None and pod.gang is not None and key not in own:
                by_gang.setdefault(pod.gang, []).append(key)
            else:
                out.append(([], [key]))
        budgets = self._cache.budgets
        for members in by_gang.values():
            first = [key for key in members if budgets.selected(key)]
            rest = [key for key in members if key not in first]
            if first and rest:
                out.append((first, rest))
            else:
                out.extend(([], [key]) for key in members)
        return out

    async def _evict_in_order(self, first: list[str], rest: list[str]) -> None:
        """A victim gang's PDB-selected members one by one, each answer awaited, then the others at once; after a
        refusal nobody else of the gang is asked (the module docstring)."""
        for i, key in enumerate(first):
            if not await self._evict(key):
                spared = [k for k in (*first[i + 1 :], *rest) if self._waiting(k)]
                for other in spared:
                    self._cache.cluster.victim_spared(other)
                if spared:
                    log.info("not evicting %s: the eviction of %s, of the same gang, was refused", spared, key)
                    self._wake()
                return
        await asyncio.gather(*(self._evict(key) for key in rest))

    def clear_nominations(self, pod_keys: list[str]) -> None:
        for key in pod_keys:
            self._nominated.discard(key)
            self._writes.nominate(*_split(key), None)

    def _waiting(self, key: str) -> bool:
        """The core still waits for this victim to go (it is a victim of some preemptor, not given up). A victim
        gang is evicted whole even after its preemptor got room from its first pods: it must not be left running
        below its quorum."""
        return key in self._cache.cluster.evicting

    def _jitter(self, delay: float) -> float:
        return delay * (1.0 + self._rng.uniform(-self.jitter, self.jitter))

    async def _evict(self, key: str) -> bool:
        """Evict one victim: a 429 (a PDB refusing now, or still being processed) and transient errors are retried
        with exponential backoff and jitter, waiting at least the server's Retry-After, while the preemptor still
        waits, for at most `attempts` requests within `retry_window` seconds; only then is it refused. A pod
        refused before is not asked again before its cool-down ends (exponential per pod): re-choosing a
        protected victim cannot turn into a storm of requests. True: the pod is gone or going (evicted, deleted,
        404); False: refused, or nobody waits for it any more."""
        ns, name = _split(key)
        loop = asyncio.get_running_loop()
        refusals, until = self._cooldown.get(key, (0, 0.0))
        if until > loop.time():
            await asyncio.sleep(until - loop.time())
            if not self._waiting(key):
                return False
        if self.pdb == "prefer" and key in self._cache.cluster.protected:
            await self._delete(key)
            return True
        deadline = loop.time() + self.retry_window
        backoff = self.initial_backoff
        message = ""
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            try:
                self.requests += 1
                await self._api.evict(ns, name, retry=NO_RETRY)  # this loop decides: backoff, Retry-After, cool-down
                self.evicted += 1
                self._cooldown.pop(key, None)
                return True
            except ApiError as exc:
                if exc.status == 404:
                    self.already_gone += 1
                    return True
                message = exc.message
                if not exc.transient:
                    break
                if exc.status == 429:
                    self.throttled += 1
                    if self.pdb == "prefer" and "disruption budget" in exc.message and self._waiting(key):
                        await self._delete(key)
                        return True
                retry_after = exc.retry_after
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection trouble: retried, then treated as refused
                message = f"{type(exc).__name__}: {exc}"
            delay = max(self._jitter(backoff), retry_after or 0.0)  # never sooner than Retry-After
            backoff = min(backoff * 2, self.max_backoff)
            if attempt >= self.attempts or loop.time() + delay > deadline:
                break
            await asyncio.sleep(delay)
            if not self._waiting(key):
                return False  # nobody waits for it any more (the pod is gone, or the core gave it up)
        if not self._waiting(key):
            return False
        self.refused += 1
        refusals += 1
        cooldown = min(self.cooldown_base * 2 ** (refusals - 1), self.cooldown_max)
        self._cooldown[key] = (refusals, loop.time() + self._jitter(cooldown))
        if len(self._cooldown) > 4096:  # forget pods that are gone
            pods = self._cache.cluster.pods
            self._cooldown = {k: v for k, v in self._cooldown.items() if k in pods}
        log.info("eviction of %s refused after %d attempt(s): %s", key, attempt, message)
        self._cache.cluster.eviction_failed(key)
        pod = self._cache.cluster.pods.get(key)
        self._events.record(
            ObjectRef("Pod", "v1", ns, name, pod.uid if pod else ""),
            "Warning",
            "EvictionRefused",
            f"preemption could not evict it: {message}; the scheduler chooses again",
        )
        self._wake()
        return False

    async def _delete(self, key: str) -> None:
        """Delete a victim past its PodDisruptionBudget (pdb: prefer); gone already or re-created: nothing to do."""
        ns, name = _split(key)
        pod = self._cache.cluster.pods.get(key)
        if pod is None:
            return
        try:
            self.requests += 1
            await self._api.delete_pod(ns, name, uid=pod.uid)
            self.deleted += 1
        except ApiError as exc:
            if exc.status in (404, 409):
                self.already_gone += 1
                return
            log.info("deleting victim %s failed: %s", key, exc.message)
            self._cache.cluster.eviction_failed(key)
            self._wake()

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel(self) -> list[asyncio.Task[Any]]:
        """Cancel the evictions in flight now (synchronously: leadership lost); returns the cancelled tasks."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        return tasks

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
