"""PNG plots of a replay run (matplotlib, Agg backend: no display needed). Imported only when matplotlib is installed
(extra `gangsched[whatif]`).

Contract: `draw(out_dir, run) -> list[Path]` writes (each policy one colour; job figures over the window's completed
jobs, as whatif/metrics.py `summarize`), for the highest load: `utilization.png` (useful utilization and
allocation over time, the window shaded), `queue_cdf.png`, `jct_cdf.png`, `queue_by_size.png` and
`priority_wait.png` (means with 95% confidence intervals); across the loads, `held_idle.png` (GPU-hours held idle:
by incomplete gangs, and stacked, by starvation holds). More: docs/modules.md#whatifplotspy.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gangsched.whatif.engine import JobResult, Replay
from gangsched.whatif.metrics import SIZE_BUCKETS, queue_delay, window_mean
from gangsched.whatif.report import LoadRun, RunResult

UTILIZATION_BINS = 48  # bins of the utilization plot over the span shown


def _colors(names: Sequence[str]) -> dict[str, str]:
    return {name: f"C{i % 10}" for i, name in enumerate(names)}


def _save(fig: Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _done(replay: Replay, window: tuple[float, float]) -> list[JobResult]:
    """The jobs that arrived in the window and completed (metrics.py `summarize`'s job figures)."""
    t0, t1 = window
    return [j for j in replay.jobs if t0 <= j.submit <= t1 and j.end is not None and j.start is not None]


def _mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (1.96 standard errors; 0 with fewer than 2 values)."""
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, half


def _title(lr: LoadRun, what: str) -> str:
    t0, t1 = lr.window
    return f"{what}, load {lr.load:g} (offered {lr.offered:.2f}), window {t0 / 3600:.1f}-{t1 / 3600:.1f} h"


def _utilization(path: Path, lr: LoadRun, colors: dict[str, str]) -> None:
    fig, ax = plt.subplots(figsize=(11, 4.8))
    t0, t1 = lr.window
    end = max(min(rep.end_time for rep in lr.replays.values()), t1)
    shown = min(end, t1 + 0.15 * (t1 - t0))
    step = max(shown / UTILIZATION_BINS, 1.0)
    edges = [i * step for i in range(math.ceil(shown / step) + 1)]
    mids = [(a + b) / 2 / 3600 for a, b in itertools.pairwise(edges)]
    ax.axvspan(t0 / 3600, t1 / 3600, color="0.9", zorder=0, label="averaging window (every metric)")
    for t, text in ((t0, "window start"), (t1, "window end")):
        ax.axvline(t / 3600, color="0.4", lw=0.8, ls="-.")
        ax.annotate(text, (t / 3600, 1.0), fontsize=7, rotation=90, ha="right", va="top", xytext=(-2, -2),
                    textcoords="offset points")  # fmt: skip
    for name, rep in lr.replays.items():
        cap = max(rep.gpu_capacity, 1)
        s = lr.summaries[name]
        useful = [window_mean(rep.timeline, 2, a, b) / cap for a, b in itertools.pairwise(edges)]
        alloc = [window_mean(rep.timeline, 1, a, b) / cap for a, b in itertools.pairwise(edges)]
        ax.plot(mids, useful, color=colors[name], lw=1.6, label=f"{name} useful ({s['useful_util']:.3f})")
        ax.plot(mids, alloc, color=colors[name], lw=1.0, ls="--", label=f"{name} allocated ({s['gpu_alloc_mean']:.3f})")
    ax.set(xlabel="time (hours)", ylabel="fraction of GPUs", ylim=(0, 1.02), xlim=(0, shown / 3600))
    ax.set_title(_title(lr, f"GPU utilization ({step / 60:.0f}-min means; window means in the legend)"), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    _save(fig, path)


def _cdf(ax: Axes, values: Sequence[float], color: str, label: str) -> None:
    xs = sorted(values)
    if xs:
        fractions = [0.0, *((i + 1) / len(xs) for i in range(len(xs)))]
        ax.step([xs[0], *xs], fractions, where="post", color=color, label=label)


def _queue_cdf(path: Path, lr: LoadRun, colors: dict[str, str]) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.8))
    floor = 1.0
    for name, rep in lr.replays.items():
        q = lr.summaries[name]["queue"]
        waits = [queue_delay(j) / 60 for j in _done(rep, lr.window)]
        none = sum(w <= 0 for w in waits) / len(waits) if waits else 0.0
        floor = min(floor, none)
        tail = f"p50 {q['p50'] / 60:.1f}, p95 {q['p95'] / 60:.1f}, p99 {q['p99'] / 60:.1f} min"
        label = f"{name}: no wait {none:.0%}; {tail}"
        _cdf(ax, waits, colors[name], label)
    bottom = max(0.0, math.floor(floor * 10) / 10 - 0.1)
    for level, name in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        if level > bottom:
            ax.axhline(level, color="0.5", lw=0.7, ls=":")
            ax.annotate(name, (1.0, level), xycoords=("axes fraction", "data"), fontsize=7, va="center",
                        xytext=(3, 0), textcoords="offset points")  # fmt: skip
    ax.set_xscale("symlog", linthresh=1.0, linscale=0.5)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom, 1.005)
    ylabel = "fraction of jobs with delay <= x" + (f" (axis from {bottom:.1f})" if bottom else "")
    ax.set(xlabel="queueing delay (minutes; linear below 1, log above)", ylabel=ylabel)
    ax.set_title(_title(lr, "Queueing delay CDF"), fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, path)


def _jct_cdf(path: Path, lr: LoadRun, colors: dict[str, str]) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.8))
    for name, rep in lr.replays.items():
        jct = lr.summaries[name]["jct"]
        label = f"{name}: mean {jct['mean'] / 60:.1f}, p99 {jct['p99'] / 60:.1f} min"
        _cdf(ax, [max((j.end or 0) - j.submit, 1.0) / 60 for j in _done(rep, lr.window)], colors[name], label)
    ax.set(xscale="log", xlabel="job completion time (minutes, log)", ylabel="fraction of jobs with JCT <= x")
    ax.set_title(_title(lr, "JCT CDF"), fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, path)


def _grouped_waits(
    path: Path,
    lr: LoadRun,
    colors: dict[str, str],
    groups: Sequence[tuple[str, Callable[[JobResult], bool]]],
    xlabel: str,
    what: str,
) -> None:
    """Mean queueing delay per group and policy, 95% CI error bars, the mean on each bar, n under each group."""
    names = list(lr.replays)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.2 + 0.45 * len(names) * len(groups)), 4.8))
    width = 0.8 / max(len(names), 1)
    counts: list[set[int]] = [set() for _ in groups]
    for i, name in enumerate(names):
        done = _done(lr.replays[name], lr.window)
        for k, (_, member) in enumerate(groups):
            waits = [queue_delay(j) / 60 for j in done if member(j)]
            counts[k].add(len(waits))
            mean, half = _mean_ci(waits)
            x = k + (i - (len(names) - 1) / 2) * width
            label = name if k == 0 else None
            ax.bar(x, mean, width, color=colors[name], label=label, yerr=half, capsize=3, ecolor="0.25")
            if waits:
                ax.annotate(f"{mean:.1f}", (x, mean + half), ha="center", va="bottom", fontsize=7,
                            xytext=(0, 2), textcoords="offset points")  # fmt: skip
    ticks = []
    for (label, _), n in zip(groups, counts, strict=True):
        ns = f"n={min(n)}" if len(n) == 1 else f"n={min(n)}-{max(n)}"
        ticks.append(f"{label}\n{ns}")
    ax.set_xticks(range(len(groups)), ticks)
    ax.set(xlabel=xlabel, ylabel="mean queueing delay (minutes)")
    ax.set_ylim(bottom=0)
    ax.set_title(_title(lr, f"{what} (bars: 95% CI)"), fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    _save(fig, path)


def _queue_by_size(path: Path, lr: LoadRun, colors: dict[str, str]) -> None:
    groups = [(name, lambda j, lo=lo, hi=hi: lo <= j.members <= hi) for lo, hi, name in SIZE_BUCKETS]
    _grouped_waits(path, lr, colors, groups, "gang size (members); n: completed jobs", "Queueing delay by gang size")


def _priority_wait(path: Path, lr: LoadRun, colors: dict[str, str]) -> None:
    levels = sorted({j.priority for rep in lr.replays.values() for j in _done(rep, lr.window)}, reverse=True)
    groups = [(f"priority {p}", lambda j, p=p: j.priority == p) for p in levels]
    xlabel = "job priority (highest first); n: completed jobs"
    _grouped_waits(path, lr, colors, groups, xlabel, "Queueing delay by priority")


def _held_idle(path: Path, run: RunResult, colors: dict[str, str]) -> None:
    names = list(run.loads[0].summaries)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.5 + 0.5 * len(names) * len(run.loads)), 4.8))
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        xs = [k + (i - (len(names) - 1) / 2) * width for k in range(len(run.loads))]
        reserved = [lr.summaries[name].get("reserved_idle_gpu_hours", 0.0) for lr in run.loads]
        hold = [lr.summaries[name].get("starvation_hold_gpu_hours", 0.0) for lr in run.loads]
        ax.bar(xs, reserved, width, color=colors[name], label=name)
        ax.bar(xs, hold, width, bottom=reserved, color=colors[name], alpha=0.45, hatch="//", edgecolor="0.2", lw=0)
        for x, r, h in zip(xs, reserved, hold, strict=True):
            ax.annotate(f"{r + h:.0f}", (x, r + h), ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                        textcoords="offset points")  # fmt: skip
    ticks = [f"{lr.offered:.2f}\n(target {lr.load:g})" for lr in run.loads]
    ax.set_xticks(range(len(run.loads)), ticks)
    hours = sorted({round((lr.window[1] - lr.window[0]) / 3600, 1) for lr in run.loads})
    ax.set(xlabel="offered GPU load", ylabel=f"GPU-hours held idle over the window ({'/'.join(map(str, hours))} h)")
    ax.set_title("GPUs held idle: by incomplete gangs (solid) + for starving gangs (hatched)", fontsize=10)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.grid(alpha=0.3, axis="y")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Patch(facecolor="white", hatch="//", edgecolor="0.2", label="held for a starving gang"))
    ax.legend(handles=handles, labels=[*labels, "held for a starving gang"], fontsize=8)
    _save(fig, path)


NAMES = ("utilization", "queue_cdf", "jct_cdf", "queue_by_size", "priority_wait", "held_idle")


def draw(out_dir: Path, run: RunResult) -> list[Path]:
    if not run.loads:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    top = max(run.loads, key=lambda lr: lr.load)
    colors = _colors(list(top.replays))
    paths = {name: out_dir / f"{name}.png" for name in NAMES}
    _utilization(paths["utilization"], top, colors)
    _queue_cdf(paths["queue_cdf"], top, colors)
    _jct_cdf(paths["jct_cdf"], top, colors)
    _queue_by_size(paths["queue_by_size"], top, colors)
    _priority_wait(paths["priority_wait"], top, colors)
    _held_idle(paths["held_idle"], run, colors)
    return list(paths.values())
