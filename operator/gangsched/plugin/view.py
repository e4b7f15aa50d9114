"""What `kubectl gang` shows, computed from raw API objects (dicts as the API server returns them); no I/O.

Contract:
- `gangs_of(podgroups, pods) -> dict[key, Gang]`: every gang in sight, keyed "namespace/name": each PodGroup, and
  each gang that pods name without one (annotation-only gangs before their PodGroup exists). A pod belongs to the
  gang it names (models/gang.py `referenced_gang`: the same name sources as the operator), its role is label or
  annotation `scheduling.gangsched.io/role`. A pod naming no gang belongs to the gang inferred from its workload
  (models/inferred.py) when the operator created that gang's PodGroup (annotation `gangsched.io/created-for:
  inferred gang`); its role is then its replica type, node type or replicated job. A gang's group is its
  PodGroup's `spec.gangGroup` or the members' Koordinator `gang.scheduling.koordinator.sh/groups` annotation (JSON
  list of "namespace/name").
- `render_tree(gangs, names, units) -> str`: for each requested gang (all when `names` is empty) its gang group, then
  the gang (phase, members scheduled/minMember, placed tier, message), its roles and their pods (node, the node's
  tier-1 topology unit from `units` when known, phase, gated). A gang group is shown once, with all its gangs.
- `render_top(gangs, now) -> str`: the gangs not yet scheduled (phase Pending, Scheduling, Timeout or none), longest
  waiting first: how long they have waited (since status.scheduleStartTime, else creation) and what blocks them
  (the Scheduled condition's message, else status.message).
- `explain_pod(pod, gang, events) -> str`: why a pod is pending (or where it runs): its schedulerName, scheduling
  gates, its PodScheduled condition, its gang's status and the most recent Warning events of the pod and PodGroup.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.naming import natural_key
from gangsched.models import keys
from gangsched.models.gang import referenced_gang
from gangsched.models.inferred import JOBSET_REPLICATED_JOB, KUBEFLOW_REPLICA_TYPE, RAY_NODE_TYPE, infer_member
from gangsched.models.timestamps import parse_time

Obj = Mapping[str, Any]
WAITING_PHASES = frozenset({"", "Pending", "Scheduling", "Timeout"})
CREATED_FOR = "gangsched.io/created-for"  # k8s/api.py podgroup_manifest: "inferred gang" for a workload's gang


@dataclass(slots=True)
class Gang:
    key: str
    podgroup: Obj | None = None
    pods: list[Obj] = field(default_factory=list)
    group: tuple[str, ...] = ()  # its gang group's keys (itself included), () when alone

    @property
    def status(self) -> Obj:
        return (self.podgroup or {}).get("status") or {}

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def min_member(self) -> int | None:
        value = ((self.podgroup or {}).get("spec") or {}).get("minMember")
        if isinstance(value, int):
            return value
        for pod in self.pods:
            raw = _annotations(pod).get(keys.KOORD_MIN_AVAILABLE) or _annotations(pod).get(keys.LEGACY_MIN_AVAILABLE)
            if isinstance(raw, str) and raw.isdigit() and len(raw) < 10:
                return int(raw)
        return None

    def blocker(self) -> str:
        for cond in self.status.get("conditions") or []:
            if isinstance(cond, Mapping) and cond.get("type") == "Scheduled" and cond.get("status") != "True":
                return str(cond.get("message") or cond.get("reason") or "")
        return str(self.status.get("message") or ("no PodGroup yet" if self.podgroup is None else ""))


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _annotations(obj: Obj) -> Obj:
    value = _meta(obj).get("annotations")
    return value if isinstance(value, Mapping) else {}


def _labels(obj: Obj) -> Obj:
    value = _meta(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


def key_of(obj: Obj) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _group_of(gang: Gang) -> tuple[str, ...]:
    namespace = gang.key.split("/", 1)[0]
    names = ((gang.podgroup or {}).get("spec") or {}).get("gangGroup")
    if not isinstance(names, list):
        names = None
        for pod in gang.pods:
            raw = _annotations(pod).get(keys.KOORD_GROUPS)
            try:
                parsed = json.loads(raw) if isinstance(raw, str) else None
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                names = parsed
                break
    if not names:
        return ()
    found = {n if "/" in n else f"{namespace}/{n}" for n in names if isinstance(n, str)}
    found.add(gang.key)
    return tuple(sorted(found)) if len(found) > 1 else ()


def gangs_of(podgroups: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, Gang]:
    gangs: dict[str, Gang] = {}
    for pg in podgroups:
        gangs[key_of(pg)] = Gang(key_of(pg), podgroup=pg)
    for pod in pods:
        named = referenced_gang(pod)
        if named is not None:
            gangs.setdefault(named, Gang(named)).pods.append(pod)
        elif (inferred := _inferred_gang(pod, gangs)) is not None:
            inferred.pods.append(pod)
    for gang in gangs.values():
        gang.pods.sort(key=lambda p: natural_key(str(_meta(p).get("name"))))
        gang.group = _group_of(gang)
    return gangs


def _inferred_gang(pod: Obj, gangs: Mapping[str, Gang]) -> Gang | None:
    """The gang inferred from the pod's workload (models/inferred.py), when the operator created its PodGroup."""
    try:
        member = infer_member(pod)
    except InvalidField:
        return None
    if member is None:
        return None
    gang = gangs.get(f"{member.workload.namespace}/{member.gang}")
    created_for = _annotations(gang.podgroup or {}).get(CREATED_FOR) if gang is not None else None
    return gang if created_for == "inferred gang" else None


