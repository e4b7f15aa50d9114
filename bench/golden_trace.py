"""Golden decision trace: every Plan decision of seeded replays, in order, as text lines (not a benchmark figure).

For behaviour-neutral changes of the core (moves, renames, merges of duplicate code): record a trace before the
change and one after; they must be identical once the `###` header lines are set aside:

    .venv/bin/python -m bench.golden_trace /tmp/before.txt     # on the old commit
    .venv/bin/python -m bench.golden_trace /tmp/after.txt      # on the new one
    diff <(sed 's/^### .*/###/' /tmp/before.txt) <(sed 's/^### .*/###/' /tmp/after.txt)

The replays: the demo (gangsched and gangsched+nohold at three loads) and two seeded 3-hour replays of the Alibaba
2026 inventory, with the placement-independent model and no declared run times. Every non-empty Plan is one line:
bindings, reservations, releases, evictions, nominations, preemptions, timeouts, statuses, events, conditions,
deadlocks and the next wake-up. It wraps `whatif.core_policy.schedule` (the core's entry the replay calls).
"""

from __future__ import annotations

import sys
from typing import Any

import gangsched.whatif.core_policy as core_policy
from gangsched import cli

REPLAYS = (
    ["--demo", "--policies", "gangsched,gangsched+nohold"],
    [
        "--nodes",
        "alibaba-2026",
        "--synthetic",
        "--hours",
        "3",
        "--load",
        "0.95",
        "--seed",
        "1",
        "--policies",
        "gangsched",
    ],
    [
        "--nodes",
        "alibaba-2026",
        "--synthetic",
        "--hours",
        "3",
        "--load",
        "0.8",
        "--seed",
        "7",
        "--policies",
        "gangsched",
    ],
)
FIXED = ["--no-plots", "--speed-model", "none", "--declared-share", "0"]


def _line(now: float, plan: Any) -> str:
    return (
        f"t={now!r} bind={plan.bindings} res={plan.reservations} rel={plan.releases} ev={plan.evictions} "
        f"nom={plan.nominations} nclr={plan.nomination_clears} pre={sorted(plan.preemptions.items())} "
        f"to={[repr(t) for t in plan.timeouts]} st={sorted((k, repr(v)) for k, v in plan.gang_status.items())} "
        f"evt={[repr(e) for e in plan.events]} cond={[repr(c) for c in plan.conditions]} "
        f"dl={[repr(d) for d in plan.deadlocks]} wake={plan.next_wakeup!r}"
    )


def main(out_path: str, scratch: str = "/tmp/golden-trace-out") -> int:
    lines: list[str] = []
    real = core_policy.schedule

    def traced(state: Any, now: float, config: Any) -> Any:
        plan = real(state, now, config)
        if not plan.empty:
            lines.append(_line(now, plan))
        return plan

    core_policy.schedule = traced  # type: ignore[assignment]
    try:
        for i, args in enumerate(REPLAYS):
            lines.append("### " + " ".join(args))
            cli.main(["sim", "replay", *args, *FIXED, "--out", f"{scratch}/{i}"])
    finally:
        core_policy.schedule = real  # type: ignore[assignment]
    with open(out_path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"{len(lines)} lines in {out_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
