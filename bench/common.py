"""Shared helpers of the benchmarks: timing medians and the JSON-line figure format (docs/architecture.md, Tests)."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def figure(
    name: str,
    value: float,
    *,
    unit: str,
    target: float | None,
    better: str,
    **context: Any,
) -> dict[str, Any]:
    """Print one figure as a JSON line (and return it)."""
    assert better in ("lower", "higher"), better
    record = {"bench": name, "value": round(value, 4), "unit": unit, "target": target, "better": better, **context}
    print(json.dumps(record), flush=True)
    return record


def timed_runs(fn: Callable[[], Any], *, runs: int, warmup: int = 1) -> list[float]:
    """Wall-clock seconds of `runs` calls of fn, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def summary(samples: list[float], *, scale: float = 1.0) -> dict[str, float]:
    """min/median/max of samples, multiplied by scale (e.g. 1000 for ms)."""
    return {
        "min": round(min(samples) * scale, 4),
        "median": round(statistics.median(samples) * scale, 4),
        "max": round(max(samples) * scale, 4),
        "runs": len(samples),
    }


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