def _role(pod: Obj) -> str:
    role = _labels(pod).get(keys.ROLE) or _annotations(pod).get(keys.ROLE)
    if not role:  # a pod of an inferred gang: its replica / node type, replicated job
        for key in (KUBEFLOW_REPLICA_TYPE, RAY_NODE_TYPE, JOBSET_REPLICATED_JOB):
            role = _labels(pod).get(key)
            if role:
                break
    return str(role or "")


def _pod_line(pod: Obj, units: Mapping[str, str]) -> str:
    spec = pod.get("spec") or {}
    node = spec.get("nodeName") or "-"
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    parts = [str(_meta(pod).get("name")), f"node={node}"]
    if node in units:
        parts.append(f"unit={units[node]}")
    parts.append(str(phase))
    if spec.get("schedulingGates"):
        parts.append("gated")
    if _meta(pod).get("deletionTimestamp"):
        parts.append("terminating")
    return "  ".join(parts)


def _gang_lines(gang: Gang, units: Mapping[str, str], indent: str) -> list[str]:
    status = gang.status
    head = [f"gang {gang.key}", gang.phase or "(no status)"]
    scheduled = status.get("scheduled")
    head.append(f"members {scheduled if isinstance(scheduled, int) else 0}/{gang.min_member or '?'} bound")
    if status.get("placedTier") is not None:
        head.append(f"tier {status['placedTier']}")
    if gang.podgroup is None:
        head.append("(no PodGroup)")
    lines = [indent + "  ".join(head)]
    message = gang.blocker() if gang.phase in WAITING_PHASES else str(status.get("message") or "")
    if message:
        lines.append(f"{indent}  message: {message}")
    by_role: dict[str, list[Obj]] = {}
    for pod in gang.pods:
        by_role.setdefault(_role(pod), []).append(pod)
    for role in sorted(by_role):
        members = by_role[role]
        inner = indent + "  "
        if role:
            lines.append(f"{inner}role {role} ({len(members)})")
            inner += "  "
        lines.extend(inner + "- " + _pod_line(pod, units) for pod in members)
    if not gang.pods:
        lines.append(f"{indent}  (no pods)")
    return lines


def render_tree(gangs: Mapping[str, Gang], names: Sequence[str], units: Mapping[str, str]) -> str:
    wanted = [k for k in gangs if not names or k in names or k.split("/", 1)[1] in names]
    lines: list[str] = []
    shown: set[str] = set()
    for key in sorted(wanted):
        if key in shown:
            continue
        gang = gangs[key]
        if gang.group:
            lines.append(f"group [{', '.join(gang.group)}]")
            for member in gang.group:
                shown.add(member)
                if member in gangs:
                    lines.extend(_gang_lines(gangs[member], units, "  "))
                else:
                    lines.append(f"  gang {member}  (missing: no PodGroup and no pods)")
        else:
            shown.add(key)
            lines.extend(_gang_lines(gang, units, ""))
    return "\n".join(lines) if lines else "No gangs found."


def _since(gang: Gang) -> float | None:
    start = gang.status.get("scheduleStartTime") or _meta(gang.podgroup or {}).get("creationTimestamp")
    if not start and gang.pods:
        start = _meta(gang.pods[0]).get("creationTimestamp")
    try:
        return parse_time(start, field="scheduleStartTime")
    except InvalidField:
        return None


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def render_top(gangs: Mapping[str, Gang], now: float) -> str:
    rows = []
    for gang in gangs.values():
        if gang.phase not in WAITING_PHASES:
            continue
        since = _since(gang)
        waited = now - since if since is not None else 0.0
        bound = sum(1 for p in gang.pods if (p.get("spec") or {}).get("nodeName"))
        members = f"{bound}/{gang.min_member or '?'}"
        rows.append((waited, gang.key, gang.phase or "-", members, _duration(waited), gang.blocker() or "-"))
    if not rows:
        return "No waiting gangs."
    rows.sort(key=lambda r: (-r[0], r[1]))
    table = [("GANG", "PHASE", "BOUND/MIN", "WAITING", "BLOCKED BY")] + [r[1:] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    return "\n".join(
        "   ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "   " + row[4] for row in table
    )


def _pod_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "PodScheduled":
            return cond
    return None


def explain_pod(pod: Obj, gang: Gang | None, events: Sequence[Obj]) -> str:
    spec = pod.get("spec") or {}
    name = key_of(pod)
    lines = []
    if spec.get("nodeName"):
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        lines.append(f"pod {name} is bound to {spec['nodeName']} ({phase}).")
    else:
        lines.append(f"pod {name} is pending (schedulerName {spec.get('schedulerName') or 'default-scheduler'}).")
    gates = [g.get("name") for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)]
    if gates:
        lines.append(f"scheduling gates: {', '.join(map(str, gates))} (never scheduled until they are removed)")
    cond = _pod_condition(pod)
    if cond is not None and cond.get("status") != "True":
        lines.append(f"PodScheduled=False {cond.get('reason') or ''}: {cond.get('message') or ''}".rstrip(": "))
    if gang is None:
        lines.append("gang: none (scheduled alone)")
    else:
        lines.append(f"gang {gang.key}: {gang.phase or '(no status)'}; {gang.blocker() or 'no message'}")
    warnings = [e for e in events if e.get("type") == "Warning"]
    warnings.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""), reverse=True)
    for event in warnings[:5]:
        obj = event.get("involvedObject") or {}
        lines.append(f"event {obj.get('kind')}/{obj.get('name')} {event.get('reason')}: {event.get('message')}")
    return "\n".join(lines)
