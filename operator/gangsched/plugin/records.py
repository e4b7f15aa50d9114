"""What `kubectl gang -o json|yaml` prints: the facts plugin/view.py shows as text, as plain data with stable keys.
Pure (API objects in, dicts out). The keys are a contract (docs/cli.md): new keys may be added, none renamed or
removed.

Contract:
- `tree_record(gangs, keys, units, workloads=())`: `{"kind": "GangList", "gangs": [...], "workloads": [...]}`,
  each gang `{namespace, name, phase, minMember, scheduled, placedTier, podGroup, nativePodGroup, workload, group,
  message, pods}`, each pod `{name, role, node, unit, phase, gated, terminating}`; unknown values null.
- `top_record(gangs, now)`: `{"kind": "WaitingGangList", "gangs": [...]}`, longest waiting first, each
  `{namespace, name, phase, bound, minMember, waitingSeconds, blockedBy}` (blockedBy never truncated).
- `why_record(pod, gang, events)`: `{"kind": "PodExplanation", namespace, name, node, phase, schedulerName,
  schedulingGates, podScheduled, gang, events}` (the five most recent Warnings). More: docs/modules.md#pluginrecordspy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.plugin.native import WorkloadRow, workload_record
from gangsched.plugin.view import (
    WAITING_PHASES,
    Gang,
    Obj,
    bound_count,
    pod_condition,
    pod_facts,
    recent_warnings,
    waiting_rows,
)


def _split(key: str) -> dict[str, str]:
    namespace, _, name = key.partition("/")
    return {"namespace": namespace, "name": name}


def gang_record(gang: Gang, units: Mapping[str, str]) -> dict[str, Any]:
    status = gang.status
    tier = status.get("placedTier")
    message = gang.blocker() if gang.phase in WAITING_PHASES else str(status.get("message") or "")
    return {
        **_split(gang.key),
        "phase": gang.phase,
        "minMember": gang.min_member,
        "scheduled": gang.scheduled,
        "placedTier": tier if isinstance(tier, int) else None,
        "podGroup": gang.podgroup is not None,
        "nativePodGroup": gang.native is not None,
        "workload": {"name": ref[0], "template": ref[1]} if (ref := gang.workload) is not None else None,
        "group": list(gang.group),
        "message": message,
        "pods": [pod_facts(pod, units) for pod in gang.pods],
    }


def tree_record(
    gangs: Mapping[str, Gang], keys: Sequence[str], units: Mapping[str, str], workloads: Sequence[WorkloadRow] = ()
) -> dict[str, Any]:
    return {
        "kind": "GangList",
        "gangs": [gang_record(gangs[k], units) for k in keys if k in gangs],
        "workloads": [workload_record(row) for row in workloads],
    }


def top_record(gangs: Mapping[str, Gang], now: float) -> dict[str, Any]:
    rows = [
        {
            **_split(gang.key),
            "phase": gang.phase,
            "bound": bound_count(gang),
            "minMember": gang.min_member,
            "waitingSeconds": round(waited, 3),
            "blockedBy": gang.blocker(),
        }
        for waited, gang in waiting_rows(gangs, now)
    ]
    return {"kind": "WaitingGangList", "gangs": rows}


def why_record(pod: Obj, gang: Gang | None, events: Sequence[Obj]) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    cond = pod_condition(pod)
    gates = [str(g.get("name")) for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)]
    return {
        "kind": "PodExplanation",
        "namespace": str(meta.get("namespace") or "default"),
        "name": str(meta.get("name")),
        "node": spec.get("nodeName") or None,
        "phase": str((pod.get("status") or {}).get("phase") or "Pending"),
        "schedulerName": str(spec.get("schedulerName") or "default-scheduler"),
        "schedulingGates": gates,
        "podScheduled": None if cond is None else {k: str(cond.get(k) or "") for k in ("status", "reason", "message")},
        "gang": None if gang is None else {**_split(gang.key), "phase": gang.phase, "blockedBy": gang.blocker()},
        "events": [
            {
                "kind": str((e.get("involvedObject") or {}).get("kind")),
                "name": str((e.get("involvedObject") or {}).get("name")),
                "reason": str(e.get("reason") or ""),
                "message": str(e.get("message") or ""),
            }
            for e in recent_warnings(events)
        ],
    }
