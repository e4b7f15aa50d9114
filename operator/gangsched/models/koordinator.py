"""Koordinator's gang annotations beyond the basic ones: `network-topology-spec` mapped onto gangsched's topology,
`match-policy` mapped onto the core's satisfaction rule, its lenient `mode`, and the keys gangsched does not support.

Contract:
- `parse_network_topology_spec(value) -> TopologyMapping`: the gather rules as a `NetworkTopology` (BlockLayer ->
  tier 1, SpineLayer -> 2; MustGather: hard at the lowest such tier; PreferGather alone: soft; podCountMultiple ->
  groupSize; None when nothing maps) and the rules that do not map (`unmapped`). Malformed JSON or rules raise
  InvalidField naming the annotation, the value and what is allowed.
- `gang_notices(annotations) -> tuple[Notice, ...]`: what to tell the user once per gang: an unparsable `mode`
  (Strict used), a `match-policy` approximated (once-satisfied, only-waiting: Normal) or invalid (Warning), a
  topology rule that does not map, and every other Koordinator gang key not supported.
More: docs/modules.md#modelskoordinatorpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, NamedTuple

import orjson

from gangsched.core import InvalidField, NetworkTopology, TopologyMode
from gangsched.models import keys
from gangsched.models.fields import INT32_MAX, shown

LAYER_TIERS: Final[Mapping[str, int | None]] = {"BlockLayer": 1, "SpineLayer": 2, "ClusterTopologyLayer": None}
STRATEGIES: Final = ("MustGather", "PreferGather")
ALLOWED_SPEC = (
    'a JSON object {"gatherStrategy": [{"layer": "BlockLayer", "strategy": "MustGather" or "PreferGather",'
    ' "podCountMultiple": n}]}'
)
MATCH_POLICIES: Final = ("once-satisfied", "only-waiting", "waiting-and-running")
SUPPORTED: Final = frozenset(
    {
        keys.KOORD_NAME,
        keys.KOORD_MIN_AVAILABLE,
        keys.KOORD_TOTAL_NUMBER,
        keys.KOORD_WAITING_TIME,
        keys.KOORD_MODE,
        keys.KOORD_GROUPS,
        keys.KOORD_TIMEOUT,
        keys.KOORD_MATCH_POLICY,
        keys.KOORD_NETWORK_TOPOLOGY_SPEC,
        keys.KOORD_NETWORK_TOPOLOGY_INDEX,
    }
)


class Notice(NamedTuple):
    """One thing to tell the user about a gang's declaration: an event type, reason and message."""

    type: str  # "Warning" | "Normal"
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class TopologyMapping:
    topology: NetworkTopology | None
    unmapped: tuple[str, ...] = ()


def _rule(entry: object, value: str) -> tuple[str, str, int | None]:
    if not isinstance(entry, dict) or not isinstance(entry.get("layer"), str):
        raise InvalidField(keys.KOORD_NETWORK_TOPOLOGY_SPEC, shown(value), f"{ALLOWED_SPEC}; every rule names a layer")
    strategy = entry.get("strategy")
    if strategy not in STRATEGIES:
        raise InvalidField(
            keys.KOORD_NETWORK_TOPOLOGY_SPEC,
            shown(value),
            f"{ALLOWED_SPEC}; strategy must be MustGather or PreferGather",
        )
    multiple = entry.get("podCountMultiple")
    if multiple is not None and (
        not isinstance(multiple, int) or isinstance(multiple, bool) or not 0 <= multiple <= INT32_MAX
    ):
        raise InvalidField(
            keys.KOORD_NETWORK_TOPOLOGY_SPEC, shown(value), f"{ALLOWED_SPEC}; podCountMultiple is an integer >= 0"
        )
    return entry["layer"], str(strategy), multiple or None


@lru_cache(maxsize=1024)
def _parse_spec(value: str) -> TopologyMapping:
    try:
        doc = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise InvalidField(keys.KOORD_NETWORK_TOPOLOGY_SPEC, shown(value), ALLOWED_SPEC) from None
    rules = doc.get("gatherStrategy", []) if isinstance(doc, dict) else None
    if not isinstance(rules, list):
        raise InvalidField(keys.KOORD_NETWORK_TOPOLOGY_SPEC, shown(value), ALLOWED_SPEC)
    hard: int | None = None
    soft = False
    group_size: int | None = None
    unmapped: list[str] = []
    for layer, strategy, multiple in (_rule(entry, value) for entry in rules):
        if layer not in LAYER_TIERS:
            unmapped.append(f"{strategy} at layer {layer} (known layers: {', '.join(LAYER_TIERS)})")
            continue
        tier = LAYER_TIERS[layer]
        if multiple is not None:
            if group_size is None:
                group_size = multiple
            elif multiple != group_size:
                unmapped.append(f"podCountMultiple {multiple} at layer {layer} (groupSize {group_size} is used)")
        if tier is None:
            continue  # the whole cluster: no constraint
        if strategy == "MustGather":
            hard = tier if hard is None else min(hard, tier)
        else:
            soft = True
    if hard is None and not soft and group_size is None:
        return TopologyMapping(None, tuple(unmapped))
    mode = TopologyMode.HARD if hard is not None else TopologyMode.SOFT
    return TopologyMapping(
        NetworkTopology(mode=mode, highest_tier_allowed=hard, group_size=group_size or 1), tuple(unmapped)
    )


