"""The topology ConfigMap at the boundary: parse and validate it, derive it from node labels, render it back.

Contract:
- `parse_topology(text) -> TopologyTree`: the `topology.json` value (a JSON list of `{"layer", "name", "parents",
  "children"}`, layer 1's children being nodes). Bounded (MAX_TOPOLOGY_BYTES, MAX_TOPOLOGY_DOMAINS, MAX_LAYER,
  MAX_NAME_CHARS) and without gaps between layers; any error raises `InvalidField` naming the field, the value and
  what is allowed (one bad ConfigMap never stops the operator).
- `unknown_nodes(tree, known)`, `unknown_nodes_message(unknown)`: the tree's nodes not in the cluster; the Warning.
- `domains_from_node_labels(node_labels, tier_keys)`, `tree_from_node_labels(...)`: `tier_keys[i]` is tier i+1's
  label; nodes lacking a key are left out; a value under two parents or at two tiers raises `InvalidField`.
- `render_topology(tree) -> str`: the ConfigMap's JSON; `parse_topology(render_topology(t)) == t`.
More: docs/modules.md#modelstopologypy.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from gangsched.core import Domain, InvalidField, TopologyTree, natural_key

TOPOLOGY_CONFIGMAP: Final = "gangsched-topology"
TOPOLOGY_KEY: Final = "topology.json"
MAX_TOPOLOGY_BYTES: Final = 5 * 1024 * 1024

MAX_LAYER: Final = 64
# twice Kubernetes' 5,000-node scalability threshold: a domain holds at least one node, so no real tree needs more
MAX_TOPOLOGY_DOMAINS: Final = 10_000
MAX_NAME_CHARS: Final = 253

_KEYS: Final = ("layer", "name", "parents", "children")


def parse_topology(text: str | bytes, *, field: str = TOPOLOGY_KEY) -> TopologyTree:
    """Validate the ConfigMap's topology.json and build the tree (see the module docstring)."""
    raw = text.encode() if isinstance(text, str) else text
    if len(raw) > MAX_TOPOLOGY_BYTES:
        raise InvalidField(field, f"{len(raw)} bytes", f"must be at most {MAX_TOPOLOGY_BYTES} bytes (5 MiB)")
    try:
        doc = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, and a number of more than 4,300 digits
        shown = raw[:40].decode(errors="replace") + ("..." if len(raw) > 40 else "")
        raise InvalidField(field, shown, f"must be JSON (a list of domains): {_short(str(exc))}") from None
    if isinstance(doc, list) and len(doc) > MAX_TOPOLOGY_DOMAINS:
        raise InvalidField(field, f"{len(doc)} domains", f"must list at most {MAX_TOPOLOGY_DOMAINS} domains")
    domains = domains_from_json(doc, field=field)
    try:
        tree = TopologyTree.from_domains(domains, source=field)
    except InvalidField:
        raise
    except Exception as exc:  # a bug in the tree's checks must not stop the operator: reported like bad input
        raise InvalidField(field, f"{len(domains)} domains", f"could not be read: {_short(repr(exc))}") from None
    _check_no_tier_gap(domains, field)  # after the structure's checks, which name the entry at fault
    return tree


def _check_no_tier_gap(domains: Sequence[Domain], field: str) -> None:
    """Every layer from 1 to the top one holds a domain (see the module docstring)."""
    layers = {d.layer for d in domains}
    missing = [layer for layer in range(1, max(layers) + 1) if layer not in layers]
    if missing:
        shown = ", ".join(str(layer) for layer in missing)
        allowed = (
            f"layers must have no gap: every layer from 1 to the top one ({max(layers)}) needs a domain;"
            f" no domain has layer {shown} (renumber the layers 1, 2, 3, ... from the lowest)"
        )
        raise InvalidField(field, f"layers {sorted(layers)}", allowed)


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
        if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= MAX_LAYER:
            allowed = f"must be an integer >= 1 and <= {MAX_LAYER} (1 is the lowest tier)"
            raise InvalidField(f"{where}.layer", _short(layer), allowed)
        name = entry.get("name")
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            raise InvalidField(f"{where}.name", _short(name), f"must be a non-empty string of at most {MAX_NAME_CHARS}")
        lists = {}
        for key in ("parents", "children"):
            value = entry.get(key, [])
            if value is None:
                value = []
            if not isinstance(value, list) or not all(
                isinstance(v, str) and 0 < len(v) <= MAX_NAME_CHARS for v in value
            ):
                allowed = f"must be a list of non-empty strings of at most {MAX_NAME_CHARS} characters"
                raise InvalidField(f"{where}.{key}", _short(value), allowed)
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
    domains = domains_from_node_labels(node_labels, tier_keys)
    if len(domains) > MAX_TOPOLOGY_DOMAINS:
        allowed = f"must make at most {MAX_TOPOLOGY_DOMAINS} domains"
        raise InvalidField("topology.nodeLabelTiers", f"{len(domains)} domains", allowed)
    return TopologyTree.from_domains(domains, source="topology from labels")


def render_topology(tree: TopologyTree) -> str:
    """The tree in the ConfigMap's format (what the operator writes under topology.json)."""
    out: list[dict[str, Any]] = []
    for d in tree.domains:
        entry: dict[str, Any] = {"layer": d.layer, "name": d.name}
        if d.parents:
            entry["parents"] = list(d.parents)
        entry["children"] = list(d.children)
        out.append(entry)
    return json.dumps(out, indent=1)


def unknown_nodes(tree: TopologyTree, known: Collection[str]) -> list[str]:
    """The tree's nodes that `known` (the cluster's node names) lacks, in natural order."""
    return sorted((n for n in tree.nodes() if n not in known), key=natural_key)


def unknown_nodes_message(unknown: Sequence[str], *, field: str = TOPOLOGY_KEY) -> str:
    """The Warning for nodes named in the topology that the cluster does not have (at most 10 named)."""
    named = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
    return (
        f"{field}: {len(unknown)} node(s) named in the topology do not exist in the cluster: {named}; placement"
        " uses only nodes that exist, so the domains they are in hold less than the topology suggests"
    )


def _short(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**60:
        return f"an integer of {value.bit_length()} bits"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
