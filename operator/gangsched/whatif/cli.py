"""`gangsched sim replay`: the what-if simulator's command line (operator/gangsched/cli.py delegates here).

Contract: `add_arguments(parser)` declares the options; `run(args) -> int` (exit code) replays the scenario at every
`--load` through every `--policies` entry (whatif/lineup.py) on the same workload per load, writes the outputs to
`--out` (whatif/report.py; PNG plots when matplotlib is installed, else said skipped) and prints the comparison.
Scenario: `--demo`, or an inventory (`--nodes` or `--kubeconfig`) and a workload (`--trace FILE` as is, or
`--synthetic` at each load over `--hours`); node events, warm-up, speed model, declared run times and waiting
time are options; `--seed` makes the whole replay reproducible. summary.json records every parameter, the horizon
and the commit. `add_workload_arguments` declares the options `gangsched sim sweep` shares.
Bad values (a load outside (0, 2], an unknown policy, a bad file, an unwritable `--out`, checked before any replay)
exit 2 naming the option or file, the value and what is allowed. Options in full: docs/whatif.md.
More: docs/modules.md#whatifclipy.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gangsched.exits import CommandError, ExitCode, report, writable_dir

if TYPE_CHECKING:  # the rest is imported when a replay runs: `gangsched --help` stays fast
    from gangsched.whatif.model import Workload
    from gangsched.whatif.report import LoadRun
    from gangsched.whatif.speed import SpeedModel

DEFAULT_POLICIES = "gangsched,gangsched+nohold,kube-scheduler,coscheduling,kube-scheduler-gang"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--demo", action="store_true", help="the small default scenario (under a minute)")
    parser.add_argument(
        "--nodes", default=None, help="node inventory: alibaba-2026, alibaba-2023, or a CSV/YAML/JSON/topology file"
    )
    parser.add_argument("--kubeconfig", default=None, help="read the node inventory from a live cluster")
    add_workload_arguments(parser)
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic workload (default %(default)s)")
    parser.add_argument("--out", default="whatif-out", help="output directory (default %(default)s)")
    parser.add_argument(
        "--speed-model",
        choices=("tier", "none"),
        default="tier",
        help="tier: a job runs slower when its pods span a higher network tier (docs/whatif.md); none: placement"
        " does not matter (default %(default)s)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The workload and policy options `sim replay` and `sim sweep` (whatif/sweep.py) share."""
    parser.add_argument("--trace", default=None, help="workload trace (CSV or JSONL, docs/whatif.md)")
    parser.add_argument("--synthetic", action="store_true", help="the synthetic workload model at each --load")
    parser.add_argument("--hours", type=float, default=24.0, help="synthetic: hours of arrivals (default %(default)s)")
    parser.add_argument(
        "--load", default="0.6,0.8,0.95", help="offered GPU loads, comma-separated (default %(default)s)"
    )
    parser.add_argument("--policies", default=DEFAULT_POLICIES, help="policies to compare (default %(default)s)")
    parser.add_argument(
        "--wait-seconds", type=float, default=600.0, help="gangsched's gang waiting time (s); baselines keep theirs"
    )
    parser.add_argument(
        "--warmup-hours",
        type=float,
        default=0.0,
        help="utilization averaged after this many hours of arrivals (default %(default)s)",
    )
    parser.add_argument("--node-events", default=None, help="CSV time,node,event (down|up): nodes failing and back")
    parser.add_argument(
        "--node-failures", type=float, default=None, metavar="MTBF_HOURS", help="random node failures: mean up time"
    )
    parser.add_argument(
        "--repair-hours",
        type=float,
        default=1.0,
        help="with --node-failures: mean repair time, h (default %(default)s)",
    )
    parser.add_argument(
        "--spine-oversubscription",
        type=float,
        default=2.0,
        help="tier model: communication cost above a leaf, relative to the rail network (default %(default)s)",
    )
    parser.add_argument(
        "--declared-share",
        type=float,
        default=0.5,
        help="share of jobs whose pods declare a run time (expected-duration) (default %(default)s)",
    )
    parser.add_argument(
        "--declared-slack",
        type=float,
        default=2.0,
        help="a declared run time is the real one times this (default %(default)s)",
    )


