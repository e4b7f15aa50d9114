"""A simulated kubelet for every node of the emulator: bound pods start running, and finish when asked to.

Contract:
- `SimKubelet(client, *, start_delay=0.0, nodes=None, concurrency=64)`; `await kubelet.run()` until cancelled;
  manages the nodes named in `nodes`, or every Ready node.
- A bound Pending pod (not being deleted) runs `start_delay` seconds after it is seen (a status patch: Running,
  Ready conditions, IPs, container statuses); one annotated `sim.gangsched.io/duration: <Go duration>` succeeds
  that long after it started (a bad one is logged and ignored). Pods being deleted: sim/termination.py.
- DRA (sim/dra/node.py): a pod with `spec.resourceClaims` starts only once every claim is allocated and reserved
  for it (or its PodGroup); until then it waits in ContainerCreating with a FailedPrepareDynamicResources event.
- `synced` is set once the lists were seen; `started`, `succeeded`, `patch_errors` count what happened.
More: docs/modules.md#simkubeletpy.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import logging
from typing import Any

from gangsched.core import InvalidField
from gangsched.k8s.client import ApiError, KubeClient
from gangsched.k8s.reflector import Reflector
from gangsched.models.duration import parse_duration
from gangsched.models.timestamps import format_time
from gangsched.sim.dra import node as dra_node
from gangsched.sim.table import parse_timestamp

log = logging.getLogger(__name__)

DURATION_ANNOTATION = "sim.gangsched.io/duration"

Key = tuple[str, str]  # (namespace, name)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _stamp(when: datetime.datetime) -> str:
    return format_time(when)


def _key(pod: dict[str, Any]) -> Key:
    meta = pod.get("metadata") or {}
    return (str(meta.get("namespace", "")), str(meta.get("name", "")))


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _node_ip(node: dict[str, Any]) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return None


def pod_ip(index: int) -> str:
    """The index-th fake pod IP (10.128.0.0/9: unique for 8 million pods)."""
    return f"10.{128 + ((index >> 16) & 127)}.{(index >> 8) & 255}.{index & 255}"


def running_status(pod: dict[str, Any], *, pod_ip: str, host_ip: str, now: datetime.datetime) -> dict[str, Any]:
    """The status a kubelet reports once every container of the pod runs."""
    stamp = _stamp(now)
    containers = (pod.get("spec") or {}).get("containers") or []
    return {
        "phase": "Running",
        "conditions": [
            {"type": cond, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
            for cond in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": stamp,
        "qosClass": "BestEffort",
        "containerStatuses": [
            {
                "name": c.get("name", f"c{i}"),
                "image": c.get("image", ""),
                "imageID": f"sim://{c.get('image', '')}",
                "containerID": f"sim://{_key(pod)[1]}-{i}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": stamp}},
            }
            for i, c in enumerate(containers)
        ],
    }


def succeeded_status(pod: dict[str, Any], *, now: datetime.datetime) -> dict[str, Any]:
    """The status a kubelet reports once every container exited 0."""
    stamp = _stamp(now)
    status = pod.get("status") or {}
    started = status.get("startTime") or stamp
    conditions = []
    for cond in status.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            cond = dict(cond, status="False", reason="PodCompleted", lastTransitionTime=stamp)
        conditions.append(cond)
    previous = {cs.get("name"): cs for cs in status.get("containerStatuses") or []}
    containers = (pod.get("spec") or {}).get("containers") or []
    statuses = []
    for i, c in enumerate(containers):
        name = c.get("name", f"c{i}")
        before = previous.get(name) or {}
        statuses.append(
            {
                **before,
                "name": name,
                "ready": False,
                "started": False,
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": ((before.get("state") or {}).get("running") or {}).get("startedAt", started),
                        "finishedAt": stamp,
                        "containerID": before.get("containerID", f"sim://{_key(pod)[1]}-{i}"),
                    }
                },
            }
        )
    return {"phase": "Succeeded", "conditions": conditions, "containerStatuses": statuses}


class SimKubelet:
    """The simulated kubelet of all (or some) nodes (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        start_delay: float = 0.0,
        nodes: set[str] | None = None,
        concurrency: int = 64,
    ) -> None:
        self._client = client
        self._start_delay = start_delay
        self._only = set(nodes) if nodes is not None else None
        self._concurrency = max(1, concurrency)
        self._nodes: dict[str, dict[str, Any]] = {}
        self._pods: dict[Key, dict[str, Any]] = {}
        self._waiting_by_node: dict[str, set[Key]] = {}
        self._queued: set[Key] = set()
        self._queue: asyncio.Queue[tuple[str, Key]] = asyncio.Queue()
        self._timers: dict[Key, asyncio.TimerHandle | None] = {}  # None: a bad duration, already reported
        self._started_at: dict[Key, float] = {}  # loop time our Running patch was sent
        self._ips = itertools.count(1)
        self._claims: dict[Key, dict[str, Any]] = {}  # resource.k8s.io/v1 ResourceClaims
        self._waiting_claims: dict[Key, str] = {}  # pod -> why its claims are not ready (reported once)
        self._nodes_synced = False
        self._pods_synced = False
        self._claims_synced = False
        self.synced = asyncio.Event()
        self.started = 0
        self.succeeded = 0
        self.patch_errors = 0

    # ------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """List+watch nodes and pods and act on them, until cancelled."""
        node_reflector = Reflector(self._client, "/api/v1/nodes", on_list=self._nodes_listed, on_event=self._node_event)
        pod_reflector = Reflector(self._client, "/api/v1/pods", on_list=self._pods_listed, on_event=self._pod_event)
        tasks = [asyncio.create_task(node_reflector.run(), name="sim-kubelet-nodes")]
        tasks.append(asyncio.create_task(pod_reflector.run(), name="sim-kubelet-pods"))
        claim_reflector = Reflector(
            self._client,
            "/apis/resource.k8s.io/v1/resourceclaims",
            on_list=self._claims_listed,
            on_event=self._claim_event,
        )
        tasks.append(asyncio.create_task(claim_reflector.run(), name="sim-kubelet-claims"))
        tasks += [asyncio.create_task(self._worker(), name=f"sim-kubelet-worker-{i}") for i in range(self._concurrency)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for timer in self._timers.values():
                if timer is not None:
                    timer.cancel()
            self._timers.clear()

    # ------------------------------------------------------------ nodes

    def _managed(self, node_name: str) -> bool:
        node = self._nodes.get(node_name)
        if node is None:
            return False
        return node_name in self._only if self._only is not None else _node_ready(node)

    def _nodes_listed(self, items: list[dict[str, Any]]) -> None:
        self._nodes = {str((n.get("metadata") or {}).get("name")): n for n in items}
        self._nodes_synced = True
        self._check_synced()
        for name in list(self._waiting_by_node):
            self._wake_node(name)

    def _node_event(self, kind: str, node: dict[str, Any]) -> None:
        name = str((node.get("metadata") or {}).get("name"))
        if kind == "DELETED":
            self._nodes.pop(name, None)
            return
        self._nodes[name] = node
        self._wake_node(name)

    def _wake_node(self, name: str) -> None:
        if not self._managed(name):
            return
        for key in list(self._waiting_by_node.pop(name, ())):
            pod = self._pods.get(key)
            if pod is not None:
                self._consider(pod)

    def _check_synced(self) -> None:
        if self._nodes_synced and self._pods_synced and self._claims_synced:
            self.synced.set()

    # ------------------------------------------------------------ resource claims (DRA)

    def _claims_listed(self, items: list[dict[str, Any]]) -> None:
        self._claims = {_key(c): c for c in items}
        self._claims_synced = True
        self._check_synced()
        self._wake_claim_waiters()

    def _claim_event(self, kind: str, claim: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._claims.pop(_key(claim), None)
        else:
            self._claims[_key(claim)] = claim
        self._wake_claim_waiters()

    def _wake_claim_waiters(self) -> None:
        for key in list(self._waiting_claims):
            pod = self._pods.get(key)
            if pod is not None:
                self._consider(pod)

    # ------------------------------------------------------------ pods

    def _pods_listed(self, items: list[dict[str, Any]]) -> None:
        fresh = {_key(p): p for p in items}
        for key in set(self._pods) - set(fresh):
            self._forget(key)
        self._pods = fresh
        self._pods_synced = True
        self._check_synced()
        for pod in items:
            self._consider(pod)

    def _pod_event(self, kind: str, pod: dict[str, Any]) -> None:
        key = _key(pod)
        if kind == "DELETED":
            self._pods.pop(key, None)
            self._forget(key)
            return
        self._pods[key] = pod
        self._consider(pod)

    def _forget(self, key: Key) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._started_at.pop(key, None)
        self._waiting_claims.pop(key, None)
        for waiting in self._waiting_by_node.values():
            waiting.discard(key)

    def _consider(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            self._forget(_key(pod))
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        key = _key(pod)
        if phase == "Pending":
            if not self._managed(node_name):
                self._waiting_by_node.setdefault(node_name, set()).add(key)
                return
            if key in self._queued or key in self._started_at:
                return
            if (pod.get("spec") or {}).get("resourceClaims") and self._claims_unready(key, pod):
                return
            self._queued.add(key)
            if self._start_delay > 0:
                asyncio.get_running_loop().call_later(self._start_delay, self._queue.put_nowait, ("run", key))
            else:
                self._queue.put_nowait(("run", key))
        elif phase == "Running" and key not in self._timers:
            self._arm_completion(pod)

    def _claims_unready(self, key: Key, pod: dict[str, Any]) -> bool:
        """PrepareResources: True (and reported once per reason) while a claim is not allocated and reserved."""
        why = dra_node.unprepared(pod, self._claims)
        if why is None:
            self._waiting_claims.pop(key, None)
            return False
        if self._waiting_claims.get(key) != why:
            self._waiting_claims[key] = why
            self._queue.put_nowait(("wait", key))
        return True

    def _arm_completion(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        raw = (meta.get("annotations") or {}).get(DURATION_ANNOTATION)
        if raw is None:
            return
        key = _key(pod)
        try:
            duration = parse_duration(raw, field=f"metadata.annotations[{DURATION_ANNOTATION}]")
        except InvalidField as exc:
            log.warning("pod %s/%s: %s; it keeps running", key[0], key[1], exc)
            self._timers[key] = None
            return
        loop = asyncio.get_running_loop()
        started = self._started_at.get(key)
        if started is not None:
            delay = started + duration - loop.time()
        else:
            start = parse_timestamp((pod.get("status") or {}).get("startTime"))
            delay = duration - ((_now() - start).total_seconds() if start else 0.0)
        self._timers[key] = loop.call_later(max(0.0, delay), self._queue.put_nowait, ("finish", key))

    # ------------------------------------------------------------ status writes

    async def _worker(self) -> None:
        while True:
            action, key = await self._queue.get()
            try:
                if action == "run":
                    await self._start(key)
                elif action == "wait":
                    await self._report_waiting(key)
                else:
                    await self._finish(key)
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                if exc.status != 404:
                    self.patch_errors += 1
                    log.warning("sim kubelet: %s of pod %s/%s failed: %s", action, key[0], key[1], exc)
                    if exc.transient:
                        asyncio.get_running_loop().call_later(0.5, self._retry, action, key)
            except Exception:
                self.patch_errors += 1
                log.exception("sim kubelet: %s of pod %s/%s failed", action, key[0], key[1])
            finally:
                if action == "run":
                    self._queued.discard(key)

    def _retry(self, action: str, key: Key) -> None:
        pod = self._pods.get(key)
        if pod is None:
            return
        if action == "wait":
            self._waiting_claims.pop(key, None)  # report again
            self._consider(pod)
        elif action == "run":
            self._consider(pod)
        else:
            self._queue.put_nowait(("finish", key))

    def _path(self, key: Key) -> str:
        return f"/api/v1/namespaces/{key[0]}/pods/{key[1]}/status"

    async def _start(self, key: Key) -> None:
        pod = self._pods.get(key)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        if ((pod.get("status") or {}).get("phase") or "Pending") != "Pending":
            return
        node = self._nodes.get(str((pod.get("spec") or {}).get("nodeName")))
        host_ip = (_node_ip(node) if node else None) or "10.250.0.1"
        status = running_status(pod, pod_ip=pod_ip(next(self._ips)), host_ip=host_ip, now=_now())
        self._started_at[key] = asyncio.get_running_loop().time()
        try:
            await self._client.patch(self._path(key), {"status": status})
        except BaseException:
            self._started_at.pop(key, None)
            raise
        self.started += 1

    async def _report_waiting(self, key: Key) -> None:
        pod, why = self._pods.get(key), self._waiting_claims.get(key)
        if pod is None or why is None:
            return
        stamp = _stamp(_now())
        await self._client.patch(self._path(key), {"status": dra_node.waiting_status(pod, stamp)})
        meta = pod.get("metadata") or {}
        event = {
            "metadata": {"generateName": f"{key[1]}.", "namespace": key[0]},
            "involvedObject": {
                "kind": "Pod",
                "apiVersion": "v1",
                "namespace": key[0],
                "name": key[1],
                "uid": meta.get("uid"),
            },
            "reason": dra_node.FAILED_PREPARE,
            "message": f"Failed to prepare dynamic resources: {why}",
            "type": "Warning",
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": "kubelet", "host": (pod.get("spec") or {}).get("nodeName", "")},
        }
        await self._client.create(f"/api/v1/namespaces/{key[0]}/events", event)

    async def _finish(self, key: Key) -> None:
        pod = self._pods.get(key)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        if (pod.get("status") or {}).get("phase") != "Running":
            return
        await self._client.patch(self._path(key), {"status": succeeded_status(pod, now=_now())})
        self.succeeded += 1
