"""Koordinator-style gang annotations (and the older coscheduling forms), and gangsched's own network-topology
annotations, -> GangSpec field overrides.

Contract: `gang_overrides(annotations, labels, *, namespace, name)` returns exactly the GangSpec fields the
annotations set (`min_member`, `total_member`, `wait_seconds`, `mode`, `group`, `network_topology`), validated and
normalized; `apply_overrides(spec, overrides, *, source)` lays them over a spec (annotations win). Invalid values
raise core.errors.InvalidField (the annotation key, the value as written, what is allowed). Counts are decimal
int32 >= 1 (total-number >= min-available); waiting-time a Go duration up to MAX_WAIT_SECONDS; mode other than
NonStrict is Strict; groups a JSON list of "namespace/name" (at most MAX_GROUP_GANGS), normalized to the sorted
keys with this gang included. Used for pods (models/gang.py) and PodGroups (models/podgroup.py).
Pure and cached: each distinct set of annotations is parsed once. More: docs/modules.md#modelsannotationspy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import orjson

from gangsched.core import GangMode, GangSpec, InvalidField, NetworkTopology, TopologyMode, gang_key
from gangsched.models import keys
from gangsched.models.duration import parse_duration
from gangsched.models.fields import INT32_MAX, decimal, shown
from gangsched.models.koordinator import parse_network_topology_spec

ALLOWED_COUNT = f"must be an integer >= 1 and <= {INT32_MAX}"
MAX_WAIT_SECONDS = float(INT32_MAX)
MAX_GROUP_GANGS = 256
ALLOWED_MODE = "one of Strict, NonStrict"
ALLOWED_GROUPS = 'a JSON list of "namespace/name" strings, e.g. ["ns-a/gang-a", "ns-b/gang-b"]'

_MODES = {"Strict": GangMode.STRICT, "NonStrict": GangMode.NON_STRICT}


def parse_count(value: object, *, field: str, minimum: int = 1, allowed: str = ALLOWED_COUNT) -> int:
    """A decimal integer from minimum to INT32_MAX written as a string (annotations) or an int; InvalidField
    otherwise (never more than 10 digits converted)."""
    return decimal(value, field=field, minimum=minimum, maximum=INT32_MAX, allowed=allowed)


def parse_mode(value: object, *, field: str) -> GangMode:
    mode = _MODES.get(value) if isinstance(value, str) else None
    if mode is None:
        raise InvalidField(field, shown(value), ALLOWED_MODE)
    return mode


def normalize_group(keys_: list[str], *, own: str) -> tuple[str, ...]:
    """Sorted, de-duplicated gang keys including `own`; () when the group is just this gang (or empty)."""
    members = set(keys_)
    if not members or members == {own}:
        return ()
    members.add(own)
    return tuple(sorted(members))


def _split_key(entry: str) -> tuple[str, str] | None:
    namespace, sep, name = entry.partition("/")
    if not sep or not namespace or not name or "/" in name:
        return None
    return namespace, name


def parse_groups(value: object, *, field: str, own: str) -> tuple[str, ...]:
    """Koordinator's groups annotation: a JSON list of "namespace/name"; "" or [] means no group."""
    if not isinstance(value, str):
        raise InvalidField(field, shown(value), ALLOWED_GROUPS)
    if not value.strip():
        return ()
    try:
        entries = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise InvalidField(field, shown(value), ALLOWED_GROUPS) from None
    if not isinstance(entries, list):
        raise InvalidField(field, shown(value), ALLOWED_GROUPS)
    if len(entries) > MAX_GROUP_GANGS:
        raise InvalidField(field, shown(value), f"{ALLOWED_GROUPS}; at most {MAX_GROUP_GANGS} gangs")
    found: list[str] = []
    for entry in entries:
        parts = _split_key(entry.strip()) if isinstance(entry, str) else None
        if parts is None:
            entry_text = shown(entry) if isinstance(entry, str) else shown(orjson.dumps(entry).decode())
            raise InvalidField(field, shown(value), f'{ALLOWED_GROUPS}; entry "{entry_text}" is not "namespace/name"')
        found.append(gang_key(*parts))
    return normalize_group(found, own=own)


RawAnnotations = tuple[str, Any, Any, Any, Any, Any, Any, Any, Any, Any]
RAW_WIDTH = 10


