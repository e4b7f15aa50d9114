"""The topology ConfigMap at the boundary: parse and validate it, derive it from node labels, render it back.

Contract:
- `parse_topology(text) -> TopologyTree`: `text` is the value of key `topology.json` of the ConfigMap
  `gangsched-topology` (str or bytes), in seed 004's format: a JSON list of
  `{"layer": int, "name": str, "parents": [str, ...], "children": [str, ...]}` (parents and children
  optional; the children of layer 1 are node names). Raises `InvalidField` naming the field
  (`topology.json`, `topology.json[i].layer`, ...), the value and what is allowed, on: more than
  MAX_TOPOLOGY_BYTES (5 MiB), not JSON, not a non-empty list of objects, unknown keys, wrong types, and
  everything `TopologyTree.from_domains` rejects (cycles, unknown parents/children, two parents at one tier,
  layers not increasing upwards, duplicate or empty names).
- `domains_from_node_labels(node_labels, tier_keys) -> list[Domain]` and `tree_from_node_labels(...)`:
  `tier_keys[0]` is the label key of tier 1 (e.g. the unit/ToR), `tier_keys[1]` tier 2, and so on. A node
  lacking any of the keys (or with an empty value) is left out of the tree (it stays usable by gangs without
  topology). Label values are the domain names, so they must be unique across the whole topology: a value
  seen under two different parents, or at two tiers, raises `InvalidField` naming the nodes and labels.
- `render_topology(tree) -> str`: the seed's JSON (top layer first, `parents` omitted at the roots), such
  that `parse_topology(render_topology(t)) == t`; this is what the operator writes to the ConfigMap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from gangsched.core.errors import InvalidField
from gangsched.core.topology import Domain, TopologyTree, natural_key

TOPOLOGY_CONFIGMAP: Final = "gangsched-topology"
TOPOLOGY_KEY: Final = "topology.json"
MAX_TOPOLOGY_BYTES: Final = 5 * 1024 * 1024

_KEYS: Final = ("layer", "name", "parents", "children")


def parse_topology(text: str | bytes, *, field: str = TOPOLOGY_KEY) -> TopologyTree:
    """Validate the ConfigMap's topology.json and build the tree (see the module docstring)."""
    raw = text.encode() if isinstance(text, str) else text
    if len(raw) > MAX_TOPOLOGY_BYTES:
        raise InvalidField(field, f"{len(raw)} bytes", f"must be at most {MAX_TOPOLOGY_BYTES} bytes (5 MiB)")
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        shown = raw[:40].decode(errors="replace") + ("..." if len(raw) > 40 else "")
        raise InvalidField(field, shown, f"must be JSON (a list of domains): {exc}") from None
    return TopologyTree.from_domains(domains_from_json(doc, field=field), source=field)


def domains_from_json(doc: Any, *, field: str = TOPOLOGY_KEY) -> list[Domain]:
    """The entries of an already decoded topology document, type-checked (structure checks: from_domains)."""
    if not isinstance(doc, list):
        raise InvalidField(field, _short(doc), 'must be a JSON list of {"layer", "name", "parents", "children"}')
    if not doc:
        raise InvalidField(field, "[]", "must list at least one domain")
    out = []
    for i, entry in enumerate(doc):
        where = f"{field}[{i}]"
        if not isinstance(entry, dict):
            raise InvalidField(where, _short(entry), 'must be an object {"layer", "name", "parents", "children"}')
        unknown = sorted(set(entry) - set(_KEYS))
        if unknown:
            raise InvalidField(
                f"{where}.{unknown[0]}", _short(entry[unknown[0]]), f"unknown key: allowed {list(_KEYS)}"
            )
        if "layer" not in entry:
            raise InvalidField(f"{where}.layer", None, "is required: an integer >= 1 (1 is the lowest tier)")
        layer = entry["layer"]
        if isinstance(layer, bool) or not isinstance(layer, int) or layer < 1:
            raise InvalidField(f"{where}.layer", _short(layer), "must be an integer >= 1 (1 is the lowest tier)")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidField(f"{where}.name", _short(name), "must be a non-empty string")
        lists = {}
        for key in ("parents", "children"):
            value = entry.get(key, [])
            if value is None:
                value = []
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise InvalidField(f"{where}.{key}", _short(value), "must be a list of non-empty strings")
            lists[key] = tuple(value)
        out.append(Domain(layer=layer, name=name, parents=lists["parents"], children=lists["children"]))
    return out


def domains_from_node_labels(node_labels: Mapping[str, Mapping[str, str]], tier_keys: Sequence[str]) -> list[Domain]:
    """Domains of the tree the nodes' labels describe; tier_keys[t-1] is the label key of tier t."""
    keys = list(tier_keys)
    if not keys:
        raise InvalidField("topology.nodeLabels", keys, "must name one node label key per tier (lowest tier first)")
    for i, k in enumerate(keys):
        if not isinstance(k, str) or not k:
            raise InvalidField(f"topology.nodeLabels[{i}]", k, "must be a non-empty label key")
        if k in keys[:i]:
            raise InvalidField(f"topology.nodeLabels[{i}]", k, "must be unique: each tier has its own label key")
    # name -> (tier, parent or None, node that first showed it)
    seen: dict[str, tuple[int, str | None, str]] = {}
    children: dict[str, dict[str, None]] = {}  # insertion-ordered sets
    for node in sorted(node_labels, key=natural_key):
        labels = node_labels[node]
        values = [labels.get(k) or "" for k in keys]
        if not all(values):
            continue
        below = node
        for t, value in enumerate(values, start=1):
            parent = values[t] if t < len(values) else None
            prior = seen.get(value)
            if prior is None:
                seen[value] = (t, parent, node)
                children[value] = {}
            elif prior[0] != t:
                raise InvalidField(
                    f"node {node}: label {keys[t - 1]}",
                    value,
                    f"must name a domain of one tier only: node {prior[2]} uses {value!r} as its"
                    f" {keys[prior[0] - 1]} (tier {prior[0]})",
                )
            elif prior[1] != parent:
                raise InvalidField(
                    f"node {node}: label {keys[t - 1]}",
                    value,
                    f"must be unique across the topology: {value!r} is under {keys[t]}={parent!r} here but under"
                    f" {keys[t]}={prior[1]!r} on node {prior[2]}",
                )
            children[value][below] = None
            below = value
    return [
        Domain(
            layer=tier,
            name=name,
            parents=(parent,) if parent is not None else (),
            children=tuple(sorted(children[name], key=natural_key)),
        )
        for name, (tier, parent, _) in sorted(seen.items(), key=lambda kv: (-kv[1][0], natural_key(kv[0])))
    ]


def tree_from_node_labels(node_labels: Mapping[str, Mapping[str, str]], tier_keys: Sequence[str]) -> TopologyTree:
    return TopologyTree.from_domains(domains_from_node_labels(node_labels, tier_keys), source="topology from labels")


def render_topology(tree: TopologyTree) -> str:
    """The tree in the seed's ConfigMap format (what the operator writes under topology.json)."""
    out: list[dict[str, Any]] = []
    for d in tree.domains:
        entry: dict[str, Any] = {"layer": d.layer, "name": d.name}
        if d.parents:
            entry["parents"] = list(d.parents)
        entry["children"] = list(d.children)
        out.append(entry)
    return json.dumps(out, indent=1)


def _short(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