def commit() -> str:
    """`git rev-parse HEAD` of the checkout this package runs from, else "unknown" (an installed wheel)."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def parameters(args: argparse.Namespace) -> dict[str, object]:
    """Every option of the command line, as given or defaulted (the subcommand's names dropped)."""
    return {k: v for k, v in sorted(vars(args).items()) if k not in ("command", "sim_command")}


def windows(workload: Workload, warmup: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """(the arrival span, the measured window: the arrivals after the warm-up)."""
    jobs = workload.jobs
    arrivals = (jobs[0].submit, jobs[-1].submit) if jobs else (0.0, 0.0)
    return arrivals, (min(arrivals[0] + warmup, arrivals[1]), arrivals[1])


def parse_loads(text: str) -> list[float]:
    try:
        loads = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--load: {text!r} is not a comma-separated list of numbers (e.g. 0.6,0.8,0.95)") from None
    bad = [x for x in loads if not 0 < x <= 2]
    if bad or not loads:
        raise ValueError(f"--load: {text!r}: each load must be a fraction of GPU capacity in (0, 2]")
    return loads


def offered_load(workload: Workload, window: tuple[float, float]) -> float:
    """GPU-seconds the jobs ask for / (GPU capacity x the arrival window)."""
    span = (window[1] - window[0]) * workload.gpu_capacity
    return round(sum(j.gpus * j.duration for j in workload.jobs) / span, 3) if span > 0 else 0.0


def _bar(desc: str, total: int) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    try:
        from tqdm import tqdm
    except ImportError:
        return (lambda _d, _t: None), (lambda: None)
    bar = tqdm(total=total, desc=desc, unit="job", disable=None, leave=False)

    def update(done: int, _total: int) -> None:
        bar.update(done - bar.n)

    return update, bar.close


def speed_model(args: argparse.Namespace) -> SpeedModel:
    """The replay's speed model from the options; ValueError: what is wrong."""
    from gangsched.whatif.speed import SpeedModel

    if args.speed_model == "none":
        return SpeedModel.off()
    if not (math.isfinite(args.spine_oversubscription) and args.spine_oversubscription >= 1):
        raise ValueError(f"--spine-oversubscription: {args.spine_oversubscription!r} must be a finite number >= 1")
    return SpeedModel(spine_oversubscription=args.spine_oversubscription)


def with_job_traits(
    args: argparse.Namespace, workloads: dict[float, Workload], speed: SpeedModel
) -> dict[float, Workload]:
    """Each job's communication share (whatif/speed.py) and declared run time (whatif/inputs/estimates.py), drawn
    with `--seed`; ValueError: a bad option."""
    from gangsched.whatif.inputs.estimates import with_traits

    share, slack = args.declared_share, args.declared_slack
    return {load: with_traits(w, speed, share=share, slack=slack, seed=args.seed) for load, w in workloads.items()}


def replay_all(
    workloads: dict[float, Workload],
    policies: list[str],
    wait_seconds: float,
    warmup: float = 0.0,
    speed: SpeedModel | None = None,
) -> list[LoadRun]:
    from gangsched.whatif.engine import replay
    from gangsched.whatif.lineup import make_policy
    from gangsched.whatif.metrics import summarize
    from gangsched.whatif.report import LoadRun

    runs = []
    for load, workload in workloads.items():
        jobs = workload.jobs
        arrivals, window = windows(workload, warmup)  # every metric: after the warm-up
        lr = LoadRun(load, workload.source, window, offered_load(workload, arrivals), {}, {})
        for name in policies:
            update, close = _bar(f"load {load:g} {name}", len(jobs))
            result = replay(workload, make_policy(name, workload, wait_seconds), progress=update, speed=speed)
            close()
            lr.replays[name] = result
            lr.summaries[name] = summarize(result, window)
        runs.append(lr)
    return runs


def arrival_hours(args: argparse.Namespace) -> float | None:
    """Hours of arrivals: --hours of the synthetic model, the demo's 8 h, None for a trace (its own span)."""
    if args.demo:
        from gangsched.whatif.demo import DEMO_HOURS

        return DEMO_HOURS
    return float(args.hours) if args.synthetic else None


def horizon(args: argparse.Namespace, runs: list[LoadRun]) -> dict[str, object]:
    """The horizon every report states: hours of arrivals, the warm-up, and the measured window per load (h)."""
    spans = {f"{lr.load:g}": [round(lr.window[0] / 3600, 3), round(lr.window[1] / 3600, 3)] for lr in runs}
    return {
        "arrival_hours": arrival_hours(args),
        "warmup_hours": args.warmup_hours,
        "measured_window_hours": spans,
    }


def _workloads(args: argparse.Namespace, loads: list[float]) -> tuple[str, dict[float, Workload]]:
    """The scenario's name and its workload per load (see the module docstring); ValueError: what is wrong."""
    if args.demo:
        from gangsched.whatif.demo import demo_workload

        return "demo", {load: demo_workload(load, args.seed) for load in loads}
    if (args.nodes is None) == (args.kubeconfig is None) or (args.trace is None) == (not args.synthetic):
        raise ValueError(
            "give --demo, or one inventory (--nodes SOURCE or --kubeconfig FILE) and one workload (--trace FILE or"
            " --synthetic)"
        )
    import asyncio

    from gangsched.whatif.inputs.synthetic import WorkloadModel
    from gangsched.whatif.inputs.workload import build_workload, live_inventory, load_inventory

    live = args.nodes is None
    inventory = asyncio.run(live_inventory(args.kubeconfig)) if live else load_inventory(args.nodes)
    for note in inventory.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.trace is not None:
        workload = build_workload(inventory, trace=args.trace)
        jobs = workload.jobs
        offered = offered_load(workload, (jobs[0].submit, jobs[-1].submit)) if jobs else 0.0
        print(f"note: --load does not apply to a trace; its offered load is {offered:g}", file=sys.stderr)
        return workload.source, {offered: workload}
    if not args.hours > 0:
        raise ValueError(f"--hours: {args.hours!r} must be > 0")
    horizon = args.hours * 3600
    out = {}
    for load in loads:
        out[load] = build_workload(inventory, model=WorkloadModel(load=load, horizon=horizon, seed=args.seed))
    return f"synthetic on {inventory.source}", out


def with_node_events(args: argparse.Namespace, workloads: dict[float, Workload]) -> dict[float, Workload]:
    """The workloads with `--node-events` or `--node-failures` (whatif/inputs/node_events.py); ValueError: what is
    wrong (the file's InputError, or a bad option)."""
    if args.node_events is None and args.node_failures is None:
        return workloads
    import dataclasses

    from gangsched.whatif.inputs.node_events import failure_events, read_node_events

    if args.node_events is not None and args.node_failures is not None:
        raise ValueError("give --node-events FILE or --node-failures MTBF_HOURS, not both")
    out = {}
    for load, w in workloads.items():
        if args.node_events is not None:
            events = read_node_events(args.node_events, w.nodes)
        else:
            if not all(math.isfinite(h) and h > 0 for h in (args.node_failures, args.repair_hours)):
                bad = f"--node-failures {args.node_failures!r} and --repair-hours {args.repair_hours!r}"
                raise ValueError(f"{bad}: each must be a finite number of hours > 0")
            end = w.jobs[-1].submit if w.jobs else 0.0
            events = failure_events(
                w.nodes, mtbf_hours=args.node_failures, repair_hours=args.repair_hours, horizon=end, seed=args.seed
            )
        out[load] = dataclasses.replace(w, node_events=events)
    return out


def check_warmup(hours: float, workloads: dict[float, Workload]) -> float:
    """The warm-up in seconds; ValueError unless finite hours >= 0 and shorter than every arrival span."""
    if not (math.isfinite(hours) and hours >= 0):
        raise ValueError(f"--warmup-hours: {hours!r} must be a finite number of hours >= 0")
    for w in workloads.values():
        span = w.jobs[-1].submit - w.jobs[0].submit if w.jobs else 0.0
        if hours and hours * 3600 >= span:
            raise ValueError(
                f"--warmup-hours: {hours:g} h must be shorter than the arrivals' span ({span / 3600:.2f} h)"
            )
    return hours * 3600


def run(args: argparse.Namespace) -> int:
    from gangsched.whatif.lineup import parse_policies
    from gangsched.whatif.report import RunResult, table, write_outputs

    try:
        loads = parse_loads(args.load)
        policies = parse_policies(args.policies)
    except ValueError as exc:
        print(f"gangsched sim replay: {exc}", file=sys.stderr)
        return 2
    try:
        writable_dir(args.out, "--out")  # before any replay: the work is not lost at the end
    except CommandError as exc:
        return report("gangsched sim replay", exc)
    from gangsched.k8s.credentials import CredentialError
    from gangsched.k8s.diagnose import api_failure
    from gangsched.k8s.errors import ApiError

    try:
        scenario, workloads = _workloads(args, loads)
        workloads = with_node_events(args, workloads)
        speed = speed_model(args)
        workloads = with_job_traits(args, workloads, speed)
        warmup = check_warmup(args.warmup_hours, workloads)
    except ValueError as exc:  # (whatif/inputs' InputError is a ValueError)
        print(f"gangsched sim replay: {exc}", file=sys.stderr)
        return 2
    except (ApiError, CredentialError) as exc:  # --kubeconfig: the live cluster's nodes
        return report("gangsched sim replay", api_failure(exc))
    header = {"scenario": scenario, "seed": args.seed, "policies": policies, "loads": loads, "units": "seconds"}
    header["warmup_seconds"] = warmup
    header["speed_model"] = speed.describe()
    header["declared_run_times"] = {"share": args.declared_share, "slack": args.declared_slack}
    loads_run = replay_all(workloads, policies, args.wait_seconds, warmup, speed)
    header["horizon"] = horizon(args, loads_run)
    header["parameters"] = parameters(args)
    header["commit"] = commit()
    result = RunResult(header, loads_run)
    out = Path(args.out)
    if not args.no_plots:
        try:
            from gangsched.whatif.plots import draw
        except ImportError as exc:
            print(f"plots skipped: {exc.name} is not installed (pip install 'gangsched[whatif]')", file=sys.stderr)
        else:
            result.plots = draw(out, result)
    try:
        paths = write_outputs(out, result)
    except OSError as exc:  # the directory was writable at the start: it went away, or the disk is full
        problem = f"--out {out}: writing the results failed ({exc.strerror or exc})"
        return report(
            "gangsched sim replay", CommandError(ExitCode.FAILURE, problem, "free space or fix the directory")
        )
    print(table(result))
    print(f"\nwrote {len(paths) + len(result.plots)} files to {out}/ (summary.json, report.md, CSV per policy)")
    return 0
