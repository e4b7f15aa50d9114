"""The PodGroup custom resource (scheduling.x-k8s.io/v1alpha1, and the same kind in scheduling.sigs.k8s.io/v1alpha1) as
pydantic models, and its GangSpec.

Contract:
- `PodGroupSpec`, `PodGroupStatus`, `PodGroupCondition`, `PodGroup`: pydantic models with camelCase aliases
  (`to_api()` dumps camelCase without unset fields), mirroring crds/podgroups.yaml (a test keeps them in step).
- `PodGroupPhase`: scheduler-plugins' phases plus Succeeded (its Finished) and Timeout.
- `podgroup_spec_from_api(obj) -> GangSpec`: Koordinator and stale-gang annotations win over spec fields; invalid
  values raise core.errors.InvalidField naming the field (or annotation key), the value and what is allowed.
- `occupied_by(namespace, ownerReferences)`: status.occupiedBy as scheduler-plugins writes it, None without owners.
- `podgroup_times(obj) -> PodGroupTimes`: creation and scheduleStartTime (None / 0 when absent or unreadable).
Not on the per-pod hot path: PodGroups change rarely. More: docs/modules.md#modelspodgrouppy.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gangsched.core import GangMode, GangSpec, InvalidField, NetworkTopology, TopologyMode, gang_key
from gangsched.models.annotations import apply_overrides, gang_overrides, normalize_group
from gangsched.models.fields import INT32_MAX, shown
from gangsched.models.health import health_fields
from gangsched.models.min_resources import parse_min_resources
from gangsched.models.timestamps import parse_time

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
# the older group of scheduler-plugins' PodGroup, still created by Koordinator's manual: same schema, same semantics
# (crds/compat/podgroups-sigs.yaml); its status is written to that object
SIGS_GROUP = "scheduling.sigs.k8s.io"
SIGS_API_VERSION = f"{SIGS_GROUP}/{VERSION}"
API_VERSIONS = frozenset({API_VERSION, SIGS_API_VERSION})
KIND = "PodGroup"
PLURAL = "podgroups"

Int32 = Annotated[int, Field(strict=True, ge=0, le=INT32_MAX)]
PositiveInt32 = Annotated[int, Field(strict=True, ge=1, le=INT32_MAX)]


class PodGroupPhase(StrEnum):
    PENDING = "Pending"  # created, not enough members yet or not tried
    PRE_SCHEDULING = "PreScheduling"  # scheduler-plugins: members being checked before scheduling
    SCHEDULING = "Scheduling"  # some members reserved, waiting for the quorum
    SCHEDULED = "Scheduled"  # quorum bound
    RUNNING = "Running"  # quorum running
    SUCCEEDED = "Succeeded"
    FINISHED = "Finished"  # scheduler-plugins' name for all members done
    FAILED = "Failed"
    TIMEOUT = "Timeout"  # the waiting time ended before the quorum was placed
    UNKNOWN = "Unknown"


class ConditionType(StrEnum):
    SCHEDULED = "Scheduled"  # True once the gang (group) reached its quorum and was bound
    TIMEOUT = "Timeout"  # True when the waiting time ended
    INVALID = "Invalid"  # True when the PodGroup or its pods declare something invalid (message names the field)
    DEGRADED = "Degraded"  # True while a gang that ran has fewer than minMember members up (core/gang/health.py)


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    def to_api(self) -> dict[str, Any]:
        """The API form: camelCase keys, fields left unset or None omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class RoleSpec(_Model):
    name: Annotated[str, Field(strict=True, min_length=1)]
    min_member: PositiveInt32 = Field(alias="minMember")


class NetworkTopologySpec(_Model):
    mode: Literal["hard", "soft"] = "soft"
    highest_tier_allowed: PositiveInt32 | None = Field(None, alias="highestTierAllowed")
    group_size: PositiveInt32 = Field(1, alias="groupSize")


class PodGroupSpec(_Model):
    # scheduler-plugins' fields
    min_member: PositiveInt32 = Field(1, alias="minMember")
    min_resources: dict[str, int | str] | None = Field(None, alias="minResources")
    schedule_timeout_seconds: Int32 | None = Field(None, alias="scheduleTimeoutSeconds")
    # gangsched's
    mode: Literal["Strict", "NonStrict"] | None = None
    total_member: PositiveInt32 | None = Field(None, alias="totalMember")
    gang_group: list[Annotated[str, Field(strict=True, min_length=1)]] | None = Field(None, alias="gangGroup")
    roles: list[RoleSpec] | None = None
    network_topology: NetworkTopologySpec | None = Field(None, alias="networkTopology")
    stale_grace_period_seconds: Int32 | None = Field(None, alias="staleGracePeriodSeconds")
    stale_policy: Literal["Report", "Evict"] | None = Field(None, alias="stalePolicy")


class PodGroupCondition(_Model):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = Field(None, alias="lastTransitionTime")  # RFC 3339
    observed_generation: int | None = Field(None, alias="observedGeneration")


class PodGroupStatus(_Model):
    phase: PodGroupPhase | None = None
    scheduled: Int32 | None = None
    running: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    occupied_by: str | None = Field(None, alias="occupiedBy")
    schedule_start_time: str | None = Field(None, alias="scheduleStartTime")  # RFC 3339
    observed_generation: int | None = Field(None, alias="observedGeneration")
    placed_tier: int | None = Field(None, alias="placedTier")
    placed_group_tier: int | None = Field(None, alias="placedGroupTier")
    message: str | None = None
    conditions: list[PodGroupCondition] | None = None


