"""The operator's configuration: a YAML file (`gangsched run --config FILE`) -> OperatorConfig.

Contract:
- `OperatorConfig` (pydantic, frozen): camelCase keys in the file, snake_case attributes; every field has a
  default, so an empty file or no file gives a working configuration. Unknown keys are rejected (a typo must
  not silently fall back to a default).
- `load_config(path | None) -> OperatorConfig`; `config_from_mapping(data) -> OperatorConfig`. Bad input raises
  core.errors.InvalidField naming the field path (e.g. `leaderElection.leaseDurationSeconds`), the value and
  what is allowed; a missing or unreadable file raises InvalidField for `--config`.
- `OperatorConfig.scheduler_config()` builds the core's SchedulerConfig from the scheduling fields.
- Seconds are finite numbers > 0; `defaultWaitSeconds` at most MAX_WAIT_SECONDS (2147483647: the waiting time's
  documented maximum, what a PodGroup's scheduleTimeoutSeconds holds).

Example (all defaults):
    schedulerName: gangsched          # the one-name form of schedulerNames
    # schedulerNames: [gangsched, scheduler-plugins-scheduler]  # every name served by this replica (one cache);
    #   the first (or schedulerName, which must then be one of them) names events and leader election's component
    namespace: gangsched-system
    defaultWaitSeconds: 600
    backoff: {initialSeconds: 1, maxSeconds: 60}
    scoreStrategy: binpack            # or spread
    bindConcurrency: 64
    maxUnitsPerCycle: 64
    topology: {configMapName: gangsched-topology, key: topology.json, nodeLabelTiers: []}
    leaderElection: {enabled: true, leaseName: gangsched, leaseDurationSeconds: 15,
                     renewDeadlineSeconds: 10, retryPeriodSeconds: 2}
    apiClient: {qps: 1000, burst: 2000}  # client-side rate limit of API requests (token bucket)
    metricsPort: 8080
    probesPort: 8081
    progressDeadlineSeconds: 120
    createPodGroupsForAnnotationGangs: true
    preemption: {pdb: respect}        # or prefer: a victim a PodDisruptionBudget protects is deleted (last resort)
    starvation: {holdAfterSeconds: 60, maxHeldGangs: 1}  # capacity held for a starving gang (0: off)
    inferGangs: {enabled: false, allNamespaces: false, namespaceLabel: scheduling.gangsched.io/infer-gangs}
      # gangs inferred from the owning workload (Indexed Job, JobSet, LWS, PyTorchJob/MPIJob, TrainJob, RayCluster)
      # for pods that declare none; enabled: in namespaces labelled <namespaceLabel>: "true", or every namespace
      # with allNamespaces (needs manifests/rbac-infer-gangs.yaml)
    statusCompatibility: gangsched    # PodGroup phase once minMember members succeeded: Succeeded; or
      # scheduler-plugins: Finished, scheduler-plugins' name (apis/scheduling/v1alpha1 PodGroupFinished)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gangsched.core.values.errors import InvalidField

if TYPE_CHECKING:
    from gangsched.core.values.config import SchedulerConfig

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
MAX_WAIT_SECONDS = 2**31 - 1  # as models/annotations.py: what a PodGroup's scheduleTimeoutSeconds (int32) holds
WaitSeconds = Annotated[float, Field(gt=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)]
Port = Annotated[int, Field(strict=True, ge=1, le=65535)]


class _Section(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)


class BackoffConfig(_Section):
    initial_seconds: PositiveFloat = Field(1.0, alias="initialSeconds")
    max_seconds: PositiveFloat = Field(60.0, alias="maxSeconds")

    @model_validator(mode="after")
    def _ordered(self) -> BackoffConfig:
        if self.max_seconds < self.initial_seconds:
            raise ValueError(f"maxSeconds must be >= initialSeconds ({self.initial_seconds})")
        return self


class TopologyConfig(_Section):
    config_map_name: Annotated[str, Field(min_length=1)] = Field("gangsched-topology", alias="configMapName")
    key: Annotated[str, Field(min_length=1)] = "topology.json"
    # node label key per tier, lowest tier first (tier 1 = unit/ToR); empty: the ConfigMap is the only source
    node_label_tiers: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list, alias="nodeLabelTiers")


class LeaderElectionConfig(_Section):
    enabled: bool = True
    lease_name: Annotated[str, Field(min_length=1)] = Field("gangsched", alias="leaseName")
    lease_duration_seconds: PositiveFloat = Field(15.0, alias="leaseDurationSeconds")
    renew_deadline_seconds: PositiveFloat = Field(10.0, alias="renewDeadlineSeconds")
    retry_period_seconds: PositiveFloat = Field(2.0, alias="retryPeriodSeconds")

    @model_validator(mode="after")
    def _ordered(self) -> LeaderElectionConfig:
        if not self.retry_period_seconds < self.renew_deadline_seconds < self.lease_duration_seconds:
            raise ValueError("need retryPeriodSeconds < renewDeadlineSeconds < leaseDurationSeconds")
        return self


class ApiClientConfig(_Section):
    """The client-side rate limit (k8s/ratelimit.py): sized not to cap binding throughput (see `make bench`)."""

    qps: PositiveFloat = 1000.0
    burst: Annotated[int, Field(strict=True, ge=1, le=100_000)] = 2000


class PreemptionConfig(_Section):
    """How preemption treats PodDisruptionBudgets. Both prefer victims whose eviction violates no budget;
    `respect`: every victim goes through the Eviction API, which decides (a refusal is final for that
    preemptor); `prefer`: kube-scheduler's way, a budget is only a preference: a victim it protects is deleted
    (pkg/scheduler/framework/preemption/preemption.go `prepareCandidate` deletes victims whatever their PDBs)."""

    pdb: Literal["respect", "prefer"] = "respect"


class StarvationConfig(_Section):
    """Capacity held for a gang that has waited too long (core/gang/starvation.py): `holdAfterSeconds` of being
    unschedulable before the hold starts (0: never hold), `maxHeldGangs` holding at once (one per priority)."""

    hold_after_seconds: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] = Field(60.0, alias="holdAfterSeconds")
    max_held_gangs: Annotated[int, Field(strict=True, ge=1, le=1000)] = Field(1, alias="maxHeldGangs")


class InferGangsConfig(_Section):
    """Gangs inferred from workloads (models/inferred.py): off by default."""

    enabled: bool = False
    all_namespaces: bool = Field(False, alias="allNamespaces")
    namespace_label: Annotated[str, Field(min_length=1)] = Field(
        "scheduling.gangsched.io/infer-gangs", alias="namespaceLabel"
    )


SchedulerName = Annotated[str, Field(min_length=1, max_length=253)]  # a DNS-1123 subdomain in a pod spec
MAX_SCHEDULER_NAMES = 32


class OperatorConfig(_Section):
    scheduler_name: SchedulerName = Field("gangsched", alias="schedulerName")
    scheduler_names: Annotated[list[SchedulerName], Field(min_length=1, max_length=MAX_SCHEDULER_NAMES)] | None = Field(
        None, alias="schedulerNames"
    )
    namespace: Annotated[str, Field(min_length=1)] = "gangsched-system"
    default_wait_seconds: WaitSeconds = Field(600.0, alias="defaultWaitSeconds")
    backoff: BackoffConfig = Field(default_factory=lambda: BackoffConfig.model_validate({}))
    score_strategy: Literal["binpack", "spread"] = Field("binpack", alias="scoreStrategy")
    bind_concurrency: Annotated[int, Field(strict=True, ge=1, le=10_000)] = Field(64, alias="bindConcurrency")
    # gangs (or lone pods) decided per scheduling cycle; each is still its own transaction
    max_units_per_cycle: Annotated[int, Field(strict=True, ge=1, le=100_000)] = Field(64, alias="maxUnitsPerCycle")
    topology: TopologyConfig = Field(default_factory=lambda: TopologyConfig.model_validate({}))
    leader_election: LeaderElectionConfig = Field(
        default_factory=lambda: LeaderElectionConfig.model_validate({}), alias="leaderElection"
    )
    api_client: ApiClientConfig = Field(default_factory=lambda: ApiClientConfig.model_validate({}), alias="apiClient")
    metrics_port: Port = Field(8080, alias="metricsPort")
    probes_port: Port = Field(8081, alias="probesPort")
    # /livez fails when the leader owes a scheduling round (woken, or a round running) for longer than this
    progress_deadline_seconds: PositiveFloat = Field(120.0, alias="progressDeadlineSeconds")
    create_pod_groups_for_annotation_gangs: bool = Field(True, alias="createPodGroupsForAnnotationGangs")
    preemption: PreemptionConfig = Field(default_factory=lambda: PreemptionConfig.model_validate({}))
    starvation: StarvationConfig = Field(default_factory=lambda: StarvationConfig.model_validate({}))
    infer_gangs: InferGangsConfig = Field(
        default_factory=lambda: InferGangsConfig.model_validate({}), alias="inferGangs"
    )
    status_compatibility: Literal["gangsched", "scheduler-plugins"] = Field("gangsched", alias="statusCompatibility")

    @model_validator(mode="after")
    def _names(self) -> OperatorConfig:
        names = self.scheduler_names
        if names is None:
            return self
        if len(set(names)) != len(names):
            raise InvalidField("schedulerNames", names, "must not repeat a name")
        if "scheduler_name" in self.model_fields_set:
            if self.scheduler_name not in names:
                raise InvalidField("schedulerName", self.scheduler_name, f"must be one of schedulerNames {names}")
        else:  # the list alone: its first name is the primary one
            object.__setattr__(self, "scheduler_name", names[0])
        return self

    @property
    def served_names(self) -> tuple[str, ...]:
        """Every schedulerName this replica serves, the primary (`scheduler_name`) first."""
        rest = [n for n in self.scheduler_names or () if n != self.scheduler_name]
        return (self.scheduler_name, *rest)

    @property
    def probe_port(self) -> int:
        """The same as probes_port (both spellings are in use)."""
        return self.probes_port

    def scheduler_config(self) -> SchedulerConfig:
        """The core's tunables taken from this configuration."""
        from gangsched.core.values.config import SchedulerConfig

        return SchedulerConfig(
            scheduler_name=self.scheduler_name,
            default_wait_seconds=self.default_wait_seconds,
            backoff_initial_seconds=self.backoff.initial_seconds,
            backoff_max_seconds=self.backoff.max_seconds,
            score_strategy=self.score_strategy,
            max_units_per_cycle=self.max_units_per_cycle,
            hold_after_seconds=self.starvation.hold_after_seconds,
            max_held_gangs=self.starvation.max_held_gangs,
            preemption_pdb=self.preemption.pdb,
        )


