"""Chaos figures: short runs of tests/chaos/scenario.py (the operator against the emulator injecting every fault
kind of sim/faults.py at once, on seeded single-class Strict gangs), counted.

- `chaos.runs`: runs made (seeds 1..GANGSCHED_CHAOS_BENCH_SEEDS, default 2);
- `chaos.faults_injected`: faults the emulator injected over those runs (context: by kind);
- `chaos.violations`: invariant violations found over those runs (target 0; context: the first few, per kind
  set). Until the operator's client handles non-JSON error bodies, the 429 (text/plain) and 503 (text/html)
  faults make this non-zero: that is the figure doing its job.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter

from bench.common import figure, log
from tests.chaos.scenario import ALL_KINDS, run_chaos

SEEDS = int(os.environ.get("GANGSCHED_CHAOS_BENCH_SEEDS", "2"))


async def _runs() -> None:
    injected: Counter[str] = Counter()
    violations: list[str] = []
    started = time.monotonic()
    for seed in range(1, SEEDS + 1):
        report = await run_chaos(seed, ALL_KINDS, settle_seconds=10.0)
        log(report.summary())
        injected.update(report.faults_injected)
        violations += [f"seed {seed}: {v}" for v in report.violations]
    seconds = round(time.monotonic() - started, 1)
    figure("chaos.runs", SEEDS, unit="runs", target=None, better="higher", kinds=list(ALL_KINDS), seconds=seconds)
    figure(
        "chaos.faults_injected",
        sum(injected.values()),
        unit="faults",
        target=None,
        better="higher",
        by_kind=dict(injected),
    )
    figure("chaos.violations", len(violations), unit="violations", target=0, better="lower", first=violations[:5])


def main() -> None:
    asyncio.run(_runs())


if __name__ == "__main__":
    main()
