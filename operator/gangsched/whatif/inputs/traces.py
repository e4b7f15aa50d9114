"""The what-if workload trace format, CSV and JSONL: reading (bounded, validated) and writing.

Contract (docs/whatif.md "Workload trace format" is the user's description; keep both in step):
- CSV: one row per role of a job (required columns job_id, submit, duration, workers, cpu, memory, gpus); a job's
  rows agree on the job-level columns. JSONL: one job per line, a single role or `roles`; unknown keys are errors.
- `read_trace(path)`: by extension (`.jsonl`/`.ndjson` -> JSONL, else CSV); jobs sorted by submit time, then id,
  ids unique; bounded by files.MAX_ROWS and files.MAX_INPUT_BYTES. Errors: files.InputError naming the file, line,
  column, value and what is allowed.
- `write_trace(path, jobs)`: either format such that `read_trace(path) == jobs` (sorted).
More: docs/modules.md#whatifinputstracespy.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from gangsched.whatif.inputs.files import InputError, csv_rows, read_text
from gangsched.whatif.inputs.jobfields import JobFields, build_job, parse_role, role_values
from gangsched.whatif.model import JobSpec, RoleSpec

CSV_COLUMNS: Final = (
    "job_id", "submit", "duration", "priority", "min_member", "mode", "topology", "highest_tier", "gpu_model",
    "wait_seconds", "role", "workers", "role_min", "cpu", "memory", "gpus",
)  # fmt: skip
CSV_REQUIRED: Final = ("job_id", "submit", "duration", "workers", "cpu", "memory", "gpus")
JOB_COLUMNS: Final = CSV_COLUMNS[:10]
_JSON_JOB: Final = (
    "id",
    "submit",
    "duration",
    "priority",
    "minMember",
    "mode",
    "networkTopology",
    "gpuModel",
    "waitSeconds",
)
_JSON_ROLE: Final = ("name", "workers", "minMember", "cpu", "memory", "gpus")


def _is_jsonl(path: str | Path) -> bool:
    return Path(path).suffix.lower() in (".jsonl", ".ndjson")


def _csv_jobs(path: str | Path) -> list[JobSpec]:
    jobs: dict[str, tuple[int, dict[str, str], list[RoleSpec]]] = {}
    for line, row in csv_rows(path, required=CSV_REQUIRED, optional=CSV_COLUMNS):
        fields = JobFields(path, line)
        job_id = fields.name(row["job_id"], "job_id")
        head = {k: row.get(k, "") for k in JOB_COLUMNS}
        role = parse_role(
            fields, name=row.get("role", ""), workers=row["workers"], min_count=row.get("role_min", ""),
            cpu=row["cpu"], memory=row["memory"], gpus=row["gpus"],
            columns=("role", "workers", "role_min", "cpu", "memory", "gpus"),
        )  # fmt: skip
        if job_id not in jobs:
            jobs[job_id] = (line, head, [])
        first, first_head, roles = jobs[job_id]
        for key in JOB_COLUMNS:
            if head[key] != first_head[key]:
                raise InputError(
                    path, line, key, head[key], f"must equal job {job_id}'s value on line {first} ({first_head[key]!r})"
                )
        if any(r.name == role.name for r in roles):
            raise InputError(path, line, "role", role.name, f"must be unique within job {job_id}")
        roles.append(role)
    out = []
    for job_id, (line, head, roles) in jobs.items():
        fields = JobFields(path, line)
        out.append(
            build_job(
                fields, job_id=job_id, submit=head["submit"], duration=head["duration"], priority=head["priority"],
                min_member=head["min_member"], mode=head["mode"], topology=head["topology"],
                highest_tier=head["highest_tier"], gpu_model=head["gpu_model"], wait_seconds=head["wait_seconds"],
                roles=tuple(roles), columns={k: k for k in JOB_COLUMNS},
            )
        )  # fmt: skip
    return out


def _json_text(value: Any) -> str:
    """A JSON scalar as the text the field parsers read ("" for None)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"\0{type(value).__name__}"  # never valid: the parser reports the field
    return str(value)


def _json_roles(fields: JobFields, obj: Mapping[str, Any]) -> tuple[RoleSpec, ...]:
    if "roles" in obj:
        if any(k in obj for k in ("workers", "cpu", "memory", "gpus")):
            raise InputError(
                fields.path, fields.line, "roles", "roles", "must not be given with workers/cpu/memory/gpus"
            )
        raw = obj["roles"]
        if not isinstance(raw, list) or not raw or len(raw) > 64:
            raise InputError(fields.path, fields.line, "roles", raw, "must be a list of 1 to 64 role objects")
        entries = [(f"roles[{i}]", r) for i, r in enumerate(raw)]
    else:
        entries = [("", {k: obj[k] for k in ("workers", "cpu", "memory", "gpus") if k in obj})]
    roles: list[RoleSpec] = []
    for prefix, entry in entries:
        at = f"{prefix}." if prefix else ""
        if not isinstance(entry, dict):
            raise InputError(
                fields.path, fields.line, prefix, entry, f"must be an object with the keys {', '.join(_JSON_ROLE)}"
            )
        for key in entry:
            if key not in _JSON_ROLE:
                raise InputError(fields.path, fields.line, f"{at}{key}", key, f"must be one of {', '.join(_JSON_ROLE)}")
        for key in ("workers", "cpu", "memory", "gpus"):
            if key not in entry:
                raise InputError(fields.path, fields.line, f"{at}{key}", None, "is required")
        role = parse_role(
            fields, name=_json_text(entry.get("name", "")), workers=_json_text(entry["workers"]),
            min_count=_json_text(entry.get("minMember")), cpu=_json_text(entry["cpu"]),
            memory=_json_text(entry["memory"]), gpus=_json_text(entry["gpus"]),
            columns=tuple(f"{at}{k}" for k in _JSON_ROLE),
        )  # fmt: skip
        if any(r.name == role.name for r in roles):
            raise InputError(fields.path, fields.line, f"{at}name", role.name, "must be unique within the job")
        roles.append(role)
    return tuple(roles)