_ALLOWED = {
    "extra_forbidden": "not a known setting",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "string_too_long": "must be at most 253 characters",
    "too_short": "must not be empty",
    "too_long": f"must list at most {MAX_SCHEDULER_NAMES} names",
    "list_type": "must be a list",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "dict_type": "must be a mapping",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
}


def _allowed(error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "greater_than":
        return f"must be a number > {ctx['gt']}"
    if kind == "less_than_equal" and isinstance(ctx.get("le"), float):  # (a float setting: seconds)
        return f"must be a number > 0 and <= {int(ctx['le'])}"
    if kind == "greater_than_equal" and isinstance(ctx.get("ge"), float):  # (seconds, 0 allowed)
        return f"must be a number >= {ctx['ge']:g}"
    if kind in ("greater_than_equal", "less_than_equal") or kind.startswith("int"):
        return f"must be an integer >= {ctx.get('ge', 1)}" + (f" and <= {ctx['le']}" if "le" in ctx else "")
    if kind == "literal_error":
        return "one of " + str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return _ALLOWED.get(kind, str(error["msg"]))


def config_from_mapping(data: Any) -> OperatorConfig:
    """Validate a parsed config document; InvalidField names the first bad field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidField("config", data, "must be a YAML mapping of settings")
    try:
        return OperatorConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        named = (first.get("ctx") or {}).get("error")
        if isinstance(named, InvalidField):  # a check across fields names its own field
            raise InvalidField(named.field, named.value, named.allowed) from None
        path = ".".join(str(part) for part in first["loc"]) or "config"
        raise InvalidField(path, first.get("input"), _allowed(first)) from None


def load_config(path: str | Path | None) -> OperatorConfig:
    """The configuration from a YAML file, or the defaults when `path` is None."""
    if path is None:
        return OperatorConfig.model_validate({})
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidField("--config", str(path), f"must be a readable YAML file ({err.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InvalidField("--config", str(path), f"must be valid YAML ({err})") from None
    return config_from_mapping(data)
