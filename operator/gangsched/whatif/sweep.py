"""`gangsched sim sweep`: policies x loads x seeds x speed models, in parallel, resumable, with paired statistics.

Contract: `add_arguments(parser)` (the workload options of `sim replay` plus `--seeds`, `--speed-models`, `--jobs`,
`--engine`, `--dask-scheduler`, `--out`); `run(args) -> int` (exit code).
- A task is one replay (load, seed, speed model, policy); `run_task(params)` builds its workload (cached per
  process), replays and returns whatif/metrics.py's summary; tasks and results are small dicts.
- Engines: `local` (a process pool of `--jobs`) or `dask` (extra `gangsched[sweep]`).
- Resumable: each finished task is written atomically to `<out>/runs/`; a rerun skips those (another sweep's runs:
  exit 2); a failed task is reported, the sweep goes on and exits 1.
- At the end `sweep.json` and `sweep.md`: per load, model and metric each policy's mean and the reference policy's
  paired per-seed differences with 95% t intervals (whatif/stats.py), with the horizon, parameters and commit.
More: docs/modules.md#whatifsweeppy.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from gangsched.exits import CommandError, report, writable_dir
from gangsched.whatif import cli as replay_cli

MODELS = ("tier", "none")
# (key, label, unit, higher is better, value of one summary or None when the run has no such jobs)
Metric = tuple[str, str, bool, Callable[[dict[str, Any]], float | None]]


def _bucket(size: str, stat: str, field: str) -> Callable[[dict[str, Any]], float | None]:
    def get(s: dict[str, Any]) -> float | None:
        b = s["by_size"].get(size)
        return None if b is None or not b[stat]["n"] else b[stat][field] / 60

    return get


def _priority(priority: str, stat: str, field: str) -> Callable[[dict[str, Any]], float | None]:
    def get(s: dict[str, Any]) -> float | None:
        b = s["by_priority"].get(priority)
        return None if b is None or not b[stat]["n"] else b[stat][field] / 60

    return get


METRICS: tuple[Metric, ...] = (
    ("useful_util", "useful utilization", True, lambda s: s["useful_util"]),
    ("jct_mean_min", "mean JCT (min)", False, lambda s: s["jct"]["mean"] / 60),
    ("queue_p99_min", "p99 queueing delay (min)", False, lambda s: s["queue"]["p99"] / 60),
    ("queue_p99_9plus_min", "9+ gangs: p99 queueing delay (min)", False, _bucket("9+", "queue", "p99")),
    ("queue_mean_priority100_min", "priority 100: mean queueing delay (min)", False, _priority("100", "queue", "mean")),
    ("lost_gpu_hours", "lost GPU-hours (evicted + failed)", False, lambda s: s["lost_gpu_hours"]),
    ("started_partially", "started partially (jobs)", False, lambda s: s["started_partially"]),
    ("deadlocks_unresolved", "deadlocks unresolved", False, lambda s: s["deadlocks"]["unresolved"]),
)
# the options a task needs to build its workload (whatif/cli.py `add_workload_arguments`, less --load/--policies)
WORKLOAD_OPTIONS = (
    "demo", "nodes", "trace", "synthetic", "hours", "wait_seconds", "warmup_hours", "node_events", "node_failures",
    "repair_hours", "spine_oversubscription", "declared_share", "declared_slack",
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--demo", action="store_true", help="the small default scenario (under a minute per replay)")
    parser.add_argument(
        "--nodes", default=None, help="node inventory: alibaba-2026, alibaba-2023, or a CSV/YAML/JSON/topology file"
    )
    replay_cli.add_workload_arguments(parser)
    parser.add_argument("--seeds", default="1-5", help="seeds: a range 1-5 or a list 1,2,3 (default %(default)s)")
    parser.add_argument(
        "--speed-models", default="tier,none", help="speed models, comma-separated: tier, none (default %(default)s)"
    )
    parser.add_argument("--jobs", type=int, default=None, help="parallel replays (default: every core, os.cpu_count())")
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: a process pool on this machine; dask: a Dask cluster (pip install 'gangsched[sweep]')"
        " (default %(default)s)",
    )
    parser.add_argument(
        "--dask-scheduler", default=None, metavar="ADDRESS", help="--engine dask: a running scheduler, else a local one"
    )
    parser.add_argument("--out", default="whatif-sweep", help="output directory (default %(default)s)")


def parse_seeds(text: str) -> list[int]:
    """`1-5` or `1,2,3` (or both: `1-3,7`); ValueError naming the option."""
    seeds: list[int] = []
    try:
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            low, dash, high = part.partition("-")
            seeds += range(int(low), int(high) + 1) if dash else [int(part)]
    except ValueError:
        raise ValueError(f"--seeds: {text!r} is not a range or a list of integers (e.g. 1-5 or 1,2,3)") from None
    if not seeds:
        raise ValueError(f"--seeds: {text!r} names no seed (e.g. 1-5 or 1,2,3)")
    return sorted(set(seeds))


def parse_models(text: str) -> list[str]:
    models = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in models if m not in MODELS]
    if bad or not models:
        raise ValueError(f"--speed-models: {text!r}: each must be one of {', '.join(MODELS)}")
    return list(dict.fromkeys(models))


def label(load: float) -> str:
    """A load's name in file names and reports: a trace has its own load (0.0 stands for it)."""
    return "trace" if load == 0 else f"{load:g}"


