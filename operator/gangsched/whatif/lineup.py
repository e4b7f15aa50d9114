"""The line-up of what-if policies replayed side by side: their names, `--policies` parsing and construction.

Contract: `make_policy(name, workload, wait_seconds)` builds a fresh policy by name: `gangsched` and its variants
(the real core: whatif/core_policy.py); the faithful models of what users run instead (issue 24): `kube-scheduler`
(whatif/kube_scheduler.py), `coscheduling` (scheduler-plugins' Coscheduling: whatif/coscheduling.py) and
`kube-scheduler-gang` (Kubernetes 1.37's GangScheduling: whatif/kube_gang.py); two simplified baselines
(whatif/baselines.py, not in the default set): `pod-by-pod-fifo`, `permit-wait-600s` (docs/whatif.md). `POLICY_NAMES`
lists them all, `FAITHFUL_BASELINES` the faithful ones; `parse_policies(text)` validates a list (ValueError).
Variants of gangsched (suffixes, combinable with "+"): `spread` (score strategy spread), `strict` / `nonstrict`
(every gang's mode), `notopo` (no topology tree or constraint), `nopreempt` (preemptionPolicy Never), `nohold` (no
capacity held for a starving gang), `nopack` (gangs without a topology not packed into one domain).
"""

from __future__ import annotations

from gangsched.whatif.model import Workload
from gangsched.whatif.policies import Policy

FAITHFUL_BASELINES = ("kube-scheduler", "coscheduling", "kube-scheduler-gang")
BASELINES = (*FAITHFUL_BASELINES, "pod-by-pod-fifo", "permit-wait-600s")
PERMIT_WAIT_SECONDS = 600.0  # permit-wait-600s's Permit timeout (a job's own waiting time overrides it)
GANGSCHED_VARIANTS = ("spread", "strict", "nonstrict", "notopo", "nopreempt", "nohold", "nopack")
POLICY_NAMES = ("gangsched", *(f"gangsched+{v}" for v in GANGSCHED_VARIANTS), *BASELINES)


def parse_policies(text: str) -> list[str]:
    """Comma-separated policy names, validated (ValueError names the bad one and what is allowed)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        base, *variants = name.split("+")
        if name in BASELINES:
            continue
        if base != "gangsched" or any(v not in GANGSCHED_VARIANTS for v in variants):
            raise ValueError(
                f"--policies: unknown policy {name!r}; allowed: {', '.join(BASELINES)}, gangsched"
                f" with optional +variants from {', '.join(GANGSCHED_VARIANTS)}"
            )
    if not names:
        raise ValueError("--policies: at least one policy is needed")
    return names


def make_policy(name: str, workload: Workload, wait_seconds: float) -> Policy:
    """A fresh policy (no state shared between replays)."""
    if name in BASELINES:
        return _baseline(name, workload)
    from gangsched.whatif.core_policy import CorePolicy, variant_options

    return CorePolicy(name, workload, variant_options(name.split("+")[1:]), wait_seconds)


def _baseline(name: str, workload: Workload) -> Policy:
    if name == "kube-scheduler":
        from gangsched.whatif.kube_scheduler import KubeScheduler

        return KubeScheduler(workload.nodes)
    if name == "coscheduling":
        from gangsched.whatif.coscheduling import Coscheduling

        return Coscheduling(workload.nodes)
    if name == "kube-scheduler-gang":
        from gangsched.whatif.kube_gang import KubeSchedulerGang

        return KubeSchedulerGang(workload.nodes, workload.domains)
    from gangsched.whatif.baselines import PermitWait, PodByPod

    return PodByPod(workload.nodes) if name == "pod-by-pod-fifo" else PermitWait(workload.nodes, PERMIT_WAIT_SECONDS)
