"""`gangsched sim sweep --demo` as a user runs it: its own process, a process pool of 2, one run file per task,
sweep.json and sweep.md with the horizon, seeds, models and commit, and a rerun that runs nothing again.

Oracle: issue 24 item 7 (policies x loads x seeds x models in parallel, resumable: finished runs kept) and item 3
(mean with a 95% confidence interval from paired per-seed differences; the horizon stated in every report). The
figures of a run are those `sim replay` prints for the same seed (the same replay in another process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.e2e

LOAD = "0.6"  # the demo's lightest load: the fastest replays (the sweep's machinery is the same at any load)
ARGS = ("--seeds", "1-2", "--load", LOAD, "--policies", "gangsched,kube-scheduler", "--speed-models", "tier")


def gangsched(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "gangsched", "sim", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=110, env=dict(os.environ), check=False)


def test_demo_sweep_writes_runs_and_a_paired_comparison_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    proc = gangsched("sweep", "--demo", *ARGS, "--jobs", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in (out / "runs").iterdir())
    assert names == [f"{LOAD}-{s}-tier-{p}.json" for s in (1, 2) for p in ("gangsched", "kube-scheduler")]
    assert "[4/4]" in proc.stderr  # progress: one line per finished run when stderr is not a terminal
    summary = orjson.loads((out / "sweep.json").read_bytes())
    assert summary["seeds"] == [1, 2] and summary["speed_models"] == ["tier"] and summary["runs"] == 4
    assert summary["horizon"]["arrival_hours"] == 8.0 and summary["horizon"]["warmup_hours"] == 0.0
    assert summary["commit"] == "unknown" or len(summary["commit"]) == 40
    assert summary["parameters"]["jobs"] == 2 and summary["parameters"]["declared_share"] == 0.5
    metrics = {r["metric"] for r in summary["comparison"]}
    assert {"useful_util", "jct_mean_min", "queue_p99_min", "queue_p99_9plus_min", "deadlocks_unresolved"} <= metrics
    util = next(r for r in summary["comparison"] if r["metric"] == "useful_util")
    diff = util["difference"]["kube-scheduler"]
    assert diff["n"] == 2 and diff["half_width"] is not None
    ours = [orjson.loads((out / "runs" / f"{LOAD}-{s}-tier-gangsched.json").read_bytes())["metrics"] for s in (1, 2)]
    assert util["mean"]["gangsched"] == pytest.approx(sum(m["useful_util"] for m in ours) / 2)
    assert all(m["started_partially"] == 0 and m["deadlocks"]["unresolved"] == 0 for m in ours)
    md = (out / "sweep.md").read_text()
    assert f"## load {LOAD}, speed model tier" in md and "gangsched \u2212 kube-scheduler (95% CI)" in md
    assert "8 h of arrivals, no warm-up" in md and "Seeds: 1, 2" in md and "Commit: " in md

    # the same replay as `sim replay` for seed 1: the same figures
    replay_out = tmp_path / "replay"
    single = gangsched(
        "replay", "--demo", "--seed", "1", "--load", LOAD, "--policies", "gangsched", "--no-plots",
        "--out", str(replay_out),
    )  # fmt: skip
    assert single.returncode == 0, single.stderr
    replayed = orjson.loads((replay_out / "summary.json").read_bytes())["results"][0]["policies"]["gangsched"]
    for key in ("useful_util", "jct", "queue", "by_size", "lost_gpu_hours"):
        assert replayed[key] == ours[0][key], key

    # resumable: a rerun runs nothing, one removed run is run again
    before = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    (out / "runs" / f"{LOAD}-2-tier-kube-scheduler.json").unlink()
    again = gangsched("sweep", "--demo", *ARGS, "--jobs", "2", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert f"[4/4] {LOAD}-2-tier-kube-scheduler" in again.stderr and "[3/4]" not in again.stderr
    after = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    assert {k: v for k, v in after.items() if k != f"{LOAD}-2-tier-kube-scheduler.json"} == {
        k: v for k, v in before.items() if k != f"{LOAD}-2-tier-kube-scheduler.json"
    }
    assert orjson.loads((out / "sweep.json").read_bytes())["comparison"] == summary["comparison"]


def test_bad_sweep_options_exit_2_naming_the_option(tmp_path: Path) -> None:
    for args, option in (
        (("--seeds", "x"), "--seeds"),
        (("--speed-models", "fast"), "--speed-models"),
        (("--jobs", "0"), "--jobs"),
        (("--load", "3"), "--load"),
        (("--dask-scheduler", "tcp://h:8786"), "--engine dask"),
    ):
        proc = gangsched("sweep", "--demo", "--out", str(tmp_path / "o"), *args)
        assert proc.returncode == 2 and option in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
