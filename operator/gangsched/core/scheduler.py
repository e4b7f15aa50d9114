"""One scheduling cycle as a pure function: `schedule(cluster, now, config) -> Plan`.

Contract:
- Does not change the SchedulerState's observable state (it only refreshes the store's capacity memos);
  the runtime calls `state.apply(plan)` to record the decisions, then carries the Plan out against the API.
- Order of work: (1) gangs whose waiting time (from their first reservation; spec.wait_seconds or
  config.default_wait_seconds) has ended time out: every reservation is released, the gang is marked
  timed out (reason GangTimeout) and its pods are listed for the timeout annotation; (2) the queue: units
  (gangs, and pods without a gang as units of one) with pending members, not backed off, sorted by priority
  desc, then creation time (a failed unit uses its last failure time), then key; (3) up to
  config.max_units_per_cycle units are attempted, each a transaction on a shared Workspace, so later units
  see earlier units' placements.
- Gang rules: a gang without a spec (PodGroup not seen yet) waits; fewer live members than minMember (or
  than a role's minimum) waits without reserving anything; minResources above the cluster's free capacity
  fails fast. Otherwise all pending members (up to totalMember) are placed at once. Quorum = bound members
  (including bindings in flight) + reservations + new placements >= minMember, and every role's minimum.
  Quorum reached: if the gang group (spec.group) has every gang at quorum or satisfied, every reservation of
  the group is bound and the gangs become satisfied; otherwise the placements are kept as reservations.
  Quorum missed: Strict releases everything the gang holds and backs off; NonStrict keeps its placements as
  reservations and backs off. A satisfied gang's pending members (replacements, late members) schedule
  alone, without the gang rules. A unit that still has pending members after its attempt backs off
  (exponential: config.backoff_seconds). Topology (when the gang spec has network_topology, the cluster a
  tree and the pending members one scheduling class): core.topology.place on per-node capacity.
- Without topology: per scheduling class, nodes are chosen from ClassIndex buckets (core/capacity.py):
  binpack takes the fullest node that fits as many as it can; spread deals one pod per node round the
  emptiest nodes; preferred affinity and PreferNoSchedule taints rank first.
- Group preemption (issue 6, core/preemption.py): a Strict gang whose pending members (one scheduling class,
  none with preemptionPolicy Never) do not fit looks for lower-priority victims; the plan then carries the
  evictions, the members' nominations (capacity held for the gang while NOMINATED) and events (Preempting on
  the PodGroup, Preempted on every victim pod and victim PodGroup). While its victims still exist the gang
  waits (reason Preempting); pods already leaving (deletionTimestamp set) are never victims; its own nominated capacity is available to it on every attempt (members go to
  their nominated nodes), so it binds in the first cycle after the victims are gone. Held capacity is
  never given to a gang of lower or equal priority; a higher-priority gang may use it, and the preemptor
  then loses its nominations (event NominationLost) and chooses again later. Nominations are cleared when the gang times out, loses its
  PodGroup, or finds nothing to preempt any more.
- Failure messages aggregate why nodes are blocked, e.g. `needs 8 x {nvidia.com/gpu: 8}; 5 nodes fit;
  3 more blocked by: insufficient nvidia.com/gpu (3), taint dedicated=infer (2)`. Events and pod conditions
  of a unit are only emitted when its message changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gangsched.core.capacity import ClassView, Workspace, fit_count
from gangsched.core.config import SchedulerConfig
from gangsched.core.gangspec import GangMode, GangSpec
from gangsched.core.matching import static_block
from gangsched.core.plan import (
    PHASE_FAILED,
    PHASE_PENDING,
    PHASE_SCHEDULED,
    PHASE_SCHEDULING,
    Event,
    GangStatus,
    GangTimeout,
    Plan,
    PodCondition,
    UnitBackoff,
)
from gangsched.core.preemption import find_victims, tier_label
from gangsched.core.queue import UnitState
from gangsched.core.records import PodRecord, SchedulingClass
from gangsched.core.resources import format_resources
from gangsched.core.scheduler_state import SchedulerState
from gangsched.core.store import GangState
from gangsched.core.topology import TopologyPlacement, TopologyTree, place
from gangsched.core.units import UnitKey


def schedule(cluster: SchedulerState, now: float, config: SchedulerConfig) -> Plan:
    """One cycle; see the module docstring."""
    return _Cycle(cluster, now, config).run()


@dataclass(slots=True)
class _Members:
    bound: list[str]
    reserved: list[tuple[str, str]]
    pending: list[PodRecord]

    def roles(self, cluster: SchedulerState, extra: Iterable[PodRecord] = ()) -> Counter[str | None]:
        c: Counter[str | None] = Counter()
        for k in self.bound:
            c[cluster.pods[k].role] += 1
        for k, _ in self.reserved:
            c[cluster.pods[k].role] += 1
        for p in extra:
            c[p.role] += 1
        return c


@dataclass(slots=True)
class _Shortfall:
    cls: SchedulingClass
    need: int
    placed: int
    reason: str | None = None  # already known (topology miss)


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


def _roles_short(spec: GangSpec, counts: Counter[str | None]) -> str | None:
    for role, minimum in spec.roles:
        if counts.get(role, 0) < minimum:
            return f"role {role}: {counts.get(role, 0)} of {minimum}"
    return None


class _Cycle:
    def __init__(self, cluster: SchedulerState, now: float, config: SchedulerConfig) -> None:
        self.cluster = cluster
        self.now = now
        self.config = config
        self.plan = Plan()
        self.ws = Workspace(cluster.store, spread=config.score_strategy == "spread")
        self.reserved_now: dict[str, str] = {}
        self.released_now: set[str] = set()
        self.bound_now: set[str] = set()
        self.satisfied_now: set[str] = set()
        self.timed_out_now: set[str] = set()
        self.evicting_now: set[str] = set()
        # nominations cleared by this cycle's plan: their held capacity was already given up (or is being),
        # so it is never released a second time nor used by the pod as if still held
        self.nominations_cleared: set[str] = set()
        # capacity held for preemptors while their victims terminate, by preemptor gang
        self.holds: dict[str, list[tuple[str, str, Mapping[str, int]]]] = {}
        for key, node in cluster.nominations():
            pod = cluster.pods.get(key)
            if pod is not None:
                self.ws.place(node, pod.sclass.requests)
                if pod.gang is not None:
                    self.holds.setdefault(pod.gang, []).append((key, node, pod.sclass.requests))

    # ------------------------------------------------------------------ driver
    def run(self) -> Plan:
        self._timeouts()
        budget = self.config.max_units_per_cycle
        for uk in self._queue():
            if budget <= 0:
                break
            if self._attempt(uk):
                budget -= 1
        self._wakeup()
        return self.plan

    def _queue(self) -> list[UnitKey]:
        c = self.cluster
        queue = c.queue
        now = self.now
        freed_gen = c.store.freed_gen
        items: list[tuple[int, float, UnitKey]] = []
        for gk in queue.queued_gangs():
            gs = c.gangs[gk]
            if gs.timed_out or gk in self.timed_out_now:
                continue
            if gs.spec is None and not gs.satisfied:
                self._wait(gs, "WaitingForPodGroup", f"PodGroup {gk} does not exist yet")
                self._clear_nominations(gs.pending)
                continue
            unit = UnitKey.gang(gk)
            st = queue.unit_state(unit)
            if st is not None and st.backoff_until > now and st.freed_gen >= freed_gen:
                continue
            if st is not None and st.failed_at is not None:
                created = st.failed_at
            else:
                created = gs.created if gs.created is not None else gs.member_created
            items.append((-gs.priority, created, unit))
        for pk in queue.alone_pending():
            unit = UnitKey.pod(pk)
            st = queue.unit_state(unit)
            if st is not None and st.backoff_until > now and st.freed_gen >= freed_gen:
                continue
            pod = c.pods[pk]
            created = st.failed_at if st is not None and st.failed_at is not None else pod.created
            items.append((-pod.priority, created, unit))
        items.sort()
        return [k for _, _, k in items]

    def _attempt(self, uk: UnitKey) -> bool:
        if uk.is_pod:
            pod = self.cluster.pods[uk.key]
            self._alone(uk, [pod], gang=None)
            return True
        gs = self.cluster.gangs[uk.key]
        if gs.satisfied:
            members = self._members(gs)
            if not members.pending:
                return False
            self._alone(uk, members.pending, gang=gs)
            return True
        return self._gang(gs)

    # ------------------------------------------------------------------ bookkeeping helpers
    def _state(self, uk: UnitKey) -> UnitState | None:
        return self.cluster.queue.unit_state(uk)

    def _backoff(self, uk: UnitKey) -> None:
        st = self._state(uk)
        attempts = (st.attempts if st is not None else 0) + 1
        until = self.now + self.config.backoff_seconds(attempts)
        self.plan.unit_backoffs[uk] = UnitBackoff(attempts, until, self.now)

    def _success(self, uk: UnitKey) -> None:
        st = self._state(uk)
        if st is not None and (st.attempts or st.waiting_reason is not None):
            self.plan.unit_success.append(uk)

    def _changed(self, uk: UnitKey, message: str) -> bool:
        """Record `message` as the unit's last reported reason; True when it differs from the last one."""
        st = self._state(uk)
        if st is not None and st.waiting_reason == message:
            return False
        self.plan.waiting_reasons[uk] = message
        return True

    def _status(self, gs: GangState, status: GangStatus) -> None:
        if gs.spec is None:
            return
        if gs.last_status != status:
            self.plan.gang_status[gs.key] = status

    def _event(self, kind: str, key: str, type_: str, reason: str, message: str) -> None:
        ns, name = _split(key)
        self.plan.events.append(Event(kind, ns, name, type_, reason, message))

    def _conditions(self, pods: Iterable[PodRecord], reason: str, message: str) -> None:
        for p in pods:
            self.plan.conditions.append(PodCondition(p.key, reason, message))

    def _wait(self, gs: GangState, reason: str, message: str) -> None:
        if self._changed(UnitKey.gang(gs.key), message):
            self._conditions((self.cluster.pods[k] for k in gs.pending), reason, message)
            m = self._members(gs)
            self._status(gs, GangStatus(PHASE_PENDING, len(m.bound), len(m.reserved), len(m.pending), reason, message))

    def _members(self, gs: GangState) -> _Members:
        pods = self.cluster.pods
        reservation_of = self.cluster.store.reservation_of
        bound: list[str] = []
        reserved: list[tuple[str, str]] = []
        pending: list[PodRecord] = []
        for k in gs.members:
            pod = pods.get(k)
            if pod is None or pod.phase == "Failed":
                continue
            if pod.node_name is not None:
                bound.append(k)
                continue
            if pod.terminal:
                continue
            if k in self.bound_now:
                bound.append(k)
                continue
            node = self.reserved_now.get(k)
            if node is not None:
                reserved.append((k, node))
                continue
            r = reservation_of(k)
            if r is not None and k not in self.released_now:
                if r[1]:
                    bound.append(k)
                else:
                    reserved.append((k, r[0]))
                continue
            if pod.ours and not pod.timed_out:
                pending.append(pod)
        name_key = self.cluster.store.name_key
        pending.sort(key=lambda p: (p.rank if p.rank is not None else 1 << 62, name_key(p.key)))
        return _Members(bound, reserved, pending)

    # ------------------------------------------------------------------ timeouts and wakeup
    def _wait_seconds(self, gs: GangState) -> float:
        if gs.spec is not None and gs.spec.wait_seconds is not None:
            return gs.spec.wait_seconds
        return self.config.default_wait_seconds

    def _timeouts(self) -> None:
        c = self.cluster
        for gk in list(c.store.reserving()):
            gs = c.gangs.get(gk)
            if gs is None or gs.first_reserved is None or gs.satisfied:
                continue
            if gs.first_reserved + self._wait_seconds(gs) > self.now:
                continue
            m = self._members(gs)
            for k, node in m.reserved:
                self.ws.release(node, c.pods[k].requests)
                self.plan.releases.append(k)
                self.released_now.add(k)
            victims = tuple(k for k, _ in m.reserved) + tuple(p.key for p in m.pending)
            self._clear_nominations(p.key for p in m.pending)
            self.plan.timeouts.append(GangTimeout(gk, victims))
            self.timed_out_now.add(gk)
            message = (
                f"waiting time {self._wait_seconds(gs):g}s ended with {len(m.bound)} bound and "
                f"{len(m.reserved)} reserved members; released every reservation"
            )
            self._status(gs, GangStatus(PHASE_FAILED, len(m.bound), 0, len(victims), "GangTimeout", message))
            self._event("PodGroup", gk, "Warning", "GangTimeout", message)
            self._conditions((c.pods[k] for k in victims), "GangTimeout", message)

    def _wakeup(self) -> None:
        c = self.cluster
        now = self.now
        best: float | None = None

        def consider(t: float) -> None:
            nonlocal best
            if t > now and (best is None or t < best):
                best = t

        for gk in c.store.reserving():
            gs = c.gangs[gk]
            if gk in self.timed_out_now or gk in self.satisfied_now or gs.first_reserved is None:
                continue
            consider(gs.first_reserved + self._wait_seconds(gs))
        for gk, start in self.plan.first_reserved.items():
            if start is not None and gk not in self.satisfied_now:
                consider(start + self._wait_seconds(c.gangs[gk]))
        for b in self.plan.unit_backoffs.values():
            consider(b.until)
        for gk in c.queue.queued_gangs():
            unit = UnitKey.gang(gk)
            st = c.queue.unit_state(unit)
            if st is not None and unit not in self.plan.unit_backoffs:
                consider(st.backoff_until)
        for pk in c.queue.alone_pending():
            unit = UnitKey.pod(pk)
            st = c.queue.unit_state(unit)
            if st is not None and unit not in self.plan.unit_backoffs:
                consider(st.backoff_until)
        self.plan.next_wakeup = best

    # ------------------------------------------------------------------ placement
    def _place(
        self, spec: GangSpec | None, pods: list[PodRecord], *, partial: bool
    ) -> tuple[list[tuple[PodRecord, str]], list[_Shortfall], int | None]:
        """Place pods on the workspace. Returns (placed, shortfalls, topology tier)."""
        groups: dict[int, list[PodRecord]] = {}
        classes: dict[int, SchedulingClass] = {}
        for p in pods:
            groups.setdefault(p.sclass.id, []).append(p)
            classes[p.sclass.id] = p.sclass
        tree: TopologyTree | None = self.cluster.topology
        if tree is not None and spec is not None and spec.network_topology is not None and len(groups) == 1:
            return self._place_topology(tree, spec, pods)
        placed: list[tuple[PodRecord, str]] = []
        short: list[_Shortfall] = []
        for cid, members in groups.items():
            cls = classes[cid]
            view = self.ws.view(cls)
            chosen = (
                self._pick_spread(view, cls, len(members))
                if self.ws.spread
                else self._pick_binpack(view, cls, len(members))
            )
            i = 0
            for node, k in chosen:
                for p in members[i : i + k]:
                    placed.append((p, node))
                i += k
            if i < len(members):
                short.append(_Shortfall(cls, len(members), i))
                if not partial:
                    break
        return placed, short, None

    def _pick_binpack(self, view: ClassView, cls: SchedulingClass, need: int) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        remaining = need
        for node, c in view.ordered():
            k = c if c < remaining else remaining
            out.append((node, k))
            remaining -= k
            if not remaining:
                break
        for node, k in out:
            self.ws.place(node, cls.requests, k)
        return out

    def _pick_spread(self, view: ClassView, cls: SchedulingClass, need: int) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        remaining = need
        while remaining:
            snapshot = list(view.ordered())
            if not snapshot:
                break
            for node, _ in snapshot:
                self.ws.place(node, cls.requests)
                out.append((node, 1))
                remaining -= 1
                if not remaining:
                    break
        return out

    def _place_topology(
        self, tree: TopologyTree, spec: GangSpec, pods: list[PodRecord]
    ) -> tuple[list[tuple[PodRecord, str]], list[_Shortfall], int | None]:
        nt = spec.network_topology
        assert nt is not None
        cls = pods[0].sclass
        view = self.ws.view(cls)
        result = place(
            tree,
            view.capacity(),
            count=len(pods),
            group_size=nt.group_size,
            highest_tier_allowed=nt.highest_tier_allowed,
            hard=nt.mode == "hard",
        )
        if not isinstance(result, TopologyPlacement):
            return [], [_Shortfall(cls, len(pods), 0, f"topology: {result.reason}")], None
        for node, k in Counter(result.nodes).items():
            self.ws.place(node, cls.requests, k)
        return list(zip(pods, result.nodes)), [], result.whole_tier

    def _explain(self, short: list[_Shortfall]) -> str:
        parts = []
        for s in short:
            head = f"needs {s.need} x {format_resources(s.cls.requests)}"
            if s.reason is not None:
                parts.append(f"{head}; {s.reason}")
                continue
            reasons: Counter[str] = Counter()
            fit = 0
            used = self.cluster.store.used
            extra = self.ws.extra
            for name, node in self.cluster.nodes.items():
                why = static_block(s.cls, node)
                if why is None:
                    if fit_count(s.cls.requests, node.allocatable, used.get(name), extra.get(name)) > 0:
                        fit += 1
                        continue
                    free = self.ws.free(name)
                    why = next(
                        (f"insufficient {r}" for r, q in sorted(s.cls.requests.items()) if free.get(r, 0) < q),
                        "insufficient resources",
                    )
                reasons[why] += 1
            shown = ", ".join(f"{r} ({n})" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0])))
            parts.append(f"{head}; {fit} nodes fit; {s.need - s.placed} more blocked by: {shown or 'no more nodes'}")
        return "; ".join(parts)

    # ------------------------------------------------------------------ units
    def _alone(self, uk: UnitKey, pods: list[PodRecord], *, gang: GangState | None) -> None:
        """Pods scheduled as ordinary pods: a pod without a gang, or members of a satisfied gang."""
        placed, short, _ = self._place(None, pods, partial=True)
        for p, node in placed:
            self.plan.bindings.append((p.key, node))
            self.bound_now.add(p.key)
        if not short:
            self._success(uk)
            if gang is not None:
                m = self._members(gang)
                self._status(
                    gang,
                    GangStatus(
                        PHASE_SCHEDULED,
                        len(m.bound),
                        len(m.reserved),
                        len(m.pending),
                        "Scheduled",
                        "quorum reached; later members schedule alone",
                    ),
                )
            return
        done = {p.key for p, _ in placed}
        failed = [p for p in pods if p.key not in done]
        message = self._explain(short)
        self._backoff(uk)
        if self._changed(uk, message):
            self._conditions(failed, "Unschedulable", message)
            for p in failed[:1] if gang is not None else failed:
                self._event("Pod", p.key, "Warning", "FailedScheduling", message)

    def _gang(self, gs: GangState) -> bool:
        spec = gs.spec
        assert spec is not None
        m = self._members(gs)
        alive = len(m.bound) + len(m.reserved) + len(m.pending)
        if alive < spec.min_member:
            self._wait(gs, "WaitingForPods", f"{alive} of minMember {spec.min_member} pods exist")
            return False
        role_short = _roles_short(spec, m.roles(self.cluster, m.pending))
        if role_short is not None:
            self._wait(gs, "WaitingForPods", f"{role_short} pods exist")
            return False
        pending = m.pending
        if spec.total_member is not None:
            room = spec.total_member - len(m.bound) - len(m.reserved)
            pending = pending[: max(room, 0)]
        if not pending:
            return False
        if spec.min_resources and self._min_resources_short(gs, spec, m):
            return True
        mark = self.ws.begin()
        self._release_nominations(pending)  # a preemptor's held capacity is its own to use
        lower = self._release_lower_holds(gs, pending)  # and lower-priority preemptors' holds do not bind it
        nominated = self._nominated_fit(gs, pending)
        if nominated is not None:  # victims gone: the members go where they were nominated
            placed, short, tier = nominated
        else:
            placed, short, tier = self._place(spec, pending, partial=spec.mode == GangMode.NON_STRICT)
        new = [p for p, _ in placed]
        have = len(m.bound) + len(m.reserved) + len(placed)
        quorum = have >= spec.min_member and _roles_short(spec, m.roles(self.cluster, new)) is None
        if not quorum and spec.mode == GangMode.STRICT:
            self.ws.rollback(mark)
            if not m.reserved and self._preempt(gs, m, pending):
                return True
            for k, node in m.reserved:
                self.ws.release(node, self.cluster.pods[k].requests)
                self.plan.releases.append(k)
                self.released_now.add(k)
            if gs.first_reserved is not None:
                self.plan.first_reserved[gs.key] = None
            message = self._explain(short) if short else f"{have} of minMember {spec.min_member} placed"
            message = (
                f"Strict gang cannot reach its quorum ({len(m.bound)} bound + {len(placed)} fit of "
                f"minMember {spec.min_member}): {message}"
            )
            self._fail(gs, message, pending, scheduled=len(m.bound), reserved=0, pending=alive - len(m.bound))
            return True
        self.holds.pop(gs.key, None)  # its own holds were released above and are now placements
        if lower:
            self._settle_holds(gs, lower, placed)
        for p, node in placed:
            self.reserved_now[p.key] = node
        if gs.first_reserved is None and placed and gs.key not in self.plan.first_reserved:
            self.plan.first_reserved[gs.key] = self.now
        if not quorum:  # NonStrict: keep what fits
            self.plan.reservations.extend((p.key, n) for p, n in placed)
            message = self._explain(short) if short else f"{have} of minMember {spec.min_member} placed"
            message = f"holding {have} of minMember {spec.min_member}: {message}"
            self._fail(
                gs,
                message,
                [p for p in pending if p.key not in self.reserved_now],
                scheduled=len(m.bound),
                reserved=len(m.reserved) + len(placed),
                pending=alive - have,
                phase=PHASE_SCHEDULING,
            )
            return True
        group = self._group_ready(gs)
        if group is None:
            self.plan.reservations.extend((p.key, n) for p, n in placed)
            message = f"quorum reached ({have} of {spec.min_member}); waiting for gang group {list(spec.group)}"
            st = GangStatus(
                PHASE_SCHEDULING,
                len(m.bound),
                len(m.reserved) + len(placed),
                alive - have,
                "WaitingForGangGroup",
                message,
                tier,
            )
            self._status(gs, st)
            if self._changed(UnitKey.gang(gs.key), message):
                self._event("PodGroup", gs.key, "Normal", "WaitingForGangGroup", message)
        else:
            for g in group:
                self._bind_gang(g, tier if g is gs else None)
        unplaced = [p for p in pending if p.key not in self.reserved_now and p.key not in self.bound_now]
        if unplaced or short:
            self._backoff(UnitKey.gang(gs.key))
        else:
            self._success(UnitKey.gang(gs.key))
        return True

    # ------------------------------------------------------------------ preemption
    def _nomination(self, pod_key: str) -> str | None:
        """The pod's nominated node, unless this cycle already cleared it (the state learns that on apply)."""
        if pod_key in self.nominations_cleared:
            return None
        return self.cluster.nomination_of(pod_key)

    def _clear_nominations(self, pod_keys: Iterable[str]) -> None:
        for k in pod_keys:
            if self._nomination(k) is not None:
                self.plan.nomination_clears.append(k)
                self.nominations_cleared.add(k)

    def _release_nominations(self, pods: Iterable[PodRecord]) -> None:
        for p in pods:
            node = self._nomination(p.key)
            if node is not None:
                self.ws.release(node, p.sclass.requests)

    def _release_lower_holds(self, gs: GangState, pending: list[PodRecord]) -> list[str]:
        """Release (in the open transaction) the holds of preemptors of lower priority than these members."""
        if not self.holds or not pending:
            return []
        prio = min(p.priority for p in pending)
        out = []
        for gk, holds in self.holds.items():
            other = self.cluster.gangs.get(gk)
            if gk == gs.key or other is None or other.priority >= prio:
                continue
            for _, node, req in holds:
                self.ws.release(node, req)
            out.append(gk)
        return out

    def _settle_holds(self, gs: GangState, lower: list[str], placed: list[tuple[PodRecord, str]]) -> None:
        """After a kept placement: a lower-priority preemptor whose held nodes it used loses its nominations
        (it chooses again later); the others' holds are put back."""
        used = {node for _, node in placed}
        for gk in lower:
            holds = self.holds[gk]
            if any(node in used for _, node, _ in holds):
                self._clear_nominations(k for k, _, _ in holds)
                del self.holds[gk]
                self._event(
                    "PodGroup",
                    gk,
                    "Warning",
                    "NominationLost",
                    f"its held nodes went to higher-priority gang {gs.key}; it will choose again",
                )
            else:
                for _, node, req in holds:
                    self.ws.place(node, req)

    def _nominated_fit(
        self, gs: GangState, pending: list[PodRecord]
    ) -> tuple[list[tuple[PodRecord, str]], list[_Shortfall], int | None] | None:
        """Every pending member nominated and its nominated node now has room: that placement, else None."""
        if not pending or len({p.sclass.id for p in pending}) != 1:
            return None
        out: list[tuple[PodRecord, str]] = []
        for p in pending:
            node = self._nomination(p.key)
            if node is None:
                return None
            out.append((p, node))
        cls = pending[0].sclass
        view = self.ws.view(cls)
        need = Counter(n for _, n in out)
        if any(view.count_of(n) < k for n, k in need.items()):
            return None
        for n, k in need.items():
            self.ws.place(n, cls.requests, k)
        last = gs.last_status
        return out, [], last.tier if last is not None and last.reason == "Preempting" else None

    def _preempt(self, gs: GangState, m: _Members, pending: list[PodRecord]) -> bool:
        """Group preemption for a Strict gang that does not fit. True: handled (victims chosen, or still
        terminating); False: nothing to preempt (its nominations are cleared), the caller reports the failure."""
        c = self.cluster
        spec = gs.spec
        assert spec is not None
        if (
            not pending
            or any(p.preemption_policy == "Never" for p in pending)
            or len({p.sclass.id for p in pending}) != 1
        ):
            return False
        lowest = c.lowest_priority()
        if not c.victims_of(gs.key) and (lowest is None or lowest >= min(p.priority for p in pending)):
            self._clear_nominations(p.key for p in pending)
            return False  # nobody has a lower priority: nothing to preempt
        outstanding = c.victims_of(gs.key)
        if outstanding:
            message = f"waiting for {len(outstanding)} preempted pod(s) to terminate"
            self._backoff(UnitKey.gang(gs.key))
            tier = gs.last_status.tier if gs.last_status is not None else None
            self._status(gs, GangStatus(PHASE_PENDING, len(m.bound), 0, len(pending), "Preempting", message, tier))
            self._changed(UnitKey.gang(gs.key), message)
            return True
        cls = pending[0].sclass
        view = self.ws.view(cls)
        tree = c.topology if spec.network_topology is not None else None
        mark = self.ws.begin()
        self._release_nominations(pending)
        choice = find_victims(
            c.store,
            requests=cls.requests,
            count=len(pending),
            priority=min(p.priority for p in pending),
            feasible=view.idx.pref.keys(),
            extra=self.ws.extra,
            topology=spec.network_topology if tree is not None else None,
            tree=tree,
            excluded=c.evicting.keys() | c.leaving | self.evicting_now,
            protected=c.protected,
        )
        if choice is None:
            self.ws.rollback(mark)
            self._clear_nominations(p.key for p in pending)
            return False
        for node in choice.nodes:  # the held capacity moves to the new nominations (mark is not rolled back)
            self.ws.place(node, cls.requests)
        self.evicting_now.update(choice.victims)
        self.plan.evictions.extend(choice.victims)
        self.plan.preemptions[gs.key] = choice.victims
        self.plan.nominations.extend((p.key, node) for p, node in zip(pending, choice.nodes))
        self.holds[gs.key] = [(p.key, node, cls.requests) for p, node in zip(pending, choice.nodes)]
        if gs.first_reserved is None and gs.key not in self.plan.first_reserved:
            self.plan.first_reserved[gs.key] = self.now  # the waiting time bounds how long it holds nodes
        label = tier_label(choice.whole_tier, c.topology.tiers if c.topology is not None else None)
        message = (
            f"preempting {len(choice.victims)} lower-priority pod(s) of {', '.join(choice.victim_units)} "
            f"for {label} placement; {len(pending)} member(s) nominated"
        )
        self._status(
            gs, GangStatus(PHASE_PENDING, len(m.bound), 0, len(pending), "Preempting", message, choice.whole_tier)
        )
        self._changed(UnitKey.gang(gs.key), message)
        self._event("PodGroup", gs.key, "Normal", "Preempting", message)
        self._conditions(pending, "Preempting", message)
        per_gang: Counter[str] = Counter()
        for v in choice.victims:
            self._event("Pod", v, "Normal", "Preempted", f"Preempted by gang {gs.key} for {label} placement")
            vg = c.pods[v].gang
            if vg is not None:
                per_gang[vg] += 1
        gone = set(choice.victims)
        for vg, n in sorted(per_gang.items()):
            note = f"{n} member(s) preempted by gang {gs.key} for {label} placement"
            self._event("PodGroup", vg, "Warning", "Preempted", note)
            vs = c.gangs.get(vg)
            if vs is not None and all(
                k in gone or k in c.evicting or k in self.evicting_now
                for k in vs.members
                if k in c.pods and c.pods[k].node_name and not c.pods[k].terminal
            ):
                self._status(
                    vs, GangStatus(PHASE_PENDING, 0, 0, 0, "Preempted", f"{note}; it must reach its quorum again")
                )
        self._backoff(UnitKey.gang(gs.key))
        return True

    def _bind_gang(self, gs: GangState, tier: int | None) -> None:
        m = self._members(gs)
        for k, node in m.reserved:
            self.plan.bindings.append((k, node))
            self.bound_now.add(k)
            self.reserved_now.pop(k, None)
        self.satisfied_now.add(gs.key)
        self.plan.satisfied.append(gs.key)
        self.plan.first_reserved.pop(gs.key, None)
        n = len(m.bound) + len(m.reserved)
        message = f"{n} members bound or binding (minMember {gs.spec.min_member if gs.spec else '?'})"
        self._status(gs, GangStatus(PHASE_SCHEDULED, n, 0, len(m.pending), "Scheduled", message, tier))
        self._event("PodGroup", gs.key, "Normal", "Scheduled", message)

    def _group_ready(self, gs: GangState) -> list[GangState] | None:
        spec = gs.spec
        assert spec is not None
        out = [gs]
        for k in spec.group:
            if k == gs.key:
                continue
            h = self.cluster.gangs.get(k)
            if h is None:
                return None
            if h.satisfied or k in self.satisfied_now:
                continue
            if h.spec is None or h.timed_out or k in self.timed_out_now:
                return None
            m = self._members(h)
            if len(m.bound) + len(m.reserved) < h.spec.min_member or _roles_short(h.spec, m.roles(self.cluster)):
                return None
            out.append(h)
        return out

    def _min_resources_short(self, gs: GangState, spec: GangSpec, m: _Members) -> bool:
        assert spec.min_resources is not None
        free: dict[str, int] = {}
        for name, node in self.cluster.nodes.items():
            if node.unschedulable:
                continue
            for r, q in self.ws.free(name).items():
                if q > 0:
                    free[r] = free.get(r, 0) + q
        for k, _ in m.reserved:
            for r, q in self.cluster.pods[k].requests.items():
                free[r] = free.get(r, 0) + q
        for k in m.bound:
            for r, q in self.cluster.pods[k].requests.items():
                free[r] = free.get(r, 0) + q
        missing = {r: q for r, q in spec.min_resources if free.get(r, 0) < q}
        if not missing:
            return False
        message = (
            f"minResources {format_resources(dict(spec.min_resources))} exceed the cluster's free "
            f"capacity {format_resources({r: free.get(r, 0) for r in missing})}"
        )
        self._fail(gs, message, m.pending, scheduled=len(m.bound), reserved=len(m.reserved), pending=len(m.pending))
        return True

    def _fail(
        self,
        gs: GangState,
        message: str,
        pods: list[PodRecord],
        *,
        scheduled: int,
        reserved: int,
        pending: int,
        phase: str = PHASE_PENDING,
    ) -> None:
        self._backoff(UnitKey.gang(gs.key))
        self._status(gs, GangStatus(phase, scheduled, reserved, pending, "Unschedulable", message))
        if self._changed(UnitKey.gang(gs.key), message):
            self._event("PodGroup", gs.key, "Warning", "Unschedulable", message)
            self._conditions(pods, "Unschedulable", message)
