"""Golden decision trace: every decision of seeded replays, in order, as text lines (not a benchmark figure).

For behaviour-neutral changes (moves, renames, merges of duplicate code, pure speed-ups): record a trace before the
change and one after; they must be identical once the `###` header lines are set aside:

    .venv/bin/python -m bench.golden_trace /tmp/before.txt     # on the old commit
    .venv/bin/python -m bench.golden_trace /tmp/after.txt      # on the new one
    diff <(sed 's/^### .*/###/' /tmp/before.txt) <(sed 's/^### .*/###/' /tmp/after.txt)

Default (gangsched's core): the demo (gangsched and gangsched+nohold at three loads) and two seeded 3-hour replays
of the Alibaba 2026 inventory, with the placement-independent model and no declared run times. Every non-empty Plan
is one line: bindings, reservations, releases, evictions, nominations, preemptions, timeouts, statuses, events,
conditions, deadlocks and the next wake-up. It wraps `whatif.core_policy.run_cycle` (the core's entry the replay
calls). `--policies kube-scheduler,coscheduling,kube-scheduler-gang` (any of the faithful baselines, whatif/kube/):
the demo and two seeded replays of the Alibaba 2026 inventory (`--hours`, default 6, at loads 0.95 and 0.8) with
those policies; every call of `KubeFramework.cycle`, `finish` and `node_down` that moved a pod, ended an incarnation
or set a wake-up is one line: the pod moves (incarnation, phases, node), the ended incarnations, timeouts, wake-up.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import gangsched.whatif.core_policy as core_policy
from gangsched import cli
from gangsched.whatif.kube.framework import KubeFramework

CORE_POLICIES = "gangsched,gangsched+nohold"


def _replays(policies: str, hours: str) -> list[list[str]]:
    core = policies == CORE_POLICIES
    alibaba = ["--nodes", "alibaba-2026", "--synthetic", "--hours", "3" if core else hours]
    return [
        ["--demo", "--policies", policies],
        [*alibaba, "--load", "0.95", "--seed", "1", "--policies", "gangsched" if core else policies],
        [*alibaba, "--load", "0.8", "--seed", "7", "--policies", "gangsched" if core else policies],
    ]


FIXED = ["--no-plots", "--speed-model", "none", "--declared-share", "0"]


def _line(now: float, plan: Any) -> str:
    return (
        f"t={now!r} bind={plan.bindings} res={plan.reservations} rel={plan.releases} ev={plan.evictions} "
        f"nom={plan.nominations} nclr={plan.nomination_clears} pre={sorted(plan.preemptions.items())} "
        f"to={[repr(t) for t in plan.timeouts]} st={sorted((k, repr(v)) for k, v in plan.gang_status.items())} "
        f"evt={[repr(e) for e in plan.events]} cond={[repr(c) for c in plan.conditions]} "
        f"dl={[repr(d) for d in plan.deadlocks]} wake={plan.next_wakeup!r}"
    )


def _baseline_line(kind: str, policy: str, now: float, out: Any) -> str:
    moves = out if isinstance(out, list) else out.moves
    text = " ".join(f"{m.job}:{m.gpus}:{m.old.name}>{m.new.name}@{m.node}" for m in moves)
    if isinstance(out, list):
        return f"{kind} {policy} t={now!r} {text}"
    ended = [(e.job, e.reason) for e in out.ended]
    return f"{kind} {policy} t={now!r} {text} end={ended} to={out.timeouts} wake={out.next_wakeup!r}"


def _wrap_baselines(lines: list[str]) -> Callable[[], None]:
    real_cycle, real_finish, real_down = KubeFramework.cycle, KubeFramework.finish, KubeFramework.node_down

    def cycle(self: KubeFramework, now: float) -> Any:
        out = real_cycle(self, now)
        if out.moves or out.ended or out.timeouts or out.next_wakeup is not None:
            lines.append(_baseline_line("cycle", self.name, now, out))
        return out

    def finish(self: KubeFramework, key: str, now: float) -> Any:
        moves = real_finish(self, key, now)
        lines.append(_baseline_line(f"finish {key}", self.name, now, moves))
        return moves

    def node_down(self: KubeFramework, name: str, now: float) -> Any:
        out = real_down(self, name, now)
        lines.append(_baseline_line(f"down {name}", self.name, now, out))
        return out

    KubeFramework.cycle = cycle  # type: ignore[method-assign]
    KubeFramework.finish = finish  # type: ignore[method-assign]
    KubeFramework.node_down = node_down  # type: ignore[method-assign]

    def restore() -> None:
        KubeFramework.cycle = real_cycle  # type: ignore[method-assign]
        KubeFramework.finish = real_finish  # type: ignore[method-assign]
        KubeFramework.node_down = real_down  # type: ignore[method-assign]

    return restore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.golden_trace", description=__doc__.splitlines()[0])
    parser.add_argument("out", help="where the trace is written")
    parser.add_argument("--policies", default=CORE_POLICIES, help="gangsched's (default) or faithful baselines")
    parser.add_argument("--hours", default="6", help="baselines: hours of the Alibaba replays (default 6)")
    parser.add_argument("--scratch", default="/tmp/golden-trace-out", help="the replays' output directories")
    args = parser.parse_args(argv)
    lines: list[str] = []
    real = core_policy.run_cycle

    def traced(state: Any, now: float, config: Any) -> Any:
        plan = real(state, now, config)
        if not plan.empty:
            lines.append(_line(now, plan))
        return plan

    core_policy.run_cycle = traced  # type: ignore[assignment]
    restore = _wrap_baselines(lines)
    try:
        for i, replay_args in enumerate(_replays(args.policies, args.hours)):
            lines.append("### " + " ".join(replay_args))
            cli.main(["sim", "replay", *replay_args, *FIXED, "--out", f"{args.scratch}/{i}"])
    finally:
        core_policy.run_cycle = real  # type: ignore[assignment]
        restore()
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"{len(lines)} lines in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