def task_name(task: dict[str, Any]) -> str:
    return f"{label(task['load'])}-{task['seed']}-{task['model']}-{task['policy']}"


def tasks_of(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every (load, seed, model, policy) task, workload by workload (a worker's cache then serves its neighbours)."""
    from gangsched.whatif.lineup import parse_policies

    loads = [0.0] if args.trace is not None else replay_cli.parse_loads(args.load)
    policies = parse_policies(args.policies)
    seeds, models = parse_seeds(args.seeds), parse_models(args.speed_models)
    common = {k: getattr(args, k) for k in WORKLOAD_OPTIONS}
    return [
        {**common, "load": load, "seed": seed, "model": model, "policy": policy}
        for load in loads
        for seed in seeds
        for model in models
        for policy in policies
    ]


def _namespace(task: dict[str, Any]) -> argparse.Namespace:
    ns = argparse.Namespace(**{k: task[k] for k in WORKLOAD_OPTIONS})
    ns.kubeconfig, ns.seed, ns.speed_model = None, task["seed"], task["model"]
    return ns


@functools.lru_cache(maxsize=1)
def _workload(key: bytes) -> tuple[Any, Any, float]:
    """(workload, speed model, warm-up seconds) of a task's workload parameters (orjson of them: hashable)."""
    task = orjson.loads(key)
    args = _namespace(task)
    with contextlib.redirect_stderr(io.StringIO()):  # the inventory's notes: the parent printed them once
        _, workloads = replay_cli._workloads(args, [task["load"]])
    workloads = replay_cli.with_node_events(args, workloads)
    speed = replay_cli.speed_model(args)
    workloads = replay_cli.with_job_traits(args, workloads, speed)
    warmup = replay_cli.check_warmup(args.warmup_hours, workloads)
    (workload,) = workloads.values()
    return workload, speed, warmup


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """One replay: the task's workload through its policy; {"parameters", "offered", "window", "metrics"}."""
    from gangsched.whatif.engine import replay
    from gangsched.whatif.lineup import make_policy
    from gangsched.whatif.metrics import summarize

    started = time.monotonic()
    key = orjson.dumps({k: v for k, v in task.items() if k != "policy"}, option=orjson.OPT_SORT_KEYS)
    workload, speed, warmup = _workload(key)
    arrivals, window = replay_cli.windows(workload, warmup)
    result = replay(workload, make_policy(task["policy"], workload, task["wait_seconds"]), speed=speed)
    return {
        "parameters": task,
        "source": workload.source,
        "offered": replay_cli.offered_load(workload, arrivals),
        "window_hours": [round(window[0] / 3600, 3), round(window[1] / 3600, 3)],
        "metrics": summarize(result, window),
        "seconds": round(time.monotonic() - started, 2),
    }


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _local(tasks: list[dict[str, Any]], jobs: int) -> Iterator[tuple[dict[str, Any], dict[str, Any] | BaseException]]:
    if jobs == 1:  # in this process: no pool to start
        for task in tasks:
            try:
                yield task, run_task(task)
            except Exception as exc:  # reported, the sweep goes on
                yield task, exc
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_task, task): task for task in tasks}
        for future in as_completed(futures):
            err = future.exception()
            yield futures[future], err if err is not None else future.result()


def _dask(
    tasks: list[dict[str, Any]], jobs: int, address: str | None
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | BaseException]]:
    dd: Any = importlib.import_module("dask.distributed")  # the optional extra `sweep` (untyped)
    with contextlib.ExitStack() as stack:
        if address is None:
            cluster = stack.enter_context(dd.LocalCluster(n_workers=jobs, threads_per_worker=1, dashboard_address=None))
            address = cluster.scheduler_address
        client = stack.enter_context(dd.Client(address))
        futures = {
            client.submit(run_task, task, key=f"gangsched-{task_name(task)}", pure=False): task for task in tasks
        }
        by_key = {f.key: t for f, t in futures.items()}
        for future in dd.as_completed(list(futures)):
            err = future.exception()
            yield by_key[future.key], err if err is not None else future.result()


