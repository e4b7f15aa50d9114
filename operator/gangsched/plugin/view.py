"""What `kubectl gang` shows, computed from raw API objects (dicts as the API server returns them); no I/O.

Contract:
- `gangs_of(podgroups, pods, native=()) -> dict[key, Gang]`: every gang in sight: each PodGroup, each native
  PodGroup (`Gang.native`), and each gang pods name without one; a pod belongs to the gang it names (the operator's
  name sources), or to its inferred gang when the operator created that gang's PodGroup; its role from its label.
- `render_tree(gangs, names, units, workloads=())`: the Workloads, then each requested gang (all when no `names`)
  with its gang group, phase, members scheduled/minMember, placed tier, message, roles and pods (node, tier-1 unit,
  phase, gated). `tree_keys(gangs, names)`, `unmatched(gangs, names, workloads=())`.
- `render_top(gangs, now, width=120)`: the gangs not yet scheduled, longest waiting first, with what blocks them,
  cut to `width` columns (None: not cut).
- `explain_pod(pod, gang, events)`: why a pod is pending (or where it runs). More: docs/modules.md#pluginviewpy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangsched.core import InvalidField, natural_key
from gangsched.models import keys
from gangsched.models.gang import referenced_gang
from gangsched.models.inferred import JOBSET_REPLICATED_JOB, KUBEFLOW_REPLICA_TYPE, RAY_NODE_TYPE, infer_member
from gangsched.models.timestamps import parse_time
from gangsched.plugin import native as nat

Obj = Mapping[str, Any]
WAITING_PHASES = frozenset({"", "Pending", "Scheduling", "Timeout"})
TOP_WIDTH = 120  # columns `kubectl gang top` fits a line in (BLOCKED BY cut), unless -o wide
MIN_BLOCKER = 20  # characters of BLOCKED BY kept however wide the other columns are
CREATED_FOR = "gangsched.io/created-for"  # k8s/api.py podgroup_manifest: "inferred gang" for a workload's gang


@dataclass(slots=True)
class Gang:
    key: str
    podgroup: Obj | None = None
    pods: list[Obj] = field(default_factory=list)
    group: tuple[str, ...] = ()  # its gang group's keys (itself included), () when alone
    native: Obj | None = None  # its Kubernetes 1.37 PodGroup (scheduling.k8s.io/v1beta1), if any

    @property
    def status(self) -> Obj:
        return (self.podgroup or {}).get("status") or {}

    @property
    def phase(self) -> str:
        if self.podgroup is None and self.native is not None:
            if nat.is_basic(self.native):
                return "Basic"  # no gang: never a waiting gang (`top`), its pods go one by one
            cond = nat.initially_scheduled(self.native)
            return "Scheduled" if cond is not None and cond.get("status") == "True" else ""
        return str(self.status.get("phase") or "")

    @property
    def scheduled(self) -> int:
        """Members bound: the PodGroup status's count, else (a native gang alone) the bound pods."""
        value = self.status.get("scheduled")
        if isinstance(value, int):
            return value
        if self.podgroup is None and self.native is not None:
            return sum(1 for p in self.pods if (p.get("spec") or {}).get("nodeName"))
        return 0

    @property
    def workload(self) -> tuple[str, str] | None:
        """(Workload name, template name) of its native PodGroup's workloadRef."""
        return nat.workload_ref(self.native) if self.native is not None else None

    @property
    def min_member(self) -> int | None:
        value = ((self.podgroup or {}).get("spec") or {}).get("minMember")
        if isinstance(value, int):
            return value
        if self.native is not None and (count := nat.min_count(self.native)) is not None:
            return count
        for pod in self.pods:
            raw = _annotations(pod).get(keys.KOORD_MIN_AVAILABLE) or _annotations(pod).get(keys.LEGACY_MIN_AVAILABLE)
            if isinstance(raw, str) and raw.isdigit() and len(raw) < 10:
                return int(raw)
        return None

    def blocker(self) -> str:
        for cond in self.status.get("conditions") or []:
            if isinstance(cond, Mapping) and cond.get("type") == "Scheduled" and cond.get("status") != "True":
                return str(cond.get("message") or cond.get("reason") or "")
        if self.podgroup is None and self.native is not None:
            cond = nat.initially_scheduled(self.native)
            return str(cond.get("message") or "") if cond is not None and cond.get("status") == "False" else ""
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


