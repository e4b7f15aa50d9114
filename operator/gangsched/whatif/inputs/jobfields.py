"""Field parsers shared by the trace formats (traces.py): text in, validated JobSpec/RoleSpec out.

Contract:
- `JobFields(path, line)`: where the fields come from; every parser raises files.InputError naming that file and
  line, the column it is told, the value and what is allowed.
- `parse_role(fields, name=, workers=, min_count=, cpu=, memory=, gpus=, columns=)`: a RoleSpec from text fields
  (`columns` names them in that order for errors); cpu and memory are Kubernetes quantities (cpu -> millicores,
  memory -> MiB rounded up), gpus and workers whole counts.
- `build_job(fields, job_id=, submit=, ..., roles=, columns=)`: a JobSpec; empty optional fields take the defaults
  documented in traces.py; min_member must be 1..members, a role's min at most its workers, highest_tier needs a
  topology other than none.
- `role_values(role)`: the role's fields as written by the formats (cpu "4" or "500m", memory "16Gi" or "300Mi").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from gangsched.core import InvalidField, canonical
from gangsched.whatif.inputs.files import InputError, number
from gangsched.whatif.model import GangMode, JobSpec, RoleSpec, TopologyMode

INT32_MAX: Final = 2**31 - 1
MAX_SECONDS: Final = 1e10  # ~317 years
MAX_WORKERS: Final = 100_000
MAX_GPUS: Final = 1024
MAX_NAME: Final = 253
MAX_TIER: Final = 64
MODES: Final = ("Strict", "NonStrict")
TOPOLOGIES: Final = ("none", "soft", "hard")


@dataclass(frozen=True, slots=True)
class JobFields:
    path: str | Path
    line: int

    def error(self, column: str, value: object, allowed: str) -> InputError:
        return InputError(self.path, self.line, column, value, allowed)

    def name(self, text: str, column: str) -> str:
        if not text or len(text) > MAX_NAME or text != text.strip() or "\0" in text:
            raise self.error(column, text, f"must be a non-empty name of at most {MAX_NAME} characters")
        return text

    def num(self, text: str, column: str, *, kind: str, minimum: float, maximum: float) -> float:
        if "\0" in text:
            raise self.error(column, text.strip("\0"), f"must be {'an integer' if kind == 'int' else 'a number'}")
        return number(
            text,
            path=self.path,
            line=self.line,
            column=column,
            kind="int" if kind == "int" else "float",
            minimum=minimum,
            maximum=maximum,
        )

    def quantity(self, resource: str, text: str, column: str) -> int:
        allowed = "must be a Kubernetes quantity such as 4, 500m or 16Gi"
        if not text or len(text) > 40 or "\0" in text:
            raise self.error(column, text, allowed)
        try:
            amount = canonical(resource, text, field=column)
        except InvalidField as exc:
            raise self.error(column, text, exc.allowed) from None
        return -(-amount // (1 << 20)) if resource == "memory" else amount

    def choice(self, text: str, column: str, allowed: tuple[str, ...], default: str) -> str:
        if not text:
            return default
        if text not in allowed:
            raise self.error(column, text, f"must be one of {', '.join(allowed)}")
        return text


def parse_role(
    fields: JobFields,
    *,
    name: str,
    workers: str,
    min_count: str,
    cpu: str,
    memory: str,
    gpus: str,
    columns: tuple[str, ...],
) -> RoleSpec:
    """A RoleSpec from text fields (see the module docstring)."""
    c_name, c_workers, c_min, c_cpu, c_mem, c_gpus = columns
    if len(name) > MAX_NAME or "\0" in name or name != name.strip():
        raise fields.error(c_name, name, f"must be a role name of at most {MAX_NAME} characters, no blanks around it")
    count = int(fields.num(workers, c_workers, kind="int", minimum=1, maximum=MAX_WORKERS))
    minimum = int(fields.num(min_count, c_min, kind="int", minimum=0, maximum=count)) if min_count else None
    gpu = int(fields.num(gpus, c_gpus, kind="int", minimum=0, maximum=MAX_GPUS))
    return RoleSpec(
        count, fields.quantity("cpu", cpu, c_cpu), fields.quantity("memory", memory, c_mem), gpu, name, minimum
    )


def build_job(
    fields: JobFields,
    *,
    job_id: str,
    submit: str,
    duration: str,
    priority: str,
    min_member: str,
    mode: str,
    topology: str,
    highest_tier: str,
    gpu_model: str,
    wait_seconds: str,
    roles: tuple[RoleSpec, ...],
    columns: Mapping[str, str],
) -> JobSpec:
    """A validated JobSpec (see the module docstring); `columns` maps the CSV column names to the format's."""
    members = sum(role.count for role in roles)
    if members > MAX_WORKERS:
        raise fields.error(columns["job_id"], job_id, f"must have at most {MAX_WORKERS} members in all (has {members})")
    topo = fields.choice(topology, columns["topology"], TOPOLOGIES, "none")
    tier = (
        int(fields.num(highest_tier, columns["highest_tier"], kind="int", minimum=1, maximum=MAX_TIER))
        if highest_tier
        else None
    )
    if tier is not None and topo == "none":
        raise fields.error(columns["highest_tier"], highest_tier, "must be empty when the topology is none")
    if gpu_model and (len(gpu_model) > 63 or "\0" in gpu_model or gpu_model != gpu_model.strip()):
        raise fields.error(
            columns["gpu_model"], gpu_model, "must be a GPU model of at most 63 characters, no blanks around it"
        )
    wait = (
        fields.num(wait_seconds, columns["wait_seconds"], kind="float", minimum=1e-3, maximum=MAX_SECONDS)
        if wait_seconds
        else None
    )
    return JobSpec(
        id=job_id,
        submit=fields.num(submit, columns["submit"], kind="float", minimum=0, maximum=MAX_SECONDS),
        duration=_positive(fields, duration, columns["duration"]),
        roles=roles,
        min_member=int(fields.num(min_member, columns["min_member"], kind="int", minimum=1, maximum=members))
        if min_member
        else members,
        priority=int(fields.num(priority, columns["priority"], kind="int", minimum=-INT32_MAX - 1, maximum=INT32_MAX))
        if priority
        else 0,
        mode=cast(GangMode, fields.choice(mode, columns["mode"], MODES, "Strict")),
        topology=cast(TopologyMode, topo),
        highest_tier=tier,
        gpu_model=gpu_model or None,
        wait_seconds=wait,
    )


def _positive(fields: JobFields, text: str, column: str) -> float:
    value = fields.num(text, column, kind="float", minimum=0, maximum=MAX_SECONDS)
    if value <= 0:
        raise fields.error(column, text, f"must be a number of seconds > 0 and <= {MAX_SECONDS:g}")
    return value


def _cpu_text(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _memory_text(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 and mib else f"{mib}Mi"


def role_values(role: RoleSpec) -> dict[str, Any]:
    """The role as the formats write it (see the module docstring)."""
    return {
        "name": role.name,
        "workers": role.count,
        "minMember": role.min_count,
        "cpu": _cpu_text(role.cpu_milli),
        "memory": _memory_text(role.memory_mib),
        "gpus": role.gpus,
    }
