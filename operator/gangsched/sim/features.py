"""The API profile the emulator serves: which Kubernetes 1.37 feature gates (and so which beta/alpha APIs) are on.

Contract:
- `FeatureGates` is an immutable set of enabled gates; `gates.enabled(name)`.
- `PROFILES`: `full` (the default: every gate of `GATES` on except `OPT_IN`, so `scheduling.k8s.io/v1beta1`
  Workload and PodGroup, `scheduling.k8s.io/v1alpha3` CompositePodGroup and pod `spec.schedulingGroup` are
  served) and `plain-1.37` (a
  kube-apiserver 1.37 started without flags: alpha and beta gates of `GATES` off, beta APIs not in
  `--runtime-config`, so none of the above is served and pods' `spec.schedulingGroup` is dropped on write).
- `resolve(profile, overrides) -> FeatureGates`: a profile, then `--feature-gates` overrides in kube-apiserver's
  form (`Name=true,Other=false`); unknown names or values raise ValueError with kube-apiserver's wording
  (`unrecognized feature gate: X`, `invalid value of X=maybe, err: ...`).
Gates, as pkg/features/kube_features.go names them (all default false in 1.37):
- GenericWorkload: the Workload and PodGroup APIs and `Pod.spec.schedulingGroup` (pkg/api/pod/util.go
  dropDisabledPodFields drops the field when off and the old pod did not use it).
- CompositePodGroup: the CompositePodGroup API, `PodGroup.spec.parentCompositePodGroupName` and
  `Workload.spec.compositePodGroupTemplates` (forbidden when off: `+k8s:ifDisabled(CompositePodGroup)=+k8s:forbidden`).
- TopologyAwareWorkloadScheduling: `schedulingConstraints` of PodGroups (dropped when off,
  pkg/registry/scheduling/podgroup/strategy.go dropDisabledSchedulingConstraintsFields) and templates.
- DRAWorkloadResourceClaims: `resourceClaims` of PodGroups (dropped when off,
  dropDisabledDRAWorkloadResourceClaimsFields).
- PodGroupPreemptionPolicy: `preemptionPolicy` of PodGroups and templates (forbidden when off).
- WorkloadAwarePreemption (in OPT_IN: off in every profile, `--feature-gates WorkloadAwarePreemption=true` turns it
  on): the Priority admission plugin resolves a PodGroup's priorityClassName into its priority (and
  preemptionPolicy) on create (sim/podgroup_priority.py).
Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

GATES: tuple[str, ...] = (
    "GenericWorkload",
    "CompositePodGroup",
    "TopologyAwareWorkloadScheduling",
    "DRAWorkloadResourceClaims",
    "PodGroupPreemptionPolicy",
    "WorkloadAwarePreemption",
)
# gates no profile turns on: WorkloadAwarePreemption makes a PodGroup's own spec.priority a Forbidden input unless
# it matches its PriorityClass, which PodGroups written for a cluster without it (the examples) give
OPT_IN = frozenset({"WorkloadAwarePreemption"})
FULL = "full"
PLAIN = "plain-1.37"


@dataclass(frozen=True)
class FeatureGates:
    on: frozenset[str]

    def enabled(self, name: str) -> bool:
        return name in self.on

    def describe(self) -> str:
        """`A=true,B=false` for every known gate, as kube-apiserver logs its --feature-gates."""
        return ",".join(f"{g}={'true' if g in self.on else 'false'}" for g in GATES)


PROFILES: dict[str, FeatureGates] = {
    FULL: FeatureGates(frozenset(GATES) - OPT_IN),
    PLAIN: FeatureGates(frozenset()),
}
DEFAULT = PROFILES[FULL]


def resolve(profile: str = FULL, overrides: str = "") -> FeatureGates:
    """See module docstring."""
    if profile not in PROFILES:
        raise ValueError(f"unknown API profile {profile!r}: one of {', '.join(sorted(PROFILES))}")
    on = set(PROFILES[profile].on)
    for item in (part.strip() for part in overrides.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if name not in GATES:
            raise ValueError(f"unrecognized feature gate: {name}")
        if value.lower() not in ("true", "false"):
            raise ValueError(
                f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": invalid syntax'
            )
        if value.lower() == "true":
            on.add(name)
        else:
            on.discard(name)
    return FeatureGates(frozenset(on))
