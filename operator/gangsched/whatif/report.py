"""The outputs of a replay run: a JSON summary, a CSV per policy, a Markdown report and the comparison table.

Contract: `write_outputs(out_dir, run) -> list[Path]` writes (and returns the paths of):
- `summary.json` (orjson, indented): `run.header` (scenario, seed, policies, loads, units) and, per load, each
  policy's metrics (whatif/metrics.py `summarize`).
- `jobs-<policy>.csv` per policy: one compact row per job and load (`JOB_COLUMNS`; empty cells: never started /
  unfinished / no tier; `queue` without the run time lost by ended incarnations, `lost_run_seconds`).
- `timeline-<policy>.csv` per policy: (load, t, gpus allocated, gpus useful, cpu allocated, cpu useful, gpus whole,
  gpus held for starving gangs, fragmented gpus),
  at most `TIMELINE_POINTS` points per load (the last value of each bucket).
- `report.md`: the comparison table per load and, when plots were drawn (whatif/plots.py), the images.
`table(run) -> str`: the comparison table printed by the CLI (one row per load and policy).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from gangsched.whatif.engine import Replay, TimelinePoint

JOB_COLUMNS = (
    "load", "job", "members", "gpus", "submit", "start", "end", "jct", "queue", "incarnations", "evictions",
    "timeouts", "started_partially", "tier", "priority", "lost_run_seconds", "mode", "topology", "span_tier",
    "placement_slowdown",
)  # fmt: skip
TIMELINE_POINTS = 2000


@dataclass(slots=True)
class LoadRun:
    load: float  # the target offered load
    source: str
    window: tuple[float, float]  # the span utilization is averaged over: the arrivals after the warm-up
    offered: float  # the offered GPU load the sampled workload actually has over its whole arrival span
    replays: dict[str, Replay]
    summaries: dict[str, dict[str, Any]]


@dataclass(slots=True)
class RunResult:
    header: dict[str, Any]
    loads: list[LoadRun] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)


def _cell(value: float | str | None) -> str:
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _jobs_rows(load: float, replay: Replay) -> list[list[str]]:
    rows = []
    for j in replay.jobs:
        jct = None if j.end is None else j.end - j.submit
        queue = None if j.start is None else j.start - j.submit - j.lost_run_seconds  # (as metrics.py `queue_delay`)
        values = (load, j.id, j.members, j.gpus, j.submit, j.start, j.end, jct, queue, j.incarnations, j.evictions)
        tail = [str(j.timeouts), str(int(j.started_partially)), _cell(j.tier), str(j.priority)]
        placement = [_cell(j.span_tier), f"{j.placement_slowdown:.4f}"]
        rows.append([*(_cell(v) for v in values), *tail, _cell(j.lost_run_seconds), j.mode, j.topology, *placement])
    return rows


def _thin(timeline: Sequence[TimelinePoint], end: float) -> list[TimelinePoint]:
    if len(timeline) <= TIMELINE_POINTS:
        return list(timeline)
    step = max(end, 1.0) / TIMELINE_POINTS
    out: dict[int, TimelinePoint] = {}
    for point in timeline:
        out[int(point[0] // step)] = point
    return list(out.values())


def write_outputs(out_dir: Path, run: RunResult) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {
        **run.header,
        "results": [
            {
                "load": lr.load,
                "offered": lr.offered,
                "source": lr.source,
                "window": lr.window,
                "policies": lr.summaries,
            }
            for lr in run.loads
        ],
    }
    paths = [out_dir / "summary.json"]
    paths[0].write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    policies = list(run.loads[0].replays) if run.loads else []
    for name in policies:
        path = out_dir / f"jobs-{name}.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(JOB_COLUMNS)
            for lr in run.loads:
                writer.writerows(_jobs_rows(lr.load, lr.replays[name]))
        paths.append(path)
        path = out_dir / f"timeline-{name}.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            header = ("load", "t", "gpus", "useful_gpus", "cpu_milli", "useful_cpu_milli", "whole_gpus")
            writer.writerow((*header, "hold_gpus", "fragmented_gpus"))
            for lr in run.loads:
                replay = lr.replays[name]
                writer.writerows((lr.load, *p) for p in _thin(replay.timeline, replay.end_time))
        paths.append(path)
    report = out_dir / "report.md"
    report.write_text(markdown(run))
    paths.append(report)
    return paths


HEADERS = (
    "load", "offered", "policy", "useful util", "GPU alloc", "mean JCT (min)", "p95 JCT (min)", "mean queue (min)",
    "started partially", "held idle GPU-h", "fragmented GPUs", "deadlocks resolved/seen/unresolved", "evictions",
    "unfinished",
)  # fmt: skip


def rows(run: RunResult) -> list[list[str]]:
    out = []
    for lr in run.loads:
        for name, s in lr.summaries.items():
            dl = s["deadlocks"]
            out.append([
                f"{lr.load:g}", f"{lr.offered:.2f}", name, f"{s['useful_util']:.3f}", f"{s['gpu_alloc_mean']:.3f}",
                f"{s['jct']['mean'] / 60:.1f}", f"{s['jct']['p95'] / 60:.1f}", f"{s['queue']['mean'] / 60:.1f}",
                str(s["started_partially"]), f"{s['held_idle_gpu_hours']:.1f}", f"{s['fragmented_gpus_mean']:.1f}",
                f"{dl['scheduler']['resolved']}/{dl['found']}/{dl['unresolved']}",
                str(s["evictions"]), str(s["unfinished"]),
            ])  # fmt: skip
    return out


def table(run: RunResult) -> str:
    body = rows(run)
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(HEADERS)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    return "\n".join(lines)


def markdown(run: RunResult) -> str:
    header = run.header
    policies = ", ".join(header["policies"])
    lines = [
        "# What-if replay",
        "",
        f"Scenario: {header.get('scenario', '')}; seed {header.get('seed')}; policies: {policies}.",
        "Utilization is averaged over the arrival window (after the warm-up, if any); JCT and queueing delay over",
        "completed jobs; offered: the GPU load the sampled workload actually offers over its arrivals (target `load`).",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows(run)]
    if run.plots:
        lines += ["", "## Plots", ""]
        lines += [f"![{p.stem}]({p.name})" for p in run.plots]
    return "\n".join(lines) + "\n"