def _json_job(fields: JobFields, obj: Any) -> JobSpec:
    if not isinstance(obj, dict):
        raise InputError(fields.path, fields.line, "", obj, "must be a JSON object (one job per line)")
    for key in obj:
        if key not in (*_JSON_JOB, "roles", "workers", "cpu", "memory", "gpus"):
            raise InputError(
                fields.path,
                fields.line,
                key,
                key,
                f"must be one of {', '.join(_JSON_JOB)}, roles, workers, cpu, memory, gpus",
            )
    for key in ("id", "submit", "duration"):
        if key not in obj:
            raise InputError(fields.path, fields.line, key, None, "is required")
    topo = obj.get("networkTopology") or {}
    if not isinstance(topo, dict) or any(k not in ("mode", "highestTierAllowed") for k in topo):
        raise InputError(
            fields.path,
            fields.line,
            "networkTopology",
            topo,
            "must be an object with the keys mode, highestTierAllowed",
        )
    return build_job(
        fields, job_id=fields.name(_json_text(obj["id"]), "id"), submit=_json_text(obj["submit"]),
        duration=_json_text(obj["duration"]), priority=_json_text(obj.get("priority")),
        min_member=_json_text(obj.get("minMember")), mode=_json_text(obj.get("mode")),
        topology=_json_text(topo.get("mode")), highest_tier=_json_text(topo.get("highestTierAllowed")),
        gpu_model=_json_text(obj.get("gpuModel")), wait_seconds=_json_text(obj.get("waitSeconds")),
        roles=_json_roles(fields, obj),
        columns={"job_id": "id", "submit": "submit", "duration": "duration", "priority": "priority",
                 "min_member": "minMember", "mode": "mode", "topology": "networkTopology.mode",
                 "highest_tier": "networkTopology.highestTierAllowed", "gpu_model": "gpuModel",
                 "wait_seconds": "waitSeconds"},
    )  # fmt: skip


def _jsonl_jobs(path: str | Path) -> list[JobSpec]:
    jobs: list[JobSpec] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(read_text(path).splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            col = f"{getattr(exc, 'colno', '')}"
            raise InputError(
                path, number, col, raw[:40], f"must be one JSON object per line ({getattr(exc, 'msg', exc)})"
            ) from None
        job = _json_job(JobFields(path, number), obj)
        if job.id in seen:
            raise InputError(path, number, "id", job.id, f"must be unique: job {job.id} is on line {seen[job.id]} too")
        seen[job.id] = number
        jobs.append(job)
    return jobs


def read_trace(path: str | Path) -> tuple[JobSpec, ...]:
    """The jobs of a trace file, sorted by submit time (see the module docstring)."""
    jobs = _jsonl_jobs(path) if _is_jsonl(path) else _csv_jobs(path)
    return tuple(sorted(jobs, key=lambda job: (job.submit, job.id)))


def _job_json(job: JobSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"id": job.id, "submit": job.submit, "duration": job.duration}
    if job.priority:
        out["priority"] = job.priority
    out["minMember"] = job.min_member
    if job.mode != "Strict":
        out["mode"] = job.mode
    if job.topology != "none":
        out["networkTopology"] = {"mode": job.topology}
        if job.highest_tier is not None:
            out["networkTopology"]["highestTierAllowed"] = job.highest_tier
    if job.gpu_model is not None:
        out["gpuModel"] = job.gpu_model
    if job.wait_seconds is not None:
        out["waitSeconds"] = job.wait_seconds
    values = [role_values(role) for role in job.roles]
    if len(job.roles) == 1 and not job.roles[0].name and job.roles[0].min_count is None:
        out.update({k: values[0][k] for k in ("workers", "cpu", "memory", "gpus")})
    else:
        out["roles"] = [{k: v for k, v in vals.items() if v is not None and (k != "name" or v)} for vals in values]
    return out


def _csv_rows(job: JobSpec) -> Iterable[list[str]]:
    head = [
        job.id, repr(job.submit), repr(job.duration), str(job.priority), str(job.min_member), job.mode, job.topology,
        "" if job.highest_tier is None else str(job.highest_tier), job.gpu_model or "",
        "" if job.wait_seconds is None else repr(job.wait_seconds),
    ]  # fmt: skip
    for role in job.roles:
        vals = role_values(role)
        min_count = vals["minMember"]
        yield [
            *head,
            role.name,
            str(vals["workers"]),
            "" if min_count is None else str(min_count),
            vals["cpu"],
            vals["memory"],
            str(vals["gpus"]),
        ]


def write_trace(path: str | Path, jobs: Iterable[JobSpec]) -> int:
    """Write `jobs` (sorted by submit time, then id) as CSV or JSONL by the extension; returns the number of jobs."""
    ordered = sorted(jobs, key=lambda job: (job.submit, job.id))
    with open(path, "w", newline="", encoding="utf-8") as out:
        if _is_jsonl(path):
            for job in ordered:
                out.write(json.dumps(_job_json(job), separators=(",", ":")) + "\n")
        else:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(CSV_COLUMNS)
            for job in ordered:
                writer.writerows(_csv_rows(job))
    return len(ordered)
