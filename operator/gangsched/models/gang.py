"""The one parser of a pod's gang declaration, and the rule for merging it with its PodGroup.

Contract:
- `parse_pod_gang(pod) -> PodGang | None`: None when the pod declares no gang; else the gang's key ("ns/name", the
  pod's namespace), the member's role, the fields its annotations set (`overrides`) and, when they declare a quorum,
  a complete annotation-only `spec` (else None: its PodGroup supplies it). The name's labels and annotations are
  tried in a fixed order (scheduler-plugins, Kueue, Koordinator, Volcano-style; native schedulingGroup); sources
  that disagree raise core.errors.InvalidField naming the key, the value and what is allowed.
- `merge_gang_specs(podgroup, annotations, *, fields=None)`: annotations win, field by field;
  `PodGang.resolve(podgroup)`: the member's spec; `referenced_gang(pod)`: the gang a pod names, never raising.
Hot path (per pod watch event): plain dicts, no pydantic; annotations parsed once per distinct set.
More: docs/modules.md#modelsgangpy.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gangsched.core import GangSpec, InvalidField, gang_key
from gangsched.models import keys
from gangsched.models.annotations import (
    RAW_WIDTH,
    RawAnnotations,
    apply_overrides,
    parse_raw,
    raw_gang_annotations,
)
from gangsched.models.fields import shown
from gangsched.models.health import annotation_overrides
from gangsched.models.native import SCHEDULING_GROUP, scheduling_group_name

ALLOWED_NAME = "a lowercase RFC 1123 name (a-z, 0-9, '-', '.'; starting and ending alphanumeric; at most 253)"
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")

_NAME_LABELS = (keys.POD_GROUP_LABEL, keys.LEGACY_POD_GROUP, keys.LEGACY_NAME, keys.KUEUE_GROUP_NAME)
_NAME_ANNOTATIONS = (keys.KOORD_NAME, keys.LEGACY_NAME, keys.LEGACY_POD_GROUP, keys.VOLCANO_GROUP_NAME)
# the key a source's member count is read from (annotation first, then label), when min-available is absent
_COUNT_KEYS = {keys.KUEUE_GROUP_NAME: keys.KUEUE_GROUP_TOTAL_COUNT, keys.VOLCANO_GROUP_NAME: keys.LWS_SIZE}
_EMPTY: Mapping[str, Any] = {}
_HEALTH_KEYS = frozenset({keys.STALE_GRACE_PERIOD, keys.STALE_POLICY})


@dataclass(frozen=True, slots=True)
class PodGang:
    """One pod's membership in a gang, as the pod declares it."""

    namespace: str
    name: str
    role: str | None = None
    # a complete spec from the annotations alone (they declare min-available); None: the PodGroup decides
    spec: GangSpec | None = None
    # the GangSpec fields the annotations set, as (field, value) pairs; they override the PodGroup's
    overrides: tuple[tuple[str, Any], ...] = ()
    # the label or annotation key the gang's name was read from
    declared_by: str = keys.POD_GROUP_LABEL
    # the key the annotations' quorum was read from (min-available, or the source's own count); None: no quorum
    quorum_key: str | None = None

    @property
    def key(self) -> str:
        return gang_key(self.namespace, self.name)

    def resolve(self, podgroup: GangSpec | None) -> GangSpec | None:
        """The effective spec: the PodGroup's with the annotations' fields on top; None when neither has one."""
        if podgroup is None:
            return self.spec
        if not self.overrides:
            return podgroup
        return apply_overrides(podgroup, dict(self.overrides), source=_MERGED)


@lru_cache(maxsize=4096)
def _check_name(name: str, field: str) -> str:
    if len(name) > 253 or _NAME.fullmatch(name) is None:
        raise InvalidField(field, shown(name), ALLOWED_NAME)
    return name


def _gang_name(labels: Mapping[str, Any], annotations: Mapping[str, Any]) -> tuple[str, str] | None:
    for key in _NAME_LABELS:
        value = labels.get(key)
        if value:
            koord = annotations.get(keys.KOORD_NAME)
            if koord and koord != value:
                raise InvalidField(
                    keys.KOORD_NAME, shown(koord), f'must equal label {key} ("{value}") when both are set'
                )
            return key, value
    for key in _NAME_ANNOTATIONS:
        value = annotations.get(key)
        if value:
            return key, value
    return None


