"""`gangsched sim record --kubeconfig K --out trace.jsonl`: a workload trace (traces.py format) from a live cluster's
PodGroups and pods.

Contract:
- `add_record_parser(sim_subparsers)`, `run_record(args) -> int`: writes the trace (CSV or JSONL by extension),
  prints `recorded N jobs to PATH` and the notes on stderr; exit 0, 2 when --out cannot be written (checked first),
  3 when the cluster cannot be read (gangsched/exits.py).
- `jobs_from_objects(podgroups, pods) -> (jobs, notes)` (pure): one job per gang with pods (as models/gang.py names
  it, spec as the operator merges it): submit from creation, roles from the role label with the largest requests,
  minMember, mode, topology, waiting time, priority, GPU model; duration from the finished pods, else the declared
  run time, else PLACEHOLDER_DURATION (noted). What is left out is noted. More: docs/modules.md#whatifinputsrecordpy.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

from gangsched.whatif.model import JobSpec, RoleSpec

PLACEHOLDER_DURATION: Final = 3600.0
GROUP_PATHS: Final = ("/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups")


def add_record_parser(sim_sub: Any) -> None:
    """`gangsched sim record` (see the module docstring)."""
    record = sim_sub.add_parser("record", help="write a workload trace from a live cluster's PodGroups and pods")
    record.add_argument("--kubeconfig", default=None, help="kubeconfig path (default: $KUBECONFIG, then in-cluster)")
    record.add_argument("--out", required=True, help="the trace file: .jsonl (JSON lines) or .csv (docs/whatif.md)")


def _time(raw: Any, field: str) -> float | None:
    from gangsched.core import InvalidField
    from gangsched.models.timestamps import parse_time

    try:
        return parse_time(raw, field=field) if isinstance(raw, str) and raw else None
    except InvalidField:
        return None


def _declared(pod: Mapping[str, Any]) -> float | None:
    from gangsched.core import InvalidField
    from gangsched.models.duration import parse_duration
    from gangsched.models.keys import EXPECTED_DURATION

    spec = pod.get("spec") or {}
    out = []
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool) and deadline > 0:
        out.append(float(deadline))
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(EXPECTED_DURATION)
    if raw is not None:
        with contextlib.suppress(InvalidField):
            out.append(parse_duration(raw, field=EXPECTED_DURATION))
    return min(out) if out else None


def _duration(pods: Sequence[Mapping[str, Any]]) -> float | None:
    statuses = [pod.get("status") or {} for pod in pods]
    if all(s.get("phase") in ("Succeeded", "Failed") for s in statuses):
        starts = [t for s in statuses if (t := _time(s.get("startTime"), "status.startTime")) is not None]
        ends = [
            t
            for s in statuses
            for c in s.get("containerStatuses") or []
            if (t := _time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"), "finishedAt"))
            is not None
        ]
        if starts and ends and max(ends) > min(starts):
            return max(ends) - min(starts)
    declared = [d for pod in pods if (d := _declared(pod)) is not None]
    return max(declared) if declared else None


def _role(name: str, pods: Sequence[Mapping[str, Any]], min_count: int | None) -> RoleSpec:
    from gangsched.models.pod import pod_requests

    cpu = mem = gpus = 0
    for pod in pods:
        req = pod_requests(pod.get("spec") or {})
        cpu, mem, gpus = (
            max(cpu, req.get("cpu", 0)),
            max(mem, req.get("memory", 0)),
            max(gpus, req.get("nvidia.com/gpu", 0)),
        )
    return RoleSpec(len(pods), cpu, -(-mem // (1 << 20)), gpus, name, min_count)


def _gpu_model(pods: Sequence[Mapping[str, Any]]) -> str | None:
    for pod in pods:
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        model = selector.get("gangsched.io/gpu-model") or selector.get("nvidia.com/gpu.product")
        if isinstance(model, str) and model:
            return model
    return None


def _job(
    key: str, created: float, spec: Any, members: list[tuple[str, Mapping[str, Any]]], notes: list[str]
) -> JobSpec:
    by_role: dict[str, list[Mapping[str, Any]]] = {}
    for role, pod in members:
        by_role.setdefault(role, []).append(pod)
    role_min = dict(spec.roles)
    roles = [_role(name, pods, role_min.get(name) or None) for name, pods in sorted(by_role.items())]
    missing = spec.min_member - sum(r.count for r in roles)
    if missing > 0:
        i = max(range(len(roles)), key=lambda k: roles[k].count)
        r = roles[i]
        roles[i] = RoleSpec(r.count + missing, r.cpu_milli, r.memory_mib, r.gpus, r.name, r.min_count)
        notes.append(
            f"{key}: {missing} member(s) of minMember {spec.min_member} have no pod yet; counted like the others"
        )
    pods = [pod for _, pod in members]
    duration = _duration(pods)
    if duration is None:
        duration = PLACEHOLDER_DURATION
        notes.append(
            f"{key}: duration unknown (not finished, no declared run time): {PLACEHOLDER_DURATION:g} s written"
        )
    priorities = [p for pod in pods if isinstance(p := (pod.get("spec") or {}).get("priority"), int)]
    topo = spec.network_topology
    return JobSpec(
        id=key, submit=created, duration=duration, roles=tuple(roles), min_member=spec.min_member,
        priority=max(priorities, default=0), mode=str(spec.mode),  # type: ignore[arg-type]
        topology=str(topo.mode) if topo is not None else "none",  # type: ignore[arg-type]
        highest_tier=topo.highest_tier_allowed if topo is not None and topo.mode == "hard" else None,
        gpu_model=_gpu_model(pods), wait_seconds=spec.wait_seconds,
    )  # fmt: skip


def jobs_from_objects(
    podgroups: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]
) -> tuple[tuple[JobSpec, ...], list[str]]:
    """Jobs from listed PodGroups and pods (see the module docstring)."""
    from gangsched.core import InvalidField, gang_key
    from gangsched.models.gang import parse_pod_gang
    from gangsched.models.podgroup import podgroup_spec_from_api

    notes: list[str] = []
    groups: dict[str, tuple[Any, float]] = {}
    for pg in podgroups:
        meta = pg.get("metadata") or {}
        key = gang_key(meta.get("namespace") or "default", str(meta.get("name")))
        try:
            groups[key] = (
                podgroup_spec_from_api(dict(pg)),
                _time(meta.get("creationTimestamp"), "creationTimestamp") or 0.0,
            )
        except InvalidField as exc:
            notes.append(f"PodGroup {key} left out: {exc}")
    members: dict[str, list[tuple[str, Mapping[str, Any], Any]]] = {}
    loose = 0
    for pod in pods:
        meta = pod.get("metadata") or {}
        try:
            gang = parse_pod_gang(pod)
        except InvalidField as exc:
            notes.append(f"pod {meta.get('namespace')}/{meta.get('name')} left out: {exc}")
            continue
        if gang is None:
            loose += 1
            continue
        members.setdefault(gang.key, []).append((gang.role or "", pod, gang))
    raw: list[JobSpec] = []
    for key, entries in sorted(members.items()):
        pg_spec, created = groups.get(key, (None, 0.0))
        spec = entries[0][2].resolve(pg_spec)
        if spec is None:
            notes.append(f"{key} left out: no PodGroup and no quorum annotation on its pods")
            continue
        if pg_spec is None:
            created = min(
                (_time((p.get("metadata") or {}).get("creationTimestamp"), "creationTimestamp") or 0.0)
                for _, p, _ in entries
            )
        raw.append(_job(key, created, spec, [(role, pod) for role, pod, _ in entries], notes))
    notes.extend(f"PodGroup {key} left out: it has no pods" for key in sorted(set(groups) - set(members)))
    if loose:
        notes.append(f"{loose} pod(s) of no gang not recorded")
    start = min((job.submit for job in raw), default=0.0)
    jobs = tuple(sorted((_shift(job, start) for job in raw), key=lambda job: (job.submit, job.id)))
    return jobs, notes


def _shift(job: JobSpec, start: float) -> JobSpec:
    from dataclasses import replace

    return replace(job, submit=round(job.submit - start, 3))


async def _list(kubeconfig: str | None) -> tuple[list[Any], list[Any]]:
    from gangsched.k8s.client import KubeClient
    from gangsched.k8s.errors import ApiError

    podgroups: list[Any] = []
    async with await KubeClient.connect(kubeconfig) as client:
        for path in GROUP_PATHS:
            try:
                podgroups.extend((await client.list_all(path))[0])
            except ApiError as exc:
                if exc.status != 404:  # the older API group is often not installed
                    raise
        pods, _ = await client.list_all("/api/v1/pods")
    return podgroups, pods


def run_record(args: argparse.Namespace) -> int:
    """`gangsched sim record` (see the module docstring)."""
    import asyncio

    from gangsched.exits import CommandError, report, writable_file
    from gangsched.k8s.credentials import CredentialError
    from gangsched.k8s.diagnose import api_failure
    from gangsched.k8s.errors import ApiError
    from gangsched.whatif.inputs.traces import write_trace

    try:
        writable_file(args.out, "--out")
        podgroups, pods = asyncio.run(_list(args.kubeconfig))
    except CommandError as exc:
        return report("gangsched sim record", exc)
    except (ApiError, CredentialError) as exc:
        return report("gangsched sim record", api_failure(exc))
    jobs, notes = jobs_from_objects(podgroups, pods)
    count = write_trace(args.out, jobs)
    print(f"recorded {count} jobs to {args.out}", file=sys.stderr)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
