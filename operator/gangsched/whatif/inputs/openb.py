"""The Alibaba 2023 openb pod lists (cluster-trace-gpu-v2023) as single-pod jobs: no gang structure, so a baseline of
per-pod requests, arrivals and run times, never gangs.

Contract: `openb_jobs(path) -> (jobs, notes)`: columns `name,cpu_milli,memory_mib,num_gpu,gpu_milli` and
`creation_time,deletion_time,scheduled_time` (a list without times is refused naming the column). Each pod is a job
of one member submitted at its creation time (from the list's first), running deletion - scheduled time (>= 1 s),
a fractional GPU counted as a whole one; pods never scheduled are left out and counted in `notes`.
Errors: files.InputError naming file, line, column, value, allowed. More: docs/modules.md#whatifinputsopenbpy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from gangsched.whatif.inputs.files import InputError, csv_rows, number
from gangsched.whatif.model import JobSpec, RoleSpec

COLUMNS: Final = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIME_COLUMNS: Final = ("creation_time", "deletion_time", "scheduled_time")
OPTIONAL: Final = ("gpu_spec", "qos", "pod_phase", *TIME_COLUMNS)
MAX_TIME: Final = 1e10


def openb_jobs(path: str | Path) -> tuple[tuple[JobSpec, ...], list[str]]:
    """Single-pod jobs of an openb pod list (see the module docstring)."""
    raw: list[tuple[str, float, float, RoleSpec, str | None]] = []
    unscheduled = 0
    for line, row in csv_rows(path, required=COLUMNS, optional=OPTIONAL):
        for column in TIME_COLUMNS:
            if column not in row:
                raise InputError(path, 1, column, "", "is required: this pod list has no times (use the default list)")

        def num(column: str, maximum: float, *, line: int = line, row: dict[str, str] = row) -> float:
            return number(row[column], path=path, line=line, column=column, kind="int", minimum=0, maximum=maximum)

        if not row["scheduled_time"]:
            unscheduled += 1
            continue
        gpus = int(num("num_gpu", 1024))
        gpu_milli = int(num("gpu_milli", 1_000_000))
        if gpus == 0 and gpu_milli > 0:
            gpus = 1
        role = RoleSpec(1, int(num("cpu_milli", 1e8)), int(num("memory_mib", 1 << 30)), gpus)
        created, scheduled, deleted = (
            num("creation_time", MAX_TIME),
            num("scheduled_time", MAX_TIME),
            num("deletion_time", MAX_TIME),
        )
        spec = row.get("gpu_spec", "")
        raw.append(
            (row["name"], created, max(1.0, deleted - scheduled), role, spec if spec and "|" not in spec else None)
        )
    start = min((created for _, created, _, _, _ in raw), default=0.0)
    jobs = tuple(
        sorted(
            (
                JobSpec(name, created - start, duration, (role,), 1, gpu_model=model)
                for name, created, duration, role, model in raw
            ),
            key=lambda job: job.submit,
        )
    )
    notes = [f"{unscheduled} pods never scheduled (no scheduled_time) left out"] if unscheduled else []
    return jobs, notes