def gangs_of(podgroups: Iterable[Obj], pods: Iterable[Obj], native: Iterable[Obj] = ()) -> dict[str, Gang]:
    gangs: dict[str, Gang] = {}
    for pg in podgroups:
        gangs[key_of(pg)] = Gang(key_of(pg), podgroup=pg)
    for pg in native:
        gangs.setdefault(key_of(pg), Gang(key_of(pg))).native = pg
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


def pod_facts(pod: Obj, units: Mapping[str, str]) -> dict[str, Any]:
    """A member pod as the tree shows it: name, role, node and unit (None when unknown), phase, gated, terminating."""
    spec = pod.get("spec") or {}
    node = spec.get("nodeName") or None
    return {
        "name": str(_meta(pod).get("name")),
        "role": _role(pod),
        "node": node,
        "unit": units.get(node) if node else None,
        "phase": str((pod.get("status") or {}).get("phase") or "Pending"),
        "gated": bool(spec.get("schedulingGates")),
        "terminating": bool(_meta(pod).get("deletionTimestamp")),
    }


def _pod_line(pod: Obj, units: Mapping[str, str]) -> str:
    facts = pod_facts(pod, units)
    parts = [facts["name"], f"node={facts['node'] or '-'}"]
    if facts["unit"] is not None:
        parts.append(f"unit={facts['unit']}")
    parts.append(facts["phase"])
    if facts["gated"]:
        parts.append("gated")
    if facts["terminating"]:
        parts.append("terminating")
    return "  ".join(parts)


def _gang_lines(gang: Gang, units: Mapping[str, str], indent: str) -> list[str]:
    status = gang.status
    head = [f"gang {gang.key}", gang.phase or "(no status)"]
    head.append(f"members {gang.scheduled}/{gang.min_member or '?'} bound")
    if status.get("placedTier") is not None:
        head.append(f"tier {status['placedTier']}")
    if gang.native is not None:
        ref = gang.workload
        head.append(f"native PodGroup (workload {ref[0]} template {ref[1]})" if ref else "native PodGroup")
    elif gang.podgroup is None:
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


def tree_blocks(gangs: Mapping[str, Gang], names: Sequence[str]) -> list[tuple[tuple[str, ...], bool]]:
    """The tree's blocks in order: (the keys of a gang group, True) with every gang of the group (missing ones
    too), or ((key,), False) for a gang alone; for the gangs `names` asks for (all when empty)."""
    wanted = [
        k for k in gangs if not names or k in names or k.split("/", 1)[1] in names or _of_workload(gangs[k], names)
    ]
    blocks: list[tuple[tuple[str, ...], bool]] = []
    shown: set[str] = set()
    for key in sorted(wanted):
        if key in shown:
            continue
        group = gangs[key].group
        shown.update(group or (key,))
        blocks.append((group, True) if group else ((key,), False))
    return blocks


def _of_workload(gang: Gang, names: Sequence[str]) -> bool:
    ref = gang.workload
    return ref is not None and (ref[0] in names or f"{gang.key.split('/', 1)[0]}/{ref[0]}" in names)


def wanted_workloads(rows: Sequence[nat.WorkloadRow], names: Sequence[str]) -> list[nat.WorkloadRow]:
    """The Workloads the tree shows: those `names` asks for (by name or namespace/name), all when empty."""
    return [r for r in rows if not names or r.key in names or r.key.split("/", 1)[1] in names]


