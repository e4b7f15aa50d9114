"""The operator's configuration: a YAML file (`gangsched run --config FILE`) -> OperatorConfig.

Contract:
- `OperatorConfig` (pydantic, frozen): camelCase keys in the file, snake_case attributes; every field has a
  default (an empty file or no file works); unknown keys are rejected.
- `load_config(path | None)`, `config_from_mapping(data)`: bad input raises InvalidConfig listing every problem of
  the file at once, each naming the key path, the value and what is allowed (unreadable file, not YAML, too deep,
  a key given twice: models/config_file.py). `gangsched run` prints the list and exits 2.
- `OperatorConfig.scheduler_config()` builds the core's SchedulerConfig from the scheduling fields.
- Seconds are finite numbers > 0; `defaultWaitSeconds` at most MAX_WAIT_SECONDS (2147483647).
Every key with its default: docs/configuration.md. More: docs/modules.md#modelsconfigpy.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from gangsched.core import InvalidField
from gangsched.models.config_file import read_document

if TYPE_CHECKING:
    from gangsched.core import SchedulerConfig

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
MAX_WAIT_SECONDS = 2**31 - 1  # as models/annotations.py: what a PodGroup's scheduleTimeoutSeconds (int32) holds
WaitSeconds = Annotated[float, Field(gt=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)]
Port = Annotated[int, Field(strict=True, ge=1, le=65535)]


def bind_address(value: str) -> str:
    """An IP address to listen on (0.0.0.0 or :: for every interface, 127.0.0.1 for the node's loopback only)."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address (e.g. 0.0.0.0, 127.0.0.1, ::)") from None


BindAddress = Annotated[str, AfterValidator(bind_address)]


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


class BindBackoffConfig(BackoffConfig):
    """The backoff of a gang (or lone pod) whose binding failed (runtime/bind_backoff.py): kube-scheduler's
    podInitialBackoffSeconds 1 and podMaxBackoffSeconds 10 by default."""

    max_seconds: PositiveFloat = Field(10.0, alias="maxSeconds")


class ReadinessConfig(_Section):
    """API-side problems /readyz reports (503, `problem` names it): no pod watch running for longer than
    `staleCacheSeconds`, bindings failing (none succeeding) for longer than `bindsFailingSeconds`; a forbidden
    answer at once. /livez never fails for them (a restart does not cure the API)."""

    stale_cache_seconds: PositiveFloat = Field(30.0, alias="staleCacheSeconds")
    binds_failing_seconds: PositiveFloat = Field(60.0, alias="bindsFailingSeconds")


class TopologyConfig(_Section):
    config_map_name: Annotated[str, Field(min_length=1)] = Field("gangsched-topology", alias="configMapName")
    key: Annotated[str, Field(min_length=1)] = "topology.json"
    # node label key per tier, lowest tier first (tier 1 = rack/ToR); empty: the ConfigMap is the only source
    node_label_tiers: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list, alias="nodeLabelTiers")
    # a gang that declares no networkTopology is packed into the lowest domain that holds it (core/placement/packing.py)
    pack_gangs: bool = Field(True, alias="packGangs")


class LeaderElectionConfig(_Section):
    enabled: bool = True
    lease_name: Annotated[str, Field(min_length=1)] = Field("gangsched", alias="leaseName")
    lease_duration_seconds: PositiveFloat = Field(15.0, alias="leaseDurationSeconds")
    renew_deadline_seconds: PositiveFloat = Field(10.0, alias="renewDeadlineSeconds")
    retry_period_seconds: PositiveFloat = Field(2.0, alias="retryPeriodSeconds")
    # on stop the Lease is released within this bound, or left to expire (an unresponsive API); the Deployment's
    # terminationGracePeriodSeconds covers it (manifests/deployment.yaml)
    release_timeout_seconds: PositiveFloat = Field(2.0, alias="releaseTimeoutSeconds")

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
    bind_backoff: BindBackoffConfig = Field(
        default_factory=lambda: BindBackoffConfig.model_validate({}), alias="bindBackoff"
    )
    readiness: ReadinessConfig = Field(default_factory=lambda: ReadinessConfig.model_validate({}))
    # gangs (or lone pods) decided per scheduling cycle; each is still its own transaction
    max_units_per_cycle: Annotated[int, Field(strict=True, ge=1, le=100_000)] = Field(64, alias="maxUnitsPerCycle")
    topology: TopologyConfig = Field(default_factory=lambda: TopologyConfig.model_validate({}))
    leader_election: LeaderElectionConfig = Field(
        default_factory=lambda: LeaderElectionConfig.model_validate({}), alias="leaderElection"
    )
    api_client: ApiClientConfig = Field(default_factory=lambda: ApiClientConfig.model_validate({}), alias="apiClient")
    metrics_port: Port = Field(8080, alias="metricsPort")
    probes_port: Port = Field(8081, alias="probesPort")
    # the addresses /metrics and the probes listen on (gangsched run --metrics-bind-address / --probes-bind-address)
    metrics_bind_address: BindAddress = Field("0.0.0.0", alias="metricsBindAddress")
    probes_bind_address: BindAddress = Field("0.0.0.0", alias="probesBindAddress")
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
        from gangsched.core import SchedulerConfig

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
            pack_gangs=self.topology.pack_gangs,
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
        return f"must be a number > {ctx['gt']:g}"
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


class InvalidConfig(InvalidField):
    """Every problem of one configuration at once. As an InvalidField it names the first one (field, value,
    allowed); `problems` lists them all and the message shows one per line, under the file's name."""

    def __init__(self, source: str, problems: list[InvalidField]) -> None:
        first = problems[0]
        super().__init__(first.field, first.value, first.allowed)
        self.source = source
        self.problems = problems
        count = f"{len(problems)} problem" + ("s" if len(problems) > 1 else "")
        lines = "".join(f"\n  {problem}" for problem in problems)
        self.args = (f"{source}: {count}:{lines}",)


def _problem(error: Any) -> InvalidField:
    named = (error.get("ctx") or {}).get("error")
    if isinstance(named, InvalidField):  # a check across fields names its own field
        return InvalidField(named.field, named.value, named.allowed)
    path = ".".join(str(part) for part in error["loc"]) or "config"
    return InvalidField(path, error.get("input"), _allowed(error))


def _validate(data: Any) -> tuple[OperatorConfig | None, list[InvalidField]]:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return None, [InvalidField("config", data, "must be a YAML mapping of settings")]
    try:
        return OperatorConfig.model_validate(data), []
    except ValidationError as err:
        return None, [_problem(error) for error in err.errors()]


def config_from_mapping(data: Any, *, source: str = "config") -> OperatorConfig:
    """Validate a parsed config document; InvalidConfig lists every bad field (and names the first)."""
    config, problems = _validate(data)
    if problems or config is None:
        raise InvalidConfig(source, problems) from None
    return config


def load_config(path: str | Path | None) -> OperatorConfig:
    """The configuration from a YAML (or, named *.json, JSON) file, or the defaults when `path` is None.
    InvalidConfig lists every problem of the file: its text (keys given twice, nesting, syntax) and its
    settings, each with the key path, the value and what is allowed."""
    if path is None:
        return OperatorConfig.model_validate({})
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        problem = InvalidField("--config", source, f"must be a readable YAML file ({reason})")
        raise InvalidConfig(source, [problem]) from None
    try:
        data, problems = read_document(text, source="--config", json_syntax=source.endswith(".json"))
    except InvalidField as err:
        raise InvalidConfig(source, [err]) from None
    config, invalid = _validate(data)
    problems += invalid
    if problems or config is None:
        raise InvalidConfig(source, problems)
    return config
