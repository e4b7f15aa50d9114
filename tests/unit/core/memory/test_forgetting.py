"""Every per-gang structure of the core forgets a gang when it is deleted: 10,000 gangs (with pods) go through
binding, preemption (victims, nominations), NonStrict reservations with a waiting time, backoff, a missing
PodGroup and pods scheduled alone, are deleted, and every structure returns to its baseline size."""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode
from tests.builders import add_gang, add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=100)
NODES = 6
ROUNDS = 2_000  # five gangs per round; every fifth round goes through everything, the others just bind


def _round(c: SchedulerState, r: int, now: float) -> tuple[list[str], list[str], dict[str, int]]:
    """One round of five gangs and a lone pod; returns (pods, gangs, what happened)."""
    pods = add_gang(c, f"low{r}", 4, gpu=8, priority=0)
    first = step(c, CFG, now)
    pods += add_gang(c, f"part{r}", 3, min_member=3, gpu=8, mode=GangMode.NON_STRICT, wait=1.0)
    pods += add_gang(c, f"high{r}", 4, gpu=8, priority=100)
    pods += add_gang(c, f"huge{r}", 1, gpu=16)  # never fits: backs off
    pods += add_gang(c, f"nopg{r}", 1, gpu=1, spec=False)  # its PodGroup never comes
    pods.append(add_pod(c, f"alone{r}", gpu=16))  # never fits: backs off alone
    second = step(c, CFG, now + 0.1)
    third = step(c, CFG, now + 2.0)  # part's waiting time ends
    seen = {
        "bound": len(first.bindings),
        "evictions": len(second.evictions),
        "nominations": len(second.nominations),
        "reservations": len(second.reservations),
        "backoffs": len(second.unit_backoffs),
        "timeouts": len(third.timeouts),
    }
    gangs = [f"default/{g}{r}" for g in ("low", "part", "high", "huge", "nopg")]
    return pods, gangs, seen


def _light_round(c: SchedulerState, r: int, now: float) -> tuple[list[str], list[str]]:
    pods = [key for g in range(5) for key in add_gang(c, f"light{r}-{g}", 1, gpu=0)]
    assert len(step(c, CFG, now).bindings) == 5
    return pods, [f"default/light{r}-{g}" for g in range(5)]


def test_ten_thousand_gangs_leave_nothing_behind() -> None:
    c = SchedulerState()
    add_nodes(c, NODES, gpu=8)
    baseline = c.sizes()
    change_log_bound = 4 * NODES + 10_000
    peak: dict[str, int] = {}
    for r in range(ROUNDS):
        if r % 5:
            pods, gangs = _light_round(c, r, now=10.0 * r)
        else:
            pods, gangs, seen = _round(c, r, now=10.0 * r)
            if r == 0:  # every kind of structure was exercised
                assert seen == {
                    "bound": 4,
                    "evictions": 4,
                    "nominations": 4,
                    "reservations": 2,
                    "backoffs": 4,  # part, high (waiting for its victims), huge, alone
                    "timeouts": 1,
                }, seen
        for key, size in c.sizes().items():
            peak[key] = max(peak.get(key, 0), size)
        for pod in pods:
            c.remove_pod(pod)
        for gang in gangs:
            c.remove_gang(gang)
    after = c.sizes()
    assert after.pop("change_log") <= change_log_bound
    baseline.pop("change_log")
    assert after == baseline, {k: (baseline[k], v) for k, v in after.items() if v != baseline[k]}
    assert c.gangs == {} and c.pods == {} and c.used == {}
    grew = {k for k, v in peak.items() if v > baseline.get(k, 0)}
    assert {"gangs", "slots", "nominated", "assumed", "reserving", "evicting", "preempting", "gang_units"} <= grew
