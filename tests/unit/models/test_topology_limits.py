"""models/topology.py bounds: the number of domains, and layers without a gap (issue 22 item 15a).

Oracles: sig-scalability's thresholds (kubernetes/community sig-scalability/configs-and-limits/thresholds.md,
5,000 nodes per cluster: MAX_TOPOLOGY_DOMAINS is twice that); seed 004's layer numbering (1 = unit/ToR, 2 = leaf,
3 = spine), in which every tier between 1 and the top exists.
"""

from __future__ import annotations

import json

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.topology import MAX_TOPOLOGY_DOMAINS, parse_topology, tree_from_node_labels


def units(count: int) -> str:
    return json.dumps([{"layer": 1, "name": f"u{i}", "children": [f"n{i}"]} for i in range(count)])


def test_the_domain_bound_is_inclusive() -> None:
    assert len(parse_topology(units(MAX_TOPOLOGY_DOMAINS)).domains) == MAX_TOPOLOGY_DOMAINS


def test_one_domain_more_is_refused_naming_the_count_and_the_limit() -> None:
    with pytest.raises(InvalidField) as caught:
        parse_topology(units(MAX_TOPOLOGY_DOMAINS + 1))
    assert (caught.value.field, caught.value.value) == ("topology.json", f"{MAX_TOPOLOGY_DOMAINS + 1} domains")
    assert caught.value.allowed == f"must list at most {MAX_TOPOLOGY_DOMAINS} domains"


def test_node_labels_making_too_many_domains_are_refused() -> None:
    labels = {f"n{i}": {"tor": f"u{i}"} for i in range(MAX_TOPOLOGY_DOMAINS + 1)}
    with pytest.raises(InvalidField, match="must make at most"):
        tree_from_node_labels(labels, ["tor"])


def test_a_layer_missing_between_1_and_the_top_is_refused() -> None:
    gap = [
        {"layer": 5, "name": "top", "children": ["u0"]},
        {"layer": 1, "name": "u0", "parents": ["top"], "children": ["n0"]},
    ]
    with pytest.raises(InvalidField) as caught:
        parse_topology(json.dumps(gap))
    assert (caught.value.field, caught.value.value) == ("topology.json", "layers [1, 5]")
    assert "no domain has layer 2, 3, 4" in caught.value.allowed


def test_a_tree_without_layer_1_is_refused() -> None:
    with pytest.raises(InvalidField, match="no domain has layer 1"):
        parse_topology(json.dumps([{"layer": 2, "name": "leaf", "children": []}]))


def test_an_irregular_tree_whose_layers_all_exist_is_allowed() -> None:
    """One unit hangs straight from the spine (skips layer 2) while another has a leaf: allowed, as
    core/topology/tree.py documents (the unit stands in for itself at tier 2)."""
    tree = [
        {"layer": 3, "name": "spine", "children": ["leaf", "unitB"]},
        {"layer": 2, "name": "leaf", "parents": ["spine"], "children": ["unitA"]},
        {"layer": 1, "name": "unitA", "parents": ["leaf"], "children": ["n0"]},
        {"layer": 1, "name": "unitB", "parents": ["spine"], "children": ["n1"]},
    ]
    assert parse_topology(json.dumps(tree)).tiers == 3
