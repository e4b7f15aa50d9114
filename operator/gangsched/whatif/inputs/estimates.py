"""Run times that replayed jobs declare, the way users declare them: a share of the jobs' pods carry
`scheduling.gangsched.io/expected-duration` (or `spec.activeDeadlineSeconds`), an over-estimate of the real run time.

Contract: `with_traits(workload, speed, *, share, slack, seed) -> Workload`: the jobs with their declared run times
(below) and their communication shares (whatif/speed.py `assign_comm_shares`), what every replay of the CLI and the
benchmarks does to a workload. `declare_run_times(jobs, share, slack, seed) -> jobs`: each job, with probability
`share` (one draw per job, in order, random.Random(seed)), declares `duration x slack` (`JobSpec.declared_seconds`);
the others declare nothing. `share` in [0, 1], `slack` >= 1 (a deadline shorter than the run would kill the job).
Both are parameters of a replay, written to its summary: the traces say nothing of what users declare; user estimates
are known to be loose over-estimates (Mu'alem & Feitelson, IEEE TPDS 2001, on the IBM SP2's backfilling), hence the
default slack 2.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from gangsched.whatif.model import JobSpec, Workload
from gangsched.whatif.speed import SpeedModel, assign_comm_shares

DEFAULT_SHARE = 0.5
DEFAULT_SLACK = 2.0


def declare_run_times(jobs: Sequence[JobSpec], share: float, slack: float, seed: int) -> tuple[JobSpec, ...]:
    if not 0 <= share <= 1:
        raise ValueError(f"--declared-share: {share!r} must be a fraction in [0, 1]")
    if not slack >= 1:
        raise ValueError(f"--declared-slack: {slack!r} must be >= 1 (a deadline shorter than the run kills the job)")
    rng = random.Random(f"declared-{seed}")
    return tuple(
        dataclasses.replace(job, declared_seconds=job.duration * slack if rng.random() < share else None)
        for job in jobs
    )


def with_traits(
    workload: Workload,
    speed: SpeedModel,
    *,
    share: float = DEFAULT_SHARE,
    slack: float = DEFAULT_SLACK,
    seed: int,
) -> Workload:
    jobs = declare_run_times(workload.jobs, share, slack, seed)
    return dataclasses.replace(workload, jobs=assign_comm_shares(jobs, speed, seed))
