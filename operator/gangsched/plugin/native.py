"""Kubernetes 1.37's own gang objects as `kubectl gang` shows them: native PodGroups (scheduling.k8s.io/v1beta1) and
the Workloads they are made from. Pure (API objects in, facts, lines and dicts out).

Contract:
- `min_count(pg)` (gang.minCount, None for basic), `is_basic(pg)`, `workload_ref(pg) -> (workload, template) | None`
  (spec.workloadRef), `initially_scheduled(pg)` (its PodGroupInitiallyScheduled condition or None).
- `workload_rows(workloads, native) -> list[WorkloadRow]`: each Workload (by key) with its podGroupTemplates (name,
  policy "gang minCount N" | "basic") and per template the native PodGroups whose workloadRef names it (a true
  workload controller makes them from the templates: KEP-5832 "Ownership and Object Relationship"); a template a
  PodGroup names that the Workload lacks is listed, `missing`.
- `workload_lines(rows)` (text), `workload_record(row)` (`{namespace, name, templates: [{name, policy, podGroups,
  missing}]}`, for `-o json|yaml`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = Mapping[str, Any]
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _key(obj: Obj) -> str:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _policy(holder: Obj) -> tuple[str, int | None]:
    policy = holder.get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    count = gang.get("minCount") if isinstance(gang, Mapping) else None
    if isinstance(count, int) and not isinstance(count, bool):
        return f"gang minCount {count}", count
    return ("basic" if isinstance(policy, Mapping) and "basic" in policy else "?"), None


def min_count(pg: Obj) -> int | None:
    return _policy(_spec(pg))[1]


def is_basic(pg: Obj) -> bool:
    """`schedulingPolicy: {basic: {}}`: no gang, its pods are scheduled one by one."""
    return _policy(_spec(pg))[0] == "basic"


def workload_ref(pg: Obj) -> tuple[str, str] | None:
    ref = _spec(pg).get("workloadRef")
    if not isinstance(ref, Mapping) or not isinstance(ref.get("workloadName"), str):
        return None
    return str(ref["workloadName"]), str(ref.get("templateName") or "")


def initially_scheduled(pg: Obj) -> Obj | None:
    status = pg.get("status")
    for cond in (status.get("conditions") if isinstance(status, Mapping) else None) or []:
        if isinstance(cond, Mapping) and cond.get("type") == INITIALLY_SCHEDULED:
            return cond
    return None


@dataclass(slots=True)
class Template:
    name: str
    policy: str
    podgroups: list[str] = field(default_factory=list)  # native PodGroup keys made from it
    missing: bool = False  # named by a PodGroup's workloadRef, absent from the Workload


@dataclass(slots=True)
class WorkloadRow:
    key: str
    templates: list[Template]


def workload_rows(workloads: Iterable[Obj], native: Iterable[Obj]) -> list[WorkloadRow]:
    rows: dict[str, WorkloadRow] = {}
    for wl in workloads:
        templates = _spec(wl).get("podGroupTemplates")
        found = [
            Template(str(t.get("name")), _policy(t)[0])
            for t in (templates if isinstance(templates, list) else [])
            if isinstance(t, Mapping)
        ]
        rows[_key(wl)] = WorkloadRow(_key(wl), found)
    for pg in sorted(native, key=_key):
        ref = workload_ref(pg)
        row = rows.get(f"{_key(pg).split('/', 1)[0]}/{ref[0]}") if ref is not None else None
        if ref is None or row is None:
            continue
        template = next((t for t in row.templates if t.name == ref[1]), None)
        if template is None:
            template = Template(ref[1], "?", missing=True)
            row.templates.append(template)
        template.podgroups.append(_key(pg).split("/", 1)[1])
    return [rows[k] for k in sorted(rows)]


def workload_lines(rows: Iterable[WorkloadRow]) -> list[str]:
    lines = []
    for row in rows:
        lines.append(f"workload {row.key}  templates {len(row.templates)}")
        for t in row.templates:
            made = ", ".join(t.podgroups) if t.podgroups else "none yet"
            note = "  (not a template of this Workload)" if t.missing else ""
            lines.append(f"  template {t.name}  {t.policy}  podGroups: {made}{note}")
    return lines


def workload_record(row: WorkloadRow) -> dict[str, Any]:
    namespace, _, name = row.key.partition("/")
    return {
        "namespace": namespace,
        "name": name,
        "templates": [
            {"name": t.name, "policy": t.policy, "podGroups": list(t.podgroups), "missing": t.missing}
            for t in row.templates
        ],
    }
