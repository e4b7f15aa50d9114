"""Runtime gang health settings (core/gang/health.py) from a PodGroup: spec.staleGracePeriodSeconds / spec.stalePolicy
and their annotation forms (keys.STALE_GRACE_PERIOD, a Go duration; keys.STALE_POLICY, Report | Evict), which win.

Contract: `annotation_overrides(annotations)` returns the (GangSpec field, value) pairs the annotations set (a pod's
annotations override its PodGroup's spec as Koordinator's do: models/gang.py), () when they set none;
`health_fields(grace_seconds, policy, annotations)` returns the GangSpec fields `stale_grace_seconds`
(None: not watched, the default) and `stale_policy` (Report unless Evict is asked for). A policy without a grace
period has no effect (nothing is watched). Invalid annotation values raise core.errors.InvalidField with the key,
the value and what is allowed (the spec fields are validated by the pydantic model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangsched.core import InvalidField, StalePolicy
from gangsched.models import keys
from gangsched.models.duration import parse_duration
from gangsched.models.fields import INT32_MAX, shown

ALLOWED_POLICY = "one of Report, Evict"


def annotation_overrides(annotations: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    out: list[tuple[str, Any]] = []
    raw_grace = annotations.get(keys.STALE_GRACE_PERIOD)
    if raw_grace is not None:
        grace = parse_duration(raw_grace, field=keys.STALE_GRACE_PERIOD, maximum=float(INT32_MAX))
        out.append(("stale_grace_seconds", grace))
    raw_policy = annotations.get(keys.STALE_POLICY)
    if raw_policy is not None:
        if raw_policy not in ("Report", "Evict"):
            raise InvalidField(keys.STALE_POLICY, shown(raw_policy), ALLOWED_POLICY)
        out.append(("stale_policy", StalePolicy(raw_policy)))
    return tuple(out)


def health_fields(grace_seconds: int | None, policy: str | None, annotations: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "stale_grace_seconds": float(grace_seconds) if grace_seconds is not None else None,
        "stale_policy": StalePolicy(policy) if policy is not None else StalePolicy.REPORT,
    }
    fields.update(annotation_overrides(annotations))
    return fields