def parse_network_topology_spec(value: Any) -> TopologyMapping:
    """Koordinator's network-topology-spec as gangsched's topology (see the module docstring)."""
    if not isinstance(value, str):
        raise InvalidField(keys.KOORD_NETWORK_TOPOLOGY_SPEC, shown(value), ALLOWED_SPEC)
    if not value.strip():
        return TopologyMapping(None)  # Koordinator: an empty annotation is no spec
    return _parse_spec(value)


_ONCE = (
    "once-satisfied is approximated: later members schedule alone while minMember members stay bound or finished;"
    " when fewer remain (every pod re-created) the pending members are gang-scheduled again, where Koordinator"
    " would let them schedule one by one"
)
_ONLY_WAITING = (
    "only-waiting is approximated: members bound or finished count towards the quorum too (the waiting-and-running"
    " rule), so later members schedule alone while the gang holds its quorum, where Koordinator would make them"
    " gather minMember waiting members again"
)


def _policy_notice(key: str, policy: Any) -> Notice | None:
    if policy == "once-satisfied":
        return Notice("Normal", "MatchPolicyApproximated", f"{key} {_ONCE}")
    if policy == "only-waiting":
        return Notice("Normal", "MatchPolicyApproximated", f"{key} {_ONLY_WAITING}")
    if policy == "waiting-and-running":
        return None
    return Notice(
        "Warning",
        "InvalidMatchPolicy",
        f'{key} "{shown(policy)}" is not one of {", ".join(MATCH_POLICIES)}: once-satisfied is used (Koordinator\'s'
        f" default); {_ONCE}",
    )


@lru_cache(maxsize=4096)
def _notices(items: tuple[tuple[str, Any], ...]) -> tuple[Notice, ...]:
    out: list[Notice] = []
    values = dict(items)
    mode = values.get(keys.KOORD_MODE)
    if mode not in (None, "", "Strict", "NonStrict"):  # (empty: Koordinator's default, Strict, silently)
        out.append(
            Notice(
                "Warning",
                "InvalidGangMode",
                f'{keys.KOORD_MODE} "{shown(mode)}" is not one of Strict, NonStrict: the gang is Strict (as Koordinator'
                " falls back to Strict)",
            )
        )
    for key in (keys.KOORD_MATCH_POLICY, keys.KOORD_MATCH_POLICY_ALIAS):
        if key in values:
            notice = _policy_notice(key, values[key])
            if notice is not None:
                out.append(notice)
            break
    spec = values.get(keys.KOORD_NETWORK_TOPOLOGY_SPEC)
    if spec is not None:
        try:
            unmapped = parse_network_topology_spec(spec).unmapped
        except InvalidField:
            unmapped = ()  # reported by the parser on the object (InvalidField)
        for rule in unmapped:
            out.append(
                Notice("Warning", "UnsupportedTopology", f"{keys.KOORD_NETWORK_TOPOLOGY_SPEC}: {rule}: not honoured")
            )
    for key, _value in items:
        if key.startswith(keys.KOORD_PREFIX) and key not in SUPPORTED:
            out.append(Notice("Warning", "UnsupportedAnnotation", f"unsupported: {key} is not supported here: ignored"))
    return tuple(out)


def gang_notices(annotations: Mapping[str, Any]) -> tuple[Notice, ...]:
    """What to tell the user about these gang annotations (see the module docstring); () when nothing."""
    items = tuple(
        sorted(
            (k, v)
            for k, v in annotations.items()
            if isinstance(k, str) and (k.startswith(keys.KOORD_PREFIX) or k == keys.KOORD_MATCH_POLICY_ALIAS)
        )
    )
    if not items:
        return ()
    try:
        return _notices(items)
    except TypeError:  # an unhashable value: uncached
        return _notices.__wrapped__(items)