def _native_or(found: tuple[str, str] | None, spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The pod's spec.schedulingGroup.podGroupName as its gang's name; a pod naming a gang both ways is an error."""
    native = scheduling_group_name(spec) if isinstance(spec, Mapping) else None
    if native is None:
        return found
    if found is not None:
        raise InvalidField(
            SCHEDULING_GROUP,
            shown(native),
            f"a pod declares its gang once: it also names gang {found[1]!r} by {found[0]}; keep one of the two",
        )
    return SCHEDULING_GROUP, native


def referenced_gang(pod: Mapping[str, Any]) -> str | None:
    """The "namespace/name" of the gang the pod names (first source found wins), or None; never raises."""
    meta = pod.get("metadata") or _EMPTY
    labels = meta.get("labels") or _EMPTY
    annotations = meta.get("annotations") or _EMPTY
    if not isinstance(labels, Mapping) or not isinstance(annotations, Mapping):
        return None
    try:
        found = _gang_name(labels, annotations)
    except InvalidField:
        return None
    if found is None:
        native = scheduling_group_name(pod.get("spec") or _EMPTY)
        found = (SCHEDULING_GROUP, native) if native is not None else None
    if found is None or not isinstance(found[1], str) or not _NAME.fullmatch(found[1]) or len(found[1]) > 253:
        return None
    return gang_key(meta.get("namespace") or "default", found[1])


def parse_pod_gang(pod: Mapping[str, Any]) -> PodGang | None:
    """The gang a pod (a raw API object) declares, or None; InvalidField on an invalid declaration."""
    meta = pod.get("metadata") or _EMPTY
    labels = meta.get("labels") or _EMPTY
    annotations = meta.get("annotations") or _EMPTY
    found = _native_or(_gang_name(labels, annotations), pod.get("spec") or _EMPTY)
    if found is None:
        return None
    declared_by, raw_name = found
    if not isinstance(raw_name, str):
        raise InvalidField(declared_by, shown(raw_name), ALLOWED_NAME)
    name = _check_name(raw_name, declared_by)
    namespace = meta.get("namespace") or "default"
    role = labels.get(keys.ROLE) or annotations.get(keys.ROLE) or _volcano_task(declared_by, labels, annotations)
    raw = with_implied_count(raw_gang_annotations(annotations, labels), declared_by, labels, annotations)
    health = annotation_overrides(annotations) if _HEALTH_KEYS & annotations.keys() else ()
    if raw is None:
        return PodGang(namespace=namespace, name=name, role=role, declared_by=declared_by, overrides=health)
    try:
        overrides, spec = _declared_cached(namespace, name, raw)
    except TypeError:  # an unhashable value: parse uncached, which reports it
        overrides, spec = _declared(namespace, name, raw)
    if health:  # runtime gang health (models/health.py), overriding the PodGroup's like the gang annotations
        overrides += health
        spec = dataclasses.replace(spec, **dict(health)) if spec is not None else None
    quorum_key = raw[0] if raw[1] is not None else None
    return PodGang(
        namespace=namespace,
        name=name,
        role=role,
        spec=spec,
        overrides=overrides,
        declared_by=declared_by,
        quorum_key=quorum_key,
    )


def _volcano_task(declared_by: str, labels: Mapping[str, Any], annotations: Mapping[str, Any]) -> str | None:
    """A Volcano-style member's task (volcano.sh/task-spec, annotation then label, as Volcano's getTaskRole)."""
    if declared_by != keys.VOLCANO_GROUP_NAME:
        return None
    task = annotations.get(keys.VOLCANO_TASK_SPEC) or labels.get(keys.VOLCANO_TASK_SPEC)
    return task if isinstance(task, str) and task else None


def with_implied_count(
    raw: RawAnnotations | None, declared_by: str, labels: Mapping[str, Any], annotations: Mapping[str, Any]
) -> RawAnnotations | None:
    """The raw annotations with the name source's own member count as min-available, when they set none."""
    count_key = _COUNT_KEYS.get(declared_by)
    if count_key is None or (raw is not None and raw[1] is not None):
        return raw
    value = annotations.get(count_key)
    if value is None:
        value = labels.get(count_key)
    if value is None:
        return raw
    rest = raw[2:] if raw is not None else (None,) * (RAW_WIDTH - 2)
    return (count_key, value, *rest)


def _declared(namespace: str, name: str, raw: RawAnnotations) -> tuple[tuple[tuple[str, Any], ...], GangSpec | None]:
    overrides = parse_raw(namespace, name, raw)
    fields = dict(overrides)
    if "min_member" not in fields:
        return overrides, None
    fields.setdefault("total_member", fields["min_member"])  # Koordinator: total-number defaults to min-available
    return overrides, GangSpec(namespace=namespace, name=name, source="annotations", **fields)


# members of one gang share their annotations: the (immutable) result is shared too
_declared_cached = lru_cache(maxsize=4096)(_declared)


_DEFAULTS = GangSpec(namespace="", name="", min_member=1)
_MERGED = "podgroup+annotations"
_MERGEABLE = ("min_member", "total_member", "mode", "wait_seconds", "group", "network_topology")


def merge_gang_specs(
    podgroup: GangSpec | None,
    annotations: GangSpec | None,
    *,
    fields: Collection[str] | None = None,
) -> GangSpec | None:
    """The PodGroup's spec with the annotations' values on top, field by field (annotations win).

    `fields` names the GangSpec fields the annotations set; None means min_member plus every field whose value
    differs from GangSpec's default. Either side may be None; both None gives None.
    """
    if podgroup is None:
        return annotations
    if annotations is None:
        return podgroup
    if fields is None:
        fields = [f for f in _MERGEABLE if f == "min_member" or getattr(annotations, f) != getattr(_DEFAULTS, f)]
    values = {f: getattr(annotations, f) for f in fields if f in _MERGEABLE}
    return apply_overrides(podgroup, values, source=_MERGED)
