"""PNG plots of a replay run (matplotlib, Agg backend: no display needed). Imported only when matplotlib is
installed (extra `gangsched[whatif]`).

Contract: `draw(out_dir, run) -> list[Path]` writes, for the highest load of the run: `utilization.png` (useful GPU
utilization over time per policy, dashed: allocated), `jct_cdf.png` (CDF of job completion time per policy),
`queue_by_size.png` (mean queueing delay per gang-size bucket and policy); and across loads `held_idle.png`
(GPU-hours held by incomplete gangs per policy and load). Returns the paths written.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from gangsched.whatif.metrics import SIZE_BUCKETS
from gangsched.whatif.report import LoadRun, RunResult


def _utilization(path: Path, lr: LoadRun) -> None:
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for name, rep in lr.replays.items():
        cap = max(rep.gpu_capacity, 1)
        t = [p[0] / 3600 for p in rep.timeline]
        line = ax.step(t, [p[2] / cap for p in rep.timeline], where="post", label=f"{name} useful")[0]
        ax.step(t, [p[1] / cap for p in rep.timeline], where="post", ls="--", lw=0.8, color=line.get_color())
    ax.set(xlabel="hours", ylabel="GPU fraction", title=f"GPU utilization, load {lr.load:g} (dashed: allocated)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _jct_cdf(path: Path, lr: LoadRun) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, rep in lr.replays.items():
        jct = sorted((j.end - j.submit) / 60 for j in rep.jobs if j.end is not None)
        ax.step(jct, [(i + 1) / len(jct) for i in range(len(jct))], where="post", label=name)
    ax.set(xscale="log", xlabel="JCT (minutes)", ylabel="fraction of jobs", title=f"JCT CDF, load {lr.load:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _queue_by_size(path: Path, lr: LoadRun) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    names = list(lr.summaries)
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        by = lr.summaries[name]["by_size"]
        xs = [k + i * width for k, (_, _, b) in enumerate(SIZE_BUCKETS)]
        ax.bar(xs, [by.get(b, {}).get("queue", {}).get("mean", 0) / 60 for _, _, b in SIZE_BUCKETS], width, label=name)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(SIZE_BUCKETS))], [b for _, _, b in SIZE_BUCKETS])
    ax.set(xlabel="gang size (members)", ylabel="mean queueing delay (min)", title=f"Queueing delay, load {lr.load:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _held_idle(path: Path, run: RunResult) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    names = list(run.loads[0].summaries)
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        xs = [k + i * width for k in range(len(run.loads))]
        ax.bar(xs, [lr.summaries[name]["held_idle_gpu_hours"] for lr in run.loads], width, label=name)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(run.loads))], [f"{lr.load:g}" for lr in run.loads])
    ax.set(xlabel="offered load", ylabel="GPU-hours", title="GPUs held by incomplete gangs")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw(out_dir: Path, run: RunResult) -> list[Path]:
    if not run.loads:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    top = max(run.loads, key=lambda lr: lr.load)
    paths = [out_dir / n for n in ("utilization.png", "jct_cdf.png", "queue_by_size.png", "held_idle.png")]
    _utilization(paths[0], top)
    _jct_cdf(paths[1], top)
    _queue_by_size(paths[2], top)
    _held_idle(paths[3], run)
    return paths
