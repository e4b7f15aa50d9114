"""`gangsched sim sweep` (whatif/sweep.py) and its statistics (whatif/stats.py).

Oracles: Student's t quantiles t(0.975, df) as printed in the standard tables (NIST/SEMATECH e-Handbook of Statistical
Methods, 1.3.6.7.2: df 4: 2.776, 40: 2.021, 60: 2.000, 120: 1.980; infinity: 1.960); the paired-difference interval
worked by hand: differences 1..5 have mean 3, sample sd sqrt(2.5) = 1.5811, half-width 2.776 x 1.5811 / sqrt(5) =
1.963. Resumability as the issue states it (issue 24 item 7: finished runs kept): a task whose file exists is not run
again.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from gangsched.whatif import sweep as sweep_mod
from gangsched.whatif.stats import paired_interval, t_quantile


def test_t_quantiles_are_the_tables() -> None:
    assert t_quantile(1) == 12.706 and t_quantile(4) == 2.776 and t_quantile(30) == 2.042
    for df, table in ((40, 2.021), (60, 2.000), (120, 1.980), (10**6, 1.960)):
        assert abs(t_quantile(df) - table) < 0.001, df
    quantiles = [t_quantile(df) for df in range(1, 200)]
    assert quantiles == sorted(quantiles, reverse=True)  # falling, no jump where the table ends
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_quantile(0)


def test_paired_interval_of_differences_one_to_five() -> None:
    a, b = [11.0, 12.0, 13.0, 14.0, 15.0], [10.0] * 5
    iv = paired_interval(a, b)
    assert iv.n == 5 and iv.mean == 3.0
    assert math.isclose(iv.sd, 1.5811, abs_tol=1e-4)
    assert iv.half_width is not None and math.isclose(iv.half_width, 1.963, abs_tol=1e-3)
    assert iv.low is not None and iv.high is not None
    assert math.isclose(iv.low, 1.037, abs_tol=1e-3) and math.isclose(iv.high, 4.963, abs_tol=1e-3)
    assert not iv.overlaps_zero
    assert paired_interval([1.0, -1.0, 2.0], [0.0, 0.0, 0.0]).overlaps_zero  # mean 0.667, half-width 3.79


def test_pairing_removes_the_seeds_own_variation() -> None:
    # the seeds differ a lot, the policies by exactly 1 on each: the paired interval is 1 +- 0
    a, b = [101.0, 11.0, 51.0], [100.0, 10.0, 50.0]
    iv = paired_interval(a, b)
    assert iv.mean == 1.0 and iv.half_width == 0.0 and not iv.overlaps_zero


def test_one_pair_has_no_interval_and_bad_input_is_refused() -> None:
    iv = paired_interval([2.0], [1.0])
    assert iv.half_width is None and iv.overlaps_zero and iv.as_dict()["low"] is None
    with pytest.raises(ValueError, match="2 and 1 values"):
        paired_interval([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="none"):
        paired_interval([], [])


def test_seeds_and_models_parse_or_say_what_is_wrong() -> None:
    assert sweep_mod.parse_seeds("1-5") == [1, 2, 3, 4, 5]
    assert sweep_mod.parse_seeds("3,1,2") == [1, 2, 3] and sweep_mod.parse_seeds("1-2,7") == [1, 2, 7]
    for bad in ("", "a", "1-x", ","):
        with pytest.raises(ValueError, match="--seeds"):
            sweep_mod.parse_seeds(bad)
    assert sweep_mod.parse_models("tier,none") == ["tier", "none"]
    with pytest.raises(ValueError, match="--speed-models"):
        sweep_mod.parse_models("tier,fast")


def _args(**over: Any) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sweep_mod.add_arguments(parser)
    args = parser.parse_args(["--demo"])
    for k, v in over.items():
        setattr(args, k, v)
    return args


def test_tasks_are_every_load_seed_model_and_policy() -> None:
    tasks = sweep_mod.tasks_of(_args(load="0.6,0.95", seeds="1-2", speed_models="tier,none", policies="gangsched"))
    assert len(tasks) == 2 * 2 * 2 * 1
    names = {sweep_mod.task_name(t) for t in tasks}
    assert "0.6-1-tier-gangsched" in names and "0.95-2-none-gangsched" in names


def _fake_result(task: dict[str, Any]) -> dict[str, Any]:
    bump = {"gangsched": 0.1, "kube-scheduler": 0.0}[task["policy"]]
    metrics = {
        "useful_util": 0.5 + task["seed"] / 100 + bump,
        "jct": {"mean": 600.0},
        "queue": {"p99": 60.0 * task["seed"]},
        "by_size": {},
        "by_priority": {"100": {"queue": {"mean": 0.0, "n": 3}}},
        "lost_gpu_hours": 1.0,
        "started_partially": 0,
        "deadlocks": {"unresolved": 0},
    }
    return {"parameters": task, "window_hours": [0.0, 8.0], "metrics": metrics}


def test_a_finished_task_is_not_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def fake(task: dict[str, Any]) -> dict[str, Any]:
        ran.append(sweep_mod.task_name(task))
        return _fake_result(task)

    monkeypatch.setattr(sweep_mod, "run_task", fake)
    tasks = sweep_mod.tasks_of(_args(load="0.95", seeds="1-2", speed_models="tier", policies="gangsched"))
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "0.95-1-tier-gangsched.json").write_bytes(orjson.dumps(_fake_result(tasks[0])))
    results, failed = sweep_mod.sweep(tasks, tmp_path, jobs=1)
    assert ran == ["0.95-2-tier-gangsched"] and not failed and len(results) == 2
    assert sorted(p.name for p in runs.iterdir()) == ["0.95-1-tier-gangsched.json", "0.95-2-tier-gangsched.json"]
    ran.clear()
    sweep_mod.sweep(tasks, tmp_path, jobs=1)  # everything finished: nothing runs
    assert ran == []


def test_a_failed_task_is_reported_and_the_others_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(task: dict[str, Any]) -> dict[str, Any]:
        if task["seed"] == 1:
            raise RuntimeError("boom")
        return _fake_result(task)

    monkeypatch.setattr(sweep_mod, "run_task", fake)
    tasks = sweep_mod.tasks_of(_args(load="0.95", seeds="1-2", speed_models="tier", policies="gangsched"))
    results, failed = sweep_mod.sweep(tasks, tmp_path, jobs=1)
    assert failed == ["0.95-1-tier-gangsched"] and [r["parameters"]["seed"] for r in results] == [2]


def test_runs_of_other_parameters_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_mod, "run_task", _fake_result)
    tasks = sweep_mod.tasks_of(_args(load="0.95", seeds="1", speed_models="tier", policies="gangsched"))
    sweep_mod.sweep(tasks, tmp_path, jobs=1)
    other = sweep_mod.tasks_of(_args(load="0.95", seeds="1", speed_models="tier", policies="gangsched", hours=12.0))
    with pytest.raises(ValueError, match="other parameters"):
        sweep_mod.sweep(other, tmp_path, jobs=1)


def test_the_comparison_is_per_seed_paired() -> None:
    tasks = sweep_mod.tasks_of(
        _args(load="0.95", seeds="1-3", speed_models="tier", policies="gangsched,kube-scheduler")
    )
    rows = sweep_mod.comparison([_fake_result(t) for t in tasks], ["gangsched", "kube-scheduler"])
    util = next(r for r in rows if r["metric"] == "useful_util")
    assert util["mean"] == {"gangsched": 0.62, "kube-scheduler": 0.52}
    d = util["difference"]["kube-scheduler"]
    assert d["n"] == 3 and math.isclose(d["mean"], 0.1) and d["half_width"] == 0.0 and not d["overlaps_zero"]
    big = next(r for r in rows if r["metric"] == "queue_p99_9plus_min")  # no 9+ gang ran: no value, no interval
    assert big["mean"] == {"gangsched": None, "kube-scheduler": None} and big["difference"] == {}
    queue = next(r for r in rows if r["metric"] == "queue_p99_min")
    assert queue["difference"]["kube-scheduler"]["overlaps_zero"]  # 0 +- 0 contains 0
    header = {
        "scenario": "demo",
        "horizon": {
            "arrival_hours": 72.0,
            "warmup_hours": 24.0,
            "measured_window_hours": {"0.95": [24.0, 72.0]},
            "window_seed": 1,
        },
        "seeds": [1, 2, 3],
        "speed_models": ["tier"],
        "policies": ["gangsched", "kube-scheduler"],
        "commit": "abc",
        "runs": 6,
        "tasks": 6,
    }
    md = sweep_mod.markdown(header, rows)
    assert "72 h of arrivals, the first 24 h a warm-up" in md and "Commit: abc" in md and "Seeds: 1, 2, 3" in md
    assert "| useful utilization (higher is better) | 0.620 | 0.520 | +0.100 \u00b1 0.000 |" in md
    assert "overlaps 0" in md


def test_dask_runs_the_tasks_on_a_local_cluster(tmp_path: Path) -> None:
    distributed: Any = pytest.importorskip(
        "dask.distributed", reason="the optional extra gangsched[sweep] (Dask) is not installed"
    )
    tasks = sweep_mod.tasks_of(_args(load="0.6", seeds="1-2", speed_models="tier", policies="kube-scheduler"))
    with distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster:
        results, failed = sweep_mod.sweep(tasks, tmp_path, engine="dask", jobs=2, address=cluster.scheduler_address)
    assert not failed and sorted(r["parameters"]["seed"] for r in results) == [1, 2]
    local = sweep_mod.run_task(tasks[0])  # the same replay in this process: the same figures
    by_seed = {r["parameters"]["seed"]: r for r in results}
    for key in ("useful_util", "jct", "queue", "started_partially"):
        assert by_seed[1]["metrics"][key] == local["metrics"][key]
