"""The API profile the emulator serves: which Kubernetes 1.37 feature gates (and so which beta/alpha APIs) are on.

Contract:
- `FeatureGates` is an immutable set of enabled gates; `gates.enabled(name)`.
- `PROFILES`: `full` (default: every gate of `GATES` on except `OPT_IN`) and `plain-1.37` (a kube-apiserver 1.37
  without flags: none of them on, so no Workload, PodGroup, CompositePodGroup or pod `spec.schedulingGroup`).
- `resolve(profile, overrides) -> FeatureGates`: a profile, then `--feature-gates Name=true,Other=false`; unknown
  names or values raise ValueError in kube-apiserver's wording.
- Gates (pkg/features/kube_features.go): GenericWorkload, CompositePodGroup, TopologyAwareWorkloadScheduling,
  DRAWorkloadResourceClaims, PodGroupPreemptionPolicy, WorkloadAwarePreemption (OPT_IN). Pure.
More: docs/modules.md#simfeaturespy.
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
