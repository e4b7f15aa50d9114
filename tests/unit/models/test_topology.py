"""models/topology: the ConfigMap's topology.json (parse, errors, render round trip) and label-derived trees."""

from __future__ import annotations

import json

import pytest

from gangsched.core.topology import TopologyPlacement, place
from gangsched.core.values.errors import InvalidField
from gangsched.models.topology import (
    MAX_TOPOLOGY_BYTES,
    domains_from_node_labels,
    parse_topology,
    render_topology,
    tree_from_node_labels,
)

SEED_JSON = """[
 {"layer": 2, "name": "s2", "children": ["s0", "s1"]},
 {"layer": 1, "name": "s0", "parents": ["s2"], "children": ["node0", "node1"]},
 {"layer": 1, "name": "s1", "parents": ["s2"], "children": ["node2", "node3"]}
]"""


def test_parses_the_seed_example() -> None:
    tree = parse_topology(SEED_JSON)
    assert tree.tiers == 2
    assert tree.node_path("node3") == ("s1", "s2")
    assert parse_topology(SEED_JSON.encode()) == tree


def test_render_round_trips_in_the_seed_format() -> None:
    tree = parse_topology(SEED_JSON)
    text = render_topology(tree)
    assert parse_topology(text) == tree
    doc = json.loads(text)
    assert doc[0] == {"layer": 2, "name": "s2", "children": ["s0", "s1"]}
    assert doc[1] == {"layer": 1, "name": "s0", "parents": ["s2"], "children": ["node0", "node1"]}


def _entry(**kw: object) -> str:
    return json.dumps([kw])


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        pytest.param("{not json", "topology.json", "must be JSON", id="not-json"),
        pytest.param('{"layer": 1}', "topology.json", "must be a JSON list", id="not-a-list"),
        pytest.param("[]", "topology.json", "at least one domain", id="empty-list"),
        pytest.param("[3]", "topology.json[0]", "must be an object", id="entry-not-object"),
        pytest.param(_entry(layer=1, name="u", child=["n"]), "topology.json[0].child", "unknown key", id="typo-key"),
        pytest.param(_entry(name="u"), "topology.json[0].layer", "is required", id="missing-layer"),
        pytest.param(_entry(layer="1", name="u"), "topology.json[0].layer", "integer >= 1", id="layer-string"),
        pytest.param(_entry(layer=True, name="u"), "topology.json[0].layer", "integer >= 1", id="layer-bool"),
        pytest.param(_entry(layer=1, name=""), "topology.json[0].name", "non-empty", id="empty-name"),
        pytest.param(_entry(layer=1, name="u", children="n"), "topology.json[0].children", "list", id="children-str"),
        pytest.param(
            json.dumps([{"layer": 2, "name": "a", "children": ["b"]}, {"layer": 3, "name": "b", "children": ["a"]}]),
            "topology.json[",
            "cycle",
            id="cycle",
        ),
        pytest.param(
            _entry(layer=1, name="u", parents=["x"]), "topology.json[0].parents", "unknown parent", id="unknown-parent"
        ),
        pytest.param(
            json.dumps([{"layer": 1, "name": "u0", "children": ["n"]}, {"layer": 1, "name": "u1", "children": ["n"]}]),
            "topology.json[1].children",
            "one parent per tier",
            id="node-two-parents",
        ),
        pytest.param(
            json.dumps([{"layer": 1, "name": "l", "children": ["u"]}, {"layer": 1, "name": "u", "children": ["n"]}]),
            "topology.json[0].children",
            "must increase upwards",
            id="non-increasing-layers",
        ),
    ],
)
def test_bad_configmaps_are_rejected_with_the_field(text: str, field: str, message: str) -> None:
    with pytest.raises(InvalidField) as err:
        parse_topology(text)
    assert err.value.field.startswith(field), err.value
    assert message in str(err.value)


def test_over_five_megabytes_is_rejected_before_parsing() -> None:
    text = "[" + " " * MAX_TOPOLOGY_BYTES + "]"
    with pytest.raises(InvalidField) as err:
        parse_topology(text)
    assert err.value.field == "topology.json"
    assert "5242880" in str(err.value) and str(MAX_TOPOLOGY_BYTES + 2) in str(err.value)


# --------------------------------------------------------------------------------------------- node labels

KEYS = ["unit", "leaf", "spine"]


def _labels(unit: str, leaf: str, spine: str) -> dict[str, str]:
    return {"unit": unit, "leaf": leaf, "spine": spine, "kubernetes.io/os": "linux"}


STORY_LABELS = {
    **{f"node{i}": _labels("unit0", "leaf0", "spine0") for i in range(4)},
    **{f"node{i}": _labels("unit1", "leaf1", "spine0") for i in range(4, 8)},
    **{f"node{i}": _labels("unit2", "leaf1", "spine0") for i in range(8, 12)},
    "unlabelled": {"kubernetes.io/os": "linux"},
    "half": {"unit": "unit9"},
}


def test_tree_from_labels_matches_the_story_tree_and_places_story_2() -> None:
    tree = tree_from_node_labels(STORY_LABELS, KEYS)
    assert tree.tiers == 3
    assert tree.node_path("node9") == ("unit2", "leaf1", "spine0")
    assert "unlabelled" not in tree.nodes() and "half" not in tree.nodes()
    capacity = {f"node{i}": 1 for i in range(4, 12)}
    result = place(tree, capacity, count=4, group_size=2, highest_tier_allowed=None, hard=False)
    assert result == TopologyPlacement(nodes=[f"node{i}" for i in range(4, 8)], whole_tier=1, group_tier=1)


def test_labels_render_to_a_configmap_that_parses_back() -> None:
    tree = tree_from_node_labels(STORY_LABELS, KEYS)
    assert parse_topology(render_topology(tree)) == tree
    names = [d.name for d in domains_from_node_labels(STORY_LABELS, KEYS)]
    assert names == ["spine0", "leaf0", "leaf1", "unit0", "unit1", "unit2"]


@pytest.mark.parametrize(
    ("labels", "keys", "field", "message"),
    [
        pytest.param(
            {"a": _labels("u0", "l0", "s0"), "b": _labels("u0", "l1", "s0")},
            KEYS,
            "node b: label unit",
            "under leaf='l1' here but under leaf='l0' on node a",
            id="unit-under-two-leaves",
        ),
        pytest.param(
            {"a": _labels("u0", "l0", "s0"), "b": _labels("u1", "l0", "s1")},
            KEYS,
            "node b: label leaf",
            "under spine='s1' here but under spine='s0'",
            id="leaf-under-two-spines",
        ),
        pytest.param(
            {"a": _labels("x", "l0", "s0"), "b": _labels("u1", "x", "s0")},
            KEYS,
            "node b: label leaf",
            "one tier only",
            id="value-at-two-tiers",
        ),
        pytest.param({}, [], "topology.nodeLabels", "one node label key per tier", id="no-keys"),
        pytest.param({}, ["unit", "unit"], "topology.nodeLabels[1]", "unique", id="duplicate-key"),
    ],
)
def test_inconsistent_labels_are_named(
    labels: dict[str, dict[str, str]], keys: list[str], field: str, message: str
) -> None:
    with pytest.raises(InvalidField) as err:
        tree_from_node_labels(labels, keys)
    assert err.value.field == field
    assert message in str(err.value)