def tree_keys(gangs: Mapping[str, Gang], names: Sequence[str]) -> list[str]:
    """The keys of the gangs the tree shows, in its order (gangs of a group that do not exist left out)."""
    return [k for members, _ in tree_blocks(gangs, names) for k in members if k in gangs]


def unmatched(gangs: Mapping[str, Gang], names: Sequence[str], workloads: Sequence[nat.WorkloadRow] = ()) -> list[str]:
    """The names (a gang's or a Workload's name, or namespace/name) that nothing in sight has."""
    return [
        n
        for n in names
        if not any(k == n or k.split("/", 1)[1] == n for k in gangs) and not wanted_workloads(workloads, [n])
    ]


def render_tree(
    gangs: Mapping[str, Gang],
    names: Sequence[str],
    units: Mapping[str, str],
    workloads: Sequence[nat.WorkloadRow] = (),
) -> str:
    lines: list[str] = nat.workload_lines(wanted_workloads(workloads, names))
    for members, is_group in tree_blocks(gangs, names):
        if not is_group:
            lines.extend(_gang_lines(gangs[members[0]], units, ""))
            continue
        lines.append(f"group [{', '.join(members)}]")
        for member in members:
            if member in gangs:
                lines.extend(_gang_lines(gangs[member], units, "  "))
            else:
                lines.append(f"  gang {member}  (missing: no PodGroup and no pods)")
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


def bound_count(gang: Gang) -> int:
    return sum(1 for p in gang.pods if (p.get("spec") or {}).get("nodeName"))


def waiting_rows(gangs: Mapping[str, Gang], now: float) -> list[tuple[float, Gang]]:
    """(seconds waited, gang) of the gangs not yet scheduled, longest waiting first."""
    rows = []
    for gang in gangs.values():
        if gang.phase in WAITING_PHASES:
            since = _since(gang)
            rows.append((now - since if since is not None else 0.0, gang))
    rows.sort(key=lambda r: (-r[0], r[1].key))
    return rows


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def render_top(gangs: Mapping[str, Gang], now: float, width: int | None = TOP_WIDTH) -> str:
    """The waiting gangs as a table; BLOCKED BY is cut ("...") so that a line fits `width` columns (None: never
    cut, `-o wide`), keeping at least MIN_BLOCKER characters of it."""
    rows = [
        (gang.key, gang.phase or "-", f"{bound_count(gang)}/{gang.min_member or '?'}", _duration(waited), blocker)
        for waited, gang in waiting_rows(gangs, now)
        for blocker in (gang.blocker() or "-",)
    ]
    if not rows:
        return "No waiting gangs."
    table = [("GANG", "PHASE", "BOUND/MIN", "WAITING", "BLOCKED BY"), *rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    room = None if width is None else max(width - sum(widths) - 3 * 4, MIN_BLOCKER)
    return "\n".join(
        "   ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True))
        + "   "
        + (row[4] if room is None else _clip(row[4], room))
        for row in table
    )


def recent_warnings(events: Sequence[Obj], limit: int = 5) -> list[Obj]:
    """The most recent Warning events, newest first."""
    warnings = [e for e in events if e.get("type") == "Warning"]
    warnings.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""), reverse=True)
    return warnings[:limit]


def pod_condition(pod: Obj) -> Obj | None:
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
    cond = pod_condition(pod)
    if cond is not None and cond.get("status") != "True":
        lines.append(f"PodScheduled=False {cond.get('reason') or ''}: {cond.get('message') or ''}".rstrip(": "))
    if gang is None:
        lines.append("gang: none (scheduled alone)")
    else:
        lines.append(f"gang {gang.key}: {gang.phase or '(no status)'}; {gang.blocker() or 'no message'}")
    for event in recent_warnings(events):
        obj = event.get("involvedObject") or {}
        lines.append(f"event {obj.get('kind')}/{obj.get('name')} {event.get('reason')}: {event.get('message')}")
    return "\n".join(lines)
