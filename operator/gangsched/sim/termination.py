"""The end of a graceful pod deletion: what a node's kubelet does once a bound pod has a deletionTimestamp, run
in-process for every node so that every emulated cluster finishes graceful deletions.

Contract: `PodTerminator(registry)`; the registry calls `deleting(rtype, entry)` whenever it stores a bound pod
being deleted with grace left. The pod is stopped `sim.gangsched.io/termination-delay` (a Go duration; default 0;
a bad value logged and taken as 0) after it was first seen deleting, but never later than its grace period
allows; then the final DELETE (grace 0, UID precondition) is sent through the registry. Without a running event
loop the pod is finished at once.
More: docs/modules.md#simterminationpy.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from gangsched.core import InvalidField
from gangsched.models.duration import parse_duration
from gangsched.sim import status as st
from gangsched.sim.request import RegistryCalls, RequestContext
from gangsched.sim.store import Entry
from gangsched.sim.types import ResourceType

log = logging.getLogger(__name__)

TERMINATION_DELAY_ANNOTATION = "sim.gangsched.io/termination-delay"


def termination_delay(pod: dict[str, Any]) -> float:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(TERMINATION_DELAY_ANNOTATION)
    if raw is None or (isinstance(raw, str) and raw.strip() in ("0", "0s")):
        return 0.0
    try:
        return max(0.0, float(parse_duration(raw, field=f"metadata.annotations[{TERMINATION_DELAY_ANNOTATION}]")))
    except InvalidField as exc:
        meta = pod.get("metadata") or {}
        log.warning("pod %s/%s: %s; it stops at once", meta.get("namespace"), meta.get("name"), exc)
        return 0.0


class PodTerminator:
    def __init__(self, registry: RegistryCalls) -> None:
        self._registry = registry
        self._first_seen: dict[str, float] = {}  # pod uid -> loop time its deletion was first seen

    def deleting(self, rtype: ResourceType, entry: Entry) -> None:
        pod = entry.obj
        meta = pod["metadata"]
        uid = str(meta.get("uid"))
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        delay = min(termination_delay(pod), grace)
        key = (rtype, str(meta.get("namespace") or ""), str(meta["name"]), uid)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._finish(*key)
            return
        first = self._first_seen.setdefault(uid, loop.time())
        loop.call_at(first + delay, self._finish, *key)

    def _finish(self, rtype: ResourceType, namespace: str, name: str, uid: str) -> None:

        current = self._registry.store.get((rtype.group, rtype.plural), namespace, name)
        if current is None or current.obj["metadata"].get("uid") != uid:
            self._first_seen.pop(uid, None)
            return
        if not current.obj["metadata"].get("deletionGracePeriodSeconds"):
            self._first_seen.pop(uid, None)  # already finished (waiting for finalizers) or removed
            return
        try:
            self._registry.delete(
                rtype,
                namespace,
                name,
                RequestContext(),
                options={"gracePeriodSeconds": 0, "preconditions": {"uid": uid}},
            )
        except st.ApiError as exc:
            if exc.code not in (404, 409):
                log.warning("sim kubelet: the final deletion of pod %s/%s failed: %s", namespace, name, exc.message)
        self._first_seen.pop(uid, None)