class ObjectMeta(_Model):
    name: str
    namespace: str = "default"
    uid: str | None = None
    generation: int | None = None
    resource_version: str | None = Field(None, alias="resourceVersion")
    creation_timestamp: str | None = Field(None, alias="creationTimestamp")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class PodGroup(_Model):
    api_version: str = Field(API_VERSION, alias="apiVersion")
    kind: str = KIND
    metadata: ObjectMeta
    spec: PodGroupSpec = Field(default_factory=lambda: PodGroupSpec.model_validate({}))
    status: PodGroupStatus | None = None


def _field_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _allowed(error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in ("greater_than_equal", "less_than_equal") or kind.startswith("int"):
        low = ctx.get("ge")
        high = ctx.get("le", INT32_MAX)
        return f"must be an integer >= {low} and <= {high}" if low is not None else f"must be an integer <= {high}"
    if kind in ("literal_error", "enum"):
        return "one of " + str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
    return {
        "missing": "is required",
        "string_type": "must be a string",
        "string_too_short": "must not be empty",
        "list_type": "must be a list",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "model_attributes_type": "must be an object",
    }.get(kind, str(error["msg"]))


def invalid_field(err: ValidationError, *, prefix: str) -> InvalidField:
    """The first error of a pydantic ValidationError as an InvalidField with the API's field path."""
    first = err.errors()[0]
    value = None if first["type"] == "missing" else shown(first.get("input"))
    return InvalidField(_field_path(prefix, first["loc"]), value, _allowed(first))


def parse_spec(raw: Any) -> PodGroupSpec:
    """Validate a raw `spec` mapping; InvalidField on the first bad field."""
    if raw is None:
        return PodGroupSpec.model_validate({})
    try:
        return PodGroupSpec.model_validate(raw)
    except ValidationError as err:
        raise invalid_field(err, prefix="spec") from None


def _gang_group(entries: list[str], *, namespace: str, own: str) -> tuple[str, ...]:
    keys_: list[str] = []
    for i, entry in enumerate(entries):
        ns, sep, name = entry.partition("/")
        if not sep:
            ns, name = namespace, entry
        if not ns or not name or "/" in name:
            raise InvalidField(f"spec.gangGroup[{i}]", entry, 'must be "namespace/name" or "name" (this namespace)')
        keys_.append(gang_key(ns, name))
    return normalize_group(keys_, own=own)


def _roles(roles: list[RoleSpec]) -> tuple[tuple[str, int], ...]:
    seen: set[str] = set()
    for i, role in enumerate(roles):
        if role.name in seen:
            raise InvalidField(f"spec.roles[{i}].name", role.name, "must be unique among spec.roles")
        seen.add(role.name)
    return tuple((role.name, role.min_member) for role in roles)


def podgroup_spec_from_api(obj: dict[str, Any]) -> GangSpec:
    """A raw PodGroup object -> its GangSpec (see the module docstring)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidField("metadata.name", name, "must be a non-empty string")
    namespace = meta.get("namespace") or "default"
    own = gang_key(namespace, name)
    spec = parse_spec(obj.get("spec"))
    if spec.total_member is not None and spec.total_member < spec.min_member:
        raise InvalidField(
            "spec.totalMember", spec.total_member, f"must be an integer >= spec.minMember ({spec.min_member})"
        )
    topology = None
    if spec.network_topology is not None:
        nt = spec.network_topology
        topology = NetworkTopology(
            mode=TopologyMode(nt.mode), highest_tier_allowed=nt.highest_tier_allowed, group_size=nt.group_size
        )
    timeout = spec.schedule_timeout_seconds
    gang = GangSpec(
        namespace=namespace,
        name=name,
        min_member=spec.min_member,
        total_member=spec.total_member,
        mode=GangMode(spec.mode) if spec.mode is not None else GangMode.STRICT,
        wait_seconds=float(timeout) if timeout else None,  # 0 or absent: the operator's default
        group=_gang_group(spec.gang_group, namespace=namespace, own=own) if spec.gang_group else (),
        roles=_roles(spec.roles) if spec.roles else (),
        min_resources=parse_min_resources(spec.min_resources, field="spec.minResources"),
        network_topology=topology,
        source="podgroup",
        **health_fields(spec.stale_grace_period_seconds, spec.stale_policy, meta.get("annotations") or {}),
    )
    annotations = meta.get("annotations") or {}
    overrides = gang_overrides(annotations, {}, namespace=namespace, name=name) if annotations else {}
    return apply_overrides(gang, overrides)


class PodGroupTimes(NamedTuple):
    created: float  # metadata.creationTimestamp, epoch seconds (0.0: absent or unreadable)
    schedule_start_iso: str | None  # status.scheduleStartTime as written
    schedule_start: float | None  # the same, epoch seconds


def occupied_by(namespace: str, owner_references: Any) -> str | None:
    """status.occupiedBy for a member pod, as scheduler-plugins' PodGroup controller fills it (fillOccupiedObj in
    pkg/controllers/podgroup_controller.go): "<pod namespace>/<owner name>" for each of the pod's ownerReferences,
    sorted and joined by ","; None for a pod without owners (the field is then not written)."""
    if not isinstance(owner_references, list):
        return None
    refs = sorted(f"{namespace}/{ref['name']}" for ref in owner_references if isinstance(ref, dict) and ref.get("name"))
    return ",".join(refs) or None


def podgroup_times(obj: dict[str, Any]) -> PodGroupTimes:
    created_raw = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        created = parse_time(created_raw, field="metadata.creationTimestamp") if created_raw else 0.0
    except InvalidField:
        created = 0.0
    start_raw = (obj.get("status") or {}).get("scheduleStartTime")
    if not isinstance(start_raw, str) or not start_raw:
        return PodGroupTimes(created, None, None)
    try:
        return PodGroupTimes(created, start_raw, parse_time(start_raw, field="status.scheduleStartTime"))
    except InvalidField:
        return PodGroupTimes(created, None, None)
