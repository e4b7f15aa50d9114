"""The emulator's disruption controller: PodDisruptionBudget status, as kube-controller-manager maintains it (v1.32).

Contract:
- `DisruptionController(registry, *, delay=0.0, clock=None)`; `start()` taps the store (pods, PDBs, scale-able
  workload kinds) and queues every PDB; `stop()` removes the taps. Dirty PDBs are synced together on the event loop
  `delay` seconds later; `sync_all()` syncs them now.
- A sync computes expectedPods, desiredHealthy, currentHealthy, disruptedPods, disruptionsAllowed,
  observedGeneration and the DisruptionAllowed condition, and writes the status only when it changed; a failed
  sync runs the real fail-safe (disruptionsAllowed 0, reason SyncFailed, Warning event).
- Stale DisruptionTarget conditions are reset after 2 minutes; events are recorded once per (PDB, reason, message).
More: docs/modules.md#simdisruptionpy.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
import uuid
from collections.abc import Callable
from typing import Any

from gangsched.models.timestamps import format_time as metav1_time
from gangsched.models.timestamps import parse_datetime
from gangsched.sim.request import RequestContext
from gangsched.sim.selectors import LabelSelector, SelectorError, selector_from_object
from gangsched.sim.store import Entry, StorageKey, Watcher, WatchEvent

log = logging.getLogger(__name__)

PODS: StorageKey = ("", "pods")
PDBS: StorageKey = ("policy", "poddisruptionbudgets")
CRDS: StorageKey = ("apiextensions.k8s.io", "customresourcedefinitions")
WORKLOADS: tuple[StorageKey, ...] = (
    ("", "replicationcontrollers"),
    ("apps", "replicasets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
)
# built-in kinds a real apiserver serves a scale subresource for (the emulator stores them only)
SCALE_BUILTINS = frozenset(
    {("", "ReplicationController"), ("apps", "ReplicaSet"), ("apps", "Deployment"), ("apps", "StatefulSet")}
)
DELETION_TIMEOUT = datetime.timedelta(minutes=2)  # disruption.go DeletionTimeout
STALE_POD_DISRUPTION_TIMEOUT = datetime.timedelta(minutes=2)  # disruption.go stalePodDisruptionTimeout
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"

PdbKey = tuple[str, str]  # (namespace, name)


class SyncError(Exception):
    """The expected pod count cannot be computed (the controller then runs its fail-safe)."""


def format_time(when: datetime.datetime) -> str:
    return metav1_time(when)


def parse_time(text: Any) -> datetime.datetime | None:
    return parse_datetime(text)


def is_pod_ready(pod: dict[str, Any]) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def scaled_value(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)."""
    if isinstance(value, bool):
        raise SyncError(f"invalid value for IntOrString: invalid type: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if not value.endswith("%"):
            raise SyncError("invalid value for IntOrString: invalid type: string is not a percentage")
        try:
            pct = int(value[:-1])
        except ValueError:
            raise SyncError(f"invalid value for IntOrString: invalid value {value!r}") from None
        return math.ceil(pct * total / 100)
    raise SyncError(f"invalid value for IntOrString: invalid type: {type(value).__name__}")


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    """metav1.GetControllerOf: the ownerReference with controller: true."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def set_condition(conditions: list[dict[str, Any]], new: dict[str, Any], now: str) -> None:
    """apimeta.SetStatusCondition: lastTransitionTime moves only when the status changes."""
    for cond in conditions:
        if cond.get("type") == new["type"]:
            if cond.get("status") != new["status"]:
                cond["status"] = new["status"]
                cond["lastTransitionTime"] = now
            cond["reason"] = new["reason"]
            cond["message"] = new["message"]
            cond["observedGeneration"] = new["observedGeneration"]
            return
    conditions.append(dict(new, lastTransitionTime=now))


def disruption_allowed_condition(status: dict[str, Any], now: str) -> None:
    """pdbhelper.UpdateDisruptionAllowedCondition."""
    conditions = status.setdefault("conditions", [])
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    set_condition(
        conditions,
        {
            "type": DISRUPTION_ALLOWED,
            "status": "True" if allowed else "False",
            "reason": SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS,
            "message": "",
            "observedGeneration": int(status.get("observedGeneration") or 0),
        },
        now,
    )


def conditions_up_to_date(pdb: dict[str, Any]) -> bool:
    """pdbhelper.ConditionsAreUpToDate."""
    status = pdb.get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == DISRUPTION_ALLOWED), None)
    if cond is None or int(status.get("observedGeneration") or 0) != int(pdb["metadata"].get("generation") or 0):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return bool(cond.get("status") == "True" and cond.get("reason") == SUFFICIENT_PODS)
    return bool(cond.get("status") == "False" and cond.get("reason") == INSUFFICIENT_PODS)


class StoreTap(Watcher):
    """A store watcher that hands every event to a callback instead of queueing lines."""

    def __init__(self, callback: Callable[[WatchEvent], None]) -> None:
        super().__init__(namespace=None, matches=None)
        self._callback = callback

    def offer(self, event: WatchEvent) -> None:
        try:
            self._callback(event)
        except Exception:  # the store's writer must never fail because of the controller
            log.exception("disruption controller: handling a store event failed")


class DisruptionController:
    """See module docstring."""

    def __init__(
        self,
        registry: Any,
        *,
        delay: float = 0.0,
        clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self.registry = registry
        self.store = registry.store
        self.delay = delay
        self.clock: Callable[[], datetime.datetime] = clock or registry.clock
        self.syncs = 0  # PDB syncs run (a witness for tests and benchmarks)
        self._selectors: dict[str, dict[str, LabelSelector | None]] = {}  # namespace -> PDB -> selector (None: invalid)
        self._members: dict[PdbKey, set[str]] = {}  # PDB -> names of the pods it selects
        self._dirty: dict[PdbKey, None] = {}
        self._handle: asyncio.Handle | None = None
        self._rechecks: dict[PdbKey, asyncio.TimerHandle] = {}
        self._taps: list[tuple[StorageKey, StoreTap]] = []
        self._events: dict[tuple[str, str, str], str] = {}  # (pdb uid, reason, message) recorded
        self._stale: dict[PdbKey, datetime.datetime] = {}  # pod -> when its DisruptionTarget=True becomes stale

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._taps:
            return
        for key, callback in ((PODS, self._on_pod), (PDBS, self._on_pdb), *((k, self._on_workload) for k in WORKLOADS)):
            tap = StoreTap(callback)
            self.store.subscribe(key, tap)
            self._taps.append((key, tap))
        for entry in self.store.entries(PDBS):
            self._index_pdb(entry.obj)
        self._schedule()

    def stop(self) -> None:
        for key, tap in self._taps:
            self.store.unsubscribe(key, tap)
        self._taps.clear()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        for timer in self._rechecks.values():
            timer.cancel()
        self._rechecks.clear()

    # ------------------------------------------------------------------ event handlers (hot path)
    def _on_pod(self, event: WatchEvent) -> None:
        obj = event.entry.obj
        meta = obj["metadata"]
        ns = meta.get("namespace") or ""
        if event.type != "DELETED":
            for cond in (obj.get("status") or {}).get("conditions") or ():
                if cond.get("type") == "DisruptionTarget":
                    self._check_stale(obj, cond)
                    break
        selectors = self._selectors.get(ns)
        if not selectors:
            return
        name = meta["name"]
        deleted = event.type == "DELETED"
        for pdb, sel in selectors.items():
            members = self._members.setdefault((ns, pdb), set())
            now = not deleted and sel is not None and sel.matches(obj)
            if now:
                members.add(name)
                self._mark((ns, pdb))
            elif name in members:
                members.discard(name)
                self._mark((ns, pdb))

    def _on_pdb(self, event: WatchEvent) -> None:
        obj = event.entry.obj
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        if event.type == "DELETED":
            self._selectors.get(key[0], {}).pop(key[1], None)
            if not self._selectors.get(key[0], True):
                del self._selectors[key[0]]
            self._members.pop(key, None)
            self._dirty.pop(key, None)
            timer = self._rechecks.pop(key, None)
            if timer is not None:
                timer.cancel()
            return
        previous = event.previous
        if previous is None or (previous.get("spec") or {}).get("selector") != (obj.get("spec") or {}).get("selector"):
            self._index_pdb(obj)
        self._mark(key)

    def _on_workload(self, event: WatchEvent) -> None:
        ns = event.entry.obj["metadata"].get("namespace") or ""
        for pdb in self._selectors.get(ns, {}):
            self._mark((ns, pdb))

    def _index_pdb(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ns, name = meta.get("namespace") or "", meta["name"]
        try:
            sel: LabelSelector | None = selector_from_object((obj.get("spec") or {}).get("selector"))
        except SelectorError:
            sel = None
        self._selectors.setdefault(ns, {})[name] = sel
        members: set[str] = set()
        if sel is not None:
            for (pns, pname), entry in self.store.table(PODS).items():
                if pns == ns and sel.matches(entry.obj):
                    members.add(pname)
        self._members[(ns, name)] = members
        self._mark((ns, name))

    def _mark(self, key: PdbKey) -> None:
        self._dirty[key] = None
        self._schedule()

    def _schedule(self) -> None:
        if self._handle is not None or not self._dirty:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (synchronous use): sync_all() runs the work
        if self.delay > 0:
            self._handle = loop.call_later(self.delay, self._run)
        else:
            self._handle = loop.call_soon(self._run)

    def _run(self) -> None:
        self._handle = None
        self.sync_all()

    # ------------------------------------------------------------------ stale DisruptionTarget conditions
    def _check_stale(self, pod: dict[str, Any], cond: dict[str, Any]) -> None:
        """nonTerminatingPodHasStaleDisruptionCondition: a DisruptionTarget=True condition on a pod that is not
        being deleted, not finished, and not put there by the kubelet is reset to False 2 minutes after it was
        set (stalePodDisruptionTimeout), e.g. when the delete after an eviction never happened."""
        meta = pod["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        if (
            cond.get("status") != "True"
            or meta.get("deletionTimestamp")
            or cond.get("reason") == "TerminationByKubelet"
            or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        ):
            self._stale.pop(key, None)
            return
        since = parse_time(cond.get("lastTransitionTime")) or self.clock()
        due = since + STALE_POD_DISRUPTION_TIMEOUT
        self._stale[key] = due
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # sync_all() sweeps
        delay = max((due - self.clock()).total_seconds(), 0.0)
        loop.call_later(delay + 0.01, self._sweep_stale)

    def _sweep_stale(self) -> None:
        now = self.clock()
        for key, due in list(self._stale.items()):
            if due > now:
                continue
            del self._stale[key]
            entry = self.store.get(PODS, key[0], key[1])
            if entry is None:
                continue
            obj = entry.copy()
            conds = (obj.get("status") or {}).get("conditions") or []
            target = next((c for c in conds if c.get("type") == "DisruptionTarget"), None)
            if target is None or target.get("status") != "True" or obj["metadata"].get("deletionTimestamp"):
                continue
            target["status"] = "False"
            target["lastTransitionTime"] = format_time(now)
            self.store.put(PODS, obj, previous=entry)

    # ------------------------------------------------------------------ sync
    def sync_all(self) -> None:
        if self._stale:
            self._sweep_stale()
        while self._dirty:
            keys = list(self._dirty)
            self._dirty.clear()
            for key in keys:
                try:
                    self.sync(key)
                except Exception:
                    log.exception("disruption controller: syncing PodDisruptionBudget %s/%s failed", *key)

    def sync(self, key: PdbKey) -> None:
        """disruption.go sync: recompute one PDB's status (or run the fail-safe)."""
        self.syncs += 1
        entry = self.store.get(PDBS, key[0], key[1])
        if entry is None:
            return
        try:
            self._try_sync(key, entry)
        except SyncError as exc:
            self._record(
                entry.obj,
                "Warning",
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {exc}",
            )
            self._fail_safe(entry, str(exc))

    def _pods(self, key: PdbKey) -> list[dict[str, Any]]:
        table = self.store.table(PODS)
        out = []
        for name in sorted(self._members.get(key, ())):
            pod = table.get((key[0], name))
            if pod is not None:
                out.append(pod.obj)
        return out

    def _try_sync(self, key: PdbKey, entry: Entry) -> None:
        pdb = entry.obj
        sel = self._selectors.get(key[0], {}).get(key[1])
        if sel is None:
            try:
                selector_from_object((pdb.get("spec") or {}).get("selector"))
            except SelectorError as exc:
                self._record(pdb, "Warning", "NoPods", f"Failed to get pods: {exc}")
                raise SyncError(str(exc)) from None
        pods = self._pods(key) if sel is not None else []
        if not pods:
            self._record(pdb, "Normal", "NoPods", "No matching pods found")
        expected, desired, unmanaged = self.expected_pod_count(pdb, pods)
        if unmanaged:
            self._record(
                pdb,
                "Warning",
                "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: {(pdb.get('spec') or {}).get('selector')}) "
                "were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
                'which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" '
                "field of the PDB to an integer value.",
            )
        now = self.clock()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now)
        healthy = 0
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            if meta["name"] in disrupted:
                continue  # (every entry kept is still within DeletionTimeout)
            if is_pod_ready(pod):
                healthy += 1
        self._update_status(entry, healthy, desired, expected, disrupted, now)
        if recheck is not None:
            self._recheck(key, (recheck - now).total_seconds())

    def expected_pod_count(self, pdb: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
        """getExpectedPodCount: (expectedCount, desiredHealthy, unmanaged pod names)."""
        spec = pdb.get("spec") or {}
        expected, desired = 0, 0
        unmanaged: list[str] = []
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = self.expected_scale(pods)
            desired = max(expected - scaled_value(spec["maxUnavailable"], expected), 0)
        elif spec.get("minAvailable") is not None:
            value = spec["minAvailable"]
            if isinstance(value, int) and not isinstance(value, bool):
                desired, expected = value, len(pods)
            else:
                expected, unmanaged = self.expected_scale(pods)
                desired = scaled_value(value, expected)
        return expected, desired, unmanaged

    def expected_scale(self, pods: list[dict[str, Any]]) -> tuple[int, list[str]]:
        """getExpectedScale: the sum of the scales of the pods' controllers, and the pods without one."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_ref(pod)
            name = pod["metadata"]["name"]
            if ref is None:
                unmanaged.append(name)
                continue
            if str(ref.get("uid", "")) in scales:
                continue
            found = self._find_controller(ref, pod["metadata"].get("namespace") or "")
            if found is None:
                raise SyncError(f'found no controllers for pod "{name}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    # ------------------------------------------------------------------ controller finders
    def _find_controller(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        for finder in (self._rc, self._deployment, self._replica_set, self._stateful_set, self._scale):
            found = finder(ref, ns)
            if found is not None:
                return found
        return None

    @staticmethod
    def _group(ref: dict[str, Any]) -> str:
        api_version = str(ref.get("apiVersion", ""))
        return api_version.rpartition("/")[0] if "/" in api_version else ""

    def _owned(self, skey: StorageKey, ref: dict[str, Any], ns: str) -> dict[str, Any] | None:
        entry = self.store.get(skey, ns, str(ref.get("name", "")))
        if entry is None or entry.obj["metadata"].get("uid") != ref.get("uid"):
            return None
        obj: dict[str, Any] = entry.obj
        return obj

    @staticmethod
    def _replicas(obj: dict[str, Any]) -> int:
        value = (obj.get("spec") or {}).get("replicas")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else 1  # defaulted to 1

    def _rc(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        if ref.get("kind") != "ReplicationController" or self._group(ref) != "":
            return None
        obj = self._owned(("", "replicationcontrollers"), ref, ns)
        return (obj["metadata"]["uid"], self._replicas(obj)) if obj else None

    def _rs_of(self, ref: dict[str, Any], ns: str) -> dict[str, Any] | None:
        if ref.get("kind") != "ReplicaSet" or self._group(ref) not in ("apps", "extensions"):
            return None
        return self._owned(("apps", "replicasets"), ref, ns)

    def _deployment(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        rs = self._rs_of(ref, ns)
        up = controller_ref(rs) if rs else None
        if up is None or up.get("kind") != "Deployment" or self._group(up) not in ("apps", "extensions"):
            return None
        obj = self._owned(("apps", "deployments"), up, ns)
        return (obj["metadata"]["uid"], self._replicas(obj)) if obj else None

    def _replica_set(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        rs = self._rs_of(ref, ns)
        if rs is None:
            return None
        up = controller_ref(rs)
        if up is not None and up.get("kind") == "Deployment":
            return None  # counted through its Deployment
        return rs["metadata"]["uid"], self._replicas(rs)

    def _stateful_set(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        if ref.get("kind") != "StatefulSet" or self._group(ref) != "apps":
            return None
        obj = self._owned(("apps", "statefulsets"), ref, ns)
        return (obj["metadata"]["uid"], self._replicas(obj)) if obj else None

    def _scale(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        """getScaleController: any served kind with the scale subresource (GET .../scale)."""
        api_version = str(ref.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        kind = ref.get("kind")
        rtype = next(
            (t for t in self.registry.served_types() if t.group == group and t.version == version and t.kind == kind),
            None,
        )
        if rtype is None:
            raise SyncError(f'no matches for kind "{kind}" in version "{api_version}"')
        resource = rtype.plural if not group else f"{rtype.plural}.{group}"
        if "scale" not in rtype.subresources and (group, kind) not in SCALE_BUILTINS:
            raise SyncError(f"{resource} does not implement the scale subresource")
        obj = self._owned((rtype.group, rtype.plural), ref, ns)
        if obj is None:
            return None
        path = ".spec.replicas"
        crd = self.store.get(CRDS, "", f"{rtype.plural}.{group}")
        if crd is not None:
            for v in (crd.obj.get("spec") or {}).get("versions") or []:
                if v.get("name") == version:
                    path = (((v.get("subresources") or {}).get("scale") or {}).get("specReplicasPath")) or path
        value: Any = obj
        for part in path.strip(".").split("."):
            value = value.get(part) if isinstance(value, dict) else None
        replicas = value if isinstance(value, int) and not isinstance(value, bool) else 0
        return obj["metadata"]["uid"], replicas

    # ------------------------------------------------------------------ status
    def _disrupted_pods(
        self, pdb: dict[str, Any], pods: list[dict[str, Any]], now: datetime.datetime
    ) -> tuple[dict[str, str], datetime.datetime | None]:
        """buildDisruptedPodMap: entries of pods not yet being deleted, within DeletionTimeout."""
        old = (pdb.get("status") or {}).get("disruptedPods") or {}
        out: dict[str, str] = {}
        recheck: datetime.datetime | None = None
        if not old:
            return out, None
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            stamp = old.get(meta["name"])
            when = parse_time(stamp)
            if when is None:
                continue
            expires = when + DELETION_TIMEOUT
            if expires < now:
                self._record(
                    pod,
                    "Warning",
                    "NotDeleted",
                    f"Pod was expected by PDB {pdb['metadata'].get('namespace')}/{pdb['metadata']['name']} "
                    "to be deleted but it wasn't",
                )
                continue
            if recheck is None or expires < recheck:
                recheck = expires
            out[meta["name"]] = str(stamp)
        return out, recheck

    def _update_status(
        self, entry: Entry, healthy: int, desired: int, expected: int, disrupted: dict[str, str], now: datetime.datetime
    ) -> None:
        pdb = entry.obj
        status = pdb.get("status") or {}
        generation = int(pdb["metadata"].get("generation") or 0)
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        if (
            int(status.get("currentHealthy") or 0) == healthy
            and int(status.get("desiredHealthy") or 0) == desired
            and int(status.get("expectedPods") or 0) == expected
            and int(status.get("disruptionsAllowed") or 0) == allowed
            and (status.get("disruptedPods") or {}) == disrupted
            and int(status.get("observedGeneration") or 0) == generation
            and conditions_up_to_date(pdb)
        ):
            return
        new: dict[str, Any] = {}
        if disrupted:
            new["disruptedPods"] = disrupted
        new.update(
            disruptionsAllowed=allowed,
            currentHealthy=healthy,
            desiredHealthy=desired,
            expectedPods=expected,
            observedGeneration=generation,
        )
        new["conditions"] = [dict(c) for c in status.get("conditions") or []]
        disruption_allowed_condition(new, format_time(now))
        self._write(entry, new)

    def _fail_safe(self, entry: Entry, message: str) -> None:
        status = dict(entry.obj.get("status") or {})
        status["disruptionsAllowed"] = 0
        conditions = [dict(c) for c in status.get("conditions") or []]
        set_condition(
            conditions,
            {
                "type": DISRUPTION_ALLOWED,
                "status": "False",
                "reason": SYNC_FAILED,
                "message": message,
                "observedGeneration": int(status.get("observedGeneration") or 0),
            },
            format_time(self.clock()),
        )
        status["conditions"] = conditions
        if status != entry.obj.get("status"):
            self._write(entry, status)

    def _write(self, entry: Entry, status: dict[str, Any]) -> None:
        obj = entry.copy()
        obj["status"] = status
        self.store.put(PDBS, obj, previous=entry)

    def _recheck(self, key: PdbKey, after: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        old = self._rechecks.pop(key, None)
        if old is not None:
            old.cancel()
        self._rechecks[key] = loop.call_later(max(after, 0.0) + 0.01, self._mark, key)

    # ------------------------------------------------------------------ events
    def _record(self, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        uid = str(meta.get("uid", ""))
        if self._events.get((uid, reason, kind)) == message:
            return
        self._events[(uid, reason, kind)] = message
        if len(self._events) > 10000:
            self._events.clear()
        ns = meta.get("namespace") or "default"
        stamp = format_time(self.clock())
        event = {
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": ns},
            "involvedObject": {
                "kind": obj.get("kind", ""),
                "apiVersion": obj.get("apiVersion", ""),
                "namespace": ns,
                "name": meta["name"],
                "uid": uid,
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": "controllermanager"},
            "reportingComponent": "controllermanager",
        }
        rtype = self.registry.resolve("", "v1", "events")
        if rtype is None:
            return

        try:
            self.registry.create(rtype, ns, event, RequestContext())
        except Exception as exc:  # an event is best effort, as in client-go's recorder
            log.debug("disruption controller: recording event %s failed: %s", reason, exc)


_PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)
_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _quoted(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def validate_pdb_spec(spec: Any) -> list[tuple[str, str, str]]:
    """pkg/apis/policy/validation ValidatePodDisruptionBudgetSpec: (field, detail, cause reason) problems."""
    if not isinstance(spec, dict):
        return [("spec", "Required value", "FieldValueRequired")]
    problems: list[tuple[str, str, str]] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        problems.append(
            ("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set", "FieldValueInvalid")
        )
    for name in ("minAvailable", "maxUnavailable"):
        value = spec.get(name)
        if value is None:
            continue
        where = f"spec.{name}"
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            problems.append(
                (
                    where,
                    f"Invalid value: {_quoted(value)}: must be an integer or percentage (e.g '5%')",
                    "FieldValueInvalid",
                )
            )
        elif isinstance(value, int):
            if value < 0:
                problems.append(
                    (where, f"Invalid value: {value}: must be greater than or equal to 0", "FieldValueInvalid")
                )
        elif not (value.endswith("%") and value[:-1].isdigit()):
            problems.append((where, f'Invalid value: "{value}": {_PERCENT_MSG}', "FieldValueInvalid"))
        elif int(value[:-1]) > 100:
            problems.append((where, f'Invalid value: "{value}": must not be greater than 100%', "FieldValueInvalid"))
    selector = spec.get("selector")
    if isinstance(selector, dict):
        for i, expr in enumerate(selector.get("matchExpressions") or []):
            where = f"spec.selector.matchExpressions[{i}]"
            if not isinstance(expr, dict):
                problems.append((where, "Invalid value: must be an object", "FieldValueInvalid"))
                continue
            op, values = expr.get("operator"), expr.get("values") or []
            if op in ("In", "NotIn") and not values:
                problems.append(
                    (
                        f"{where}.values",
                        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                        "FieldValueRequired",
                    )
                )
            elif op in ("Exists", "DoesNotExist") and values:
                problems.append(
                    (
                        f"{where}.values",
                        "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                        "FieldValueForbidden",
                    )
                )
            elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
                problems.append(
                    (
                        f"{where}.operator",
                        f"Invalid value: {_quoted(op)}: not a valid selector operator",
                        "FieldValueInvalid",
                    )
                )
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _POLICIES:
        supported = ", ".join(f'"{p}"' for p in _POLICIES)
        problems.append(
            (
                "spec.unhealthyPodEvictionPolicy",
                f"Unsupported value: {_quoted(policy)}: supported values: {supported}",
                "FieldValueNotSupported",
            )
        )
    return problems