def raw_gang_annotations(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> RawAnnotations | None:
    """The gang annotations as written: (min key used, min, total, waiting-time, mode, groups, topology mode,
    highest tier, group size, Koordinator network-topology-spec); None if none."""
    min_key = keys.KOORD_MIN_AVAILABLE
    min_raw = annotations.get(min_key)
    if min_raw is None:
        min_key = keys.LEGACY_MIN_AVAILABLE
        min_raw = annotations.get(min_key)
        if min_raw is None:
            min_raw = labels.get(min_key)
    total, wait = annotations.get(keys.KOORD_TOTAL_NUMBER), annotations.get(keys.KOORD_WAITING_TIME)
    mode, groups = annotations.get(keys.KOORD_MODE), annotations.get(keys.KOORD_GROUPS)
    topo = (
        annotations.get(keys.TOPOLOGY_MODE),
        annotations.get(keys.TOPOLOGY_HIGHEST_TIER),
        annotations.get(keys.TOPOLOGY_GROUP_SIZE),
        annotations.get(keys.KOORD_NETWORK_TOPOLOGY_SPEC),
    )
    if (
        min_raw is None
        and total is None
        and wait is None
        and mode is None
        and groups is None
        and topo == (None, None, None, None)
    ):
        return None
    return (min_key, min_raw, total, wait, mode, groups, *topo)


def parse_raw(namespace: str, name: str, raw: RawAnnotations) -> tuple[tuple[str, Any], ...]:
    """(GangSpec field, value) pairs of raw gang annotations; cached when the values are hashable."""
    try:
        return _parse_cached(namespace, name, *raw)
    except TypeError:  # an unhashable value (not a string): parse without the cache to report it
        return _parse(namespace, name, *raw)


def gang_overrides(
    annotations: Mapping[str, Any], labels: Mapping[str, Any], *, namespace: str, name: str
) -> dict[str, Any]:
    """The GangSpec fields the annotations set (see the module docstring); {} when they set none."""
    raw = raw_gang_annotations(annotations, labels)
    return {} if raw is None else dict(parse_raw(namespace, name, raw))


ALLOWED_TOPOLOGY_MODE = "one of hard, soft"


def parse_topology_annotations(mode: Any, tier: Any, size: Any) -> NetworkTopology:
    """The network topology an annotation-only gang asks for (keys.TOPOLOGY_*); soft, no limit, groups of 1 by
    default."""
    if mode is not None and mode not in ("hard", "soft"):
        raise InvalidField(keys.TOPOLOGY_MODE, shown(mode), ALLOWED_TOPOLOGY_MODE)
    return NetworkTopology(
        mode=TopologyMode(mode or "soft"),
        highest_tier_allowed=parse_count(tier, field=keys.TOPOLOGY_HIGHEST_TIER) if tier is not None else None,
        group_size=parse_count(size, field=keys.TOPOLOGY_GROUP_SIZE) if size is not None else 1,
    )


def _parse(
    namespace: str,
    name: str,
    min_key: str,
    min_raw: Any,
    total_raw: Any,
    wait_raw: Any,
    mode_raw: Any,
    groups_raw: Any,
    topo_mode: Any = None,
    topo_tier: Any = None,
    topo_size: Any = None,
    koord_topology: Any = None,
) -> tuple[tuple[str, Any], ...]:
    out: list[tuple[str, Any]] = []
    min_member: int | None = None
    if min_raw is not None:
        min_member = parse_count(min_raw, field=min_key)
        out.append(("min_member", min_member))
    if total_raw is not None:
        total = parse_count(total_raw, field=keys.KOORD_TOTAL_NUMBER)
        if min_member is not None and total < min_member:
            raise InvalidField(
                keys.KOORD_TOTAL_NUMBER, shown(total_raw), f"must be an integer >= min-available ({min_member})"
            )
        out.append(("total_member", total))
    if wait_raw is not None:
        out.append(("wait_seconds", parse_duration(wait_raw, field=keys.KOORD_WAITING_TIME, maximum=MAX_WAIT_SECONDS)))
    if mode_raw is not None:
        # Koordinator-compatible leniency: an unparsable mode is Strict (reported by models/koordinator.py notices)
        out.append(("mode", _MODES.get(mode_raw, GangMode.STRICT) if isinstance(mode_raw, str) else GangMode.STRICT))
    if groups_raw is not None:
        out.append(("group", parse_groups(groups_raw, field=keys.KOORD_GROUPS, own=gang_key(namespace, name))))
    if topo_mode is not None or topo_tier is not None or topo_size is not None:
        out.append(("network_topology", parse_topology_annotations(topo_mode, topo_tier, topo_size)))
    elif koord_topology is not None:  # gangsched's own keys win over Koordinator's spec
        mapped = parse_network_topology_spec(koord_topology).topology
        if mapped is not None:
            out.append(("network_topology", mapped))
    return tuple(out)


_parse_cached = lru_cache(maxsize=4096)(_parse)


def apply_overrides(spec: GangSpec, overrides: Mapping[str, Any], *, source: str | None = None) -> GangSpec:
    """`spec` with the annotations' fields on top (annotations win); `source` replaces spec.source if given.

    When the annotations raise the quorum above the spec's total and set no total themselves, the total follows
    the quorum (total-number defaults to min-available); a total they set below the quorum is an InvalidField.
    """
    if not overrides:
        return spec
    changes = dict(overrides)
    if source is not None:
        changes["source"] = source
    merged = dataclasses.replace(spec, **changes)
    total = merged.total_member
    if total is not None and total < merged.min_member:
        if "total_member" in overrides:
            raise InvalidField(
                keys.KOORD_TOTAL_NUMBER, total, f"must be an integer >= min-available ({merged.min_member})"
            )
        merged = dataclasses.replace(merged, total_member=merged.min_member)
    return merged