def execute(
    tasks: list[dict[str, Any]], engine: str, jobs: int, address: str | None = None
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | BaseException]]:
    """(task, its result or the exception it raised), in the order they finish."""
    return _dask(tasks, jobs, address) if engine == "dask" else _local(tasks, jobs)


def _progress(total: int, initial: int) -> tuple[Callable[[str], None], Callable[[], None]]:
    if sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            bar = tqdm(total=total, initial=initial, desc="sweep", unit="run")

            def tick(_name: str) -> None:
                bar.update(1)

            return tick, bar.close
    done = [initial]

    def line(name: str) -> None:
        done[0] += 1
        print(f"[{done[0]}/{total}] {name}", file=sys.stderr, flush=True)

    return line, lambda: None


def sweep(
    tasks: list[dict[str, Any]], out: Path, engine: str = "local", jobs: int = 1, address: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Runs the tasks whose file `out/runs/<task>.json` is missing, writing each as it finishes; (every task's
    result, read back from its file, and the names of those that failed). ValueError: a file from other parameters."""
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    todo = []
    for task in tasks:
        path = runs / f"{task_name(task)}.json"
        if not path.exists():
            todo.append(task)
        elif orjson.loads(path.read_bytes()).get("parameters") != task:
            raise ValueError(f"{path} holds a run of other parameters: give another --out (or remove {runs})")
    update, close = _progress(len(tasks), len(tasks) - len(todo))
    failed = []
    try:
        for task, result in execute(todo, engine, jobs, address) if todo else iter(()):
            name = task_name(task)
            if isinstance(result, BaseException):
                failed.append(name)
                print(f"gangsched sim sweep: {name} failed: {type(result).__name__}: {result}", file=sys.stderr)
                continue
            write_atomic(runs / f"{name}.json", orjson.dumps(result, option=orjson.OPT_INDENT_2))
            update(name)
    finally:
        close()
    done = [orjson.loads(p.read_bytes()) for t in tasks if (p := runs / f"{task_name(t)}.json").exists()]
    return done, failed


def _mean(values: Iterable[float]) -> float | None:
    vs = list(values)
    return round(sum(vs) / len(vs), 6) if vs else None


def comparison(results: list[dict[str, Any]], policies: list[str]) -> list[dict[str, Any]]:
    """Per load, model and metric: each policy's mean over the seeds, and the reference policy's paired difference to
    each other one (whatif/stats.py `paired_interval`, over the seeds where both have a value)."""
    from gangsched.whatif.stats import paired_interval

    reference = "gangsched" if "gangsched" in policies else policies[0]
    by: dict[tuple[float, str], dict[str, dict[int, dict[str, Any]]]] = {}
    for r in results:
        p = r["parameters"]
        by.setdefault((p["load"], p["model"]), {}).setdefault(p["policy"], {})[p["seed"]] = r["metrics"]
    rows = []
    for (load, model), per_policy in by.items():
        for key, name, higher, get in METRICS:
            values = {
                pol: {seed: v for seed, s in per_policy.get(pol, {}).items() if (v := get(s)) is not None}
                for pol in policies
            }
            diffs = {}
            for other in policies:
                if other == reference:
                    continue
                seeds = sorted(set(values[reference]) & set(values[other]))
                if seeds:
                    a, b = [values[reference][s] for s in seeds], [values[other][s] for s in seeds]
                    diffs[other] = paired_interval(a, b).as_dict()
            rows.append({
                "load": load, "model": model, "metric": key, "name": name, "higher_is_better": higher,
                "mean": {pol: _mean(v.values()) for pol, v in values.items()},
                "seeds": {pol: sorted(v) for pol, v in values.items()},
                "reference": reference, "difference": diffs,
            })  # fmt: skip
    return rows


def _num(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    text = f"{x:+.3f}" if signed else f"{x:.3f}"
    return text.replace("-", "\N{MINUS SIGN}")


def _diff_cell(d: dict[str, Any] | None) -> str:
    if d is None:
        return "-"
    if d["half_width"] is None:
        return f"{_num(d['mean'], True)} (n={d['n']}: no interval)"
    note = " overlaps 0" if d["overlaps_zero"] else ""
    return f"{_num(d['mean'], True)} \N{PLUS-MINUS SIGN} {d['half_width']:.3f}{note}"


def horizon_text(header: dict[str, Any]) -> str:
    h = header["horizon"]
    arrivals = "the trace's span" if h["arrival_hours"] is None else f"{h['arrival_hours']:g} h"
    spans = "; ".join(f"load {k}: {a:.2f}-{b:.2f} h" for k, (a, b) in h["measured_window_hours"].items())
    warmup = f"the first {h['warmup_hours']:g} h a warm-up" if h["warmup_hours"] else "no warm-up"
    return (
        f"{arrivals} of arrivals, {warmup}; every metric over the arrivals after it ({spans}; seed {h['window_seed']})"
    )


def markdown(header: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    policies = header["policies"]
    lines = [
        "# What-if sweep",
        "",
        f"Scenario: {header['scenario']}. Horizon: {horizon_text(header)}.",
        (
            f"Seeds: {', '.join(map(str, header['seeds']))}. Speed models: {', '.join(header['speed_models'])}."
            f" Policies: {', '.join(policies)}. Commit: {header['commit']}."
        ),
        f"Runs: {header['runs']} of {header['tasks']}. Every parameter: sweep.json `parameters`.",
        "",
        (
            "Each policy: the mean over the seeds. Differences: the reference policy minus the other, the mean of"
            " the paired per-seed differences \N{PLUS-MINUS SIGN} the half-width of its 95% confidence interval"
            ' (Student\'s t, n - 1 degrees of freedom); "overlaps 0": the difference is not established.'
        ),
    ]
    groups: dict[tuple[float, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["load"], row["model"]), []).append(row)
    for (load, model), group in sorted(groups.items()):
        ref = group[0]["reference"]
        others = [p for p in policies if p != ref]
        head = ["metric", *policies, *(f"{ref} \N{MINUS SIGN} {o} (95% CI)" for o in others)]
        lines += ["", f"## load {label(load)}, speed model {model}", ""]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in group:
            better = "higher" if row["higher_is_better"] else "lower"
            cells = [f"{row['name']} ({better} is better)", *(_num(row["mean"][p]) for p in policies)]
            cells += [_diff_cell(row["difference"].get(o)) for o in others]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _check_first(args: argparse.Namespace, task: dict[str, Any]) -> None:
    """Builds the first task's workload here, so bad options and bad files exit 2 before any worker starts."""
    ns = _namespace(task)
    _, workloads = replay_cli._workloads(ns, [task["load"]])
    workloads = replay_cli.with_node_events(ns, workloads)
    speed = replay_cli.speed_model(ns)
    replay_cli.check_warmup(ns.warmup_hours, replay_cli.with_job_traits(ns, workloads, speed))


def run(args: argparse.Namespace) -> int:
    me = "gangsched sim sweep"
    try:
        tasks = tasks_of(args)
        jobs = args.jobs if args.jobs is not None else os.cpu_count() or 1
        if jobs < 1:
            raise ValueError(f"--jobs: {args.jobs!r} must be >= 1")
        if args.dask_scheduler is not None and args.engine != "dask":
            raise ValueError("--dask-scheduler goes with --engine dask")
        if args.engine == "dask":
            try:
                importlib.import_module("dask.distributed")
            except ImportError:
                raise ValueError("--engine dask: Dask is not installed (pip install 'gangsched[sweep]')") from None
        _check_first(args, tasks[0])
    except ValueError as exc:
        print(f"{me}: {exc}", file=sys.stderr)
        return 2
    try:
        writable_dir(args.out, "--out")
    except CommandError as exc:
        return report(me, exc)
    out = Path(args.out)
    try:
        results, failed = sweep(tasks, out, args.engine, jobs, args.dask_scheduler)
    except ValueError as exc:
        print(f"{me}: {exc}", file=sys.stderr)
        return 2
    policies = list(dict.fromkeys(t["policy"] for t in tasks))
    seeds = sorted({t["seed"] for t in tasks})
    models = list(dict.fromkeys(t["model"] for t in tasks))
    first = min(seeds)  # the window of the first seed (each seed's arrivals end at their own last one)
    windows = {label(r["parameters"]["load"]): r["window_hours"] for r in results if r["parameters"]["seed"] == first}
    scenario = "demo" if args.demo else results[0]["source"] if results else ""
    header = {
        "scenario": scenario,
        "horizon": {
            "arrival_hours": replay_cli.arrival_hours(args),
            "warmup_hours": args.warmup_hours,
            "measured_window_hours": windows,
            "window_seed": first,
        },
        "seeds": seeds,
        "speed_models": models,
        "policies": policies,
        "loads": sorted({label(t["load"]) for t in tasks}),
        "engine": args.engine,
        "commit": replay_cli.commit(),
        "parameters": replay_cli.parameters(args),
        "tasks": len(tasks),
        "runs": len(results),
        "failed": failed,
    }
    rows = comparison(results, policies)
    write_atomic(out / "sweep.json", orjson.dumps({**header, "comparison": rows}, option=orjson.OPT_INDENT_2))
    (out / "sweep.md").write_text(markdown(header, rows))
    print(f"wrote {out}/sweep.json and {out}/sweep.md ({len(results)} of {len(tasks)} runs, in {out}/runs/)")
    if failed:
        print(f"{me}: {len(failed)} runs failed; rerun the same command to retry them (finished runs are kept)")
        return 1
    return 0
