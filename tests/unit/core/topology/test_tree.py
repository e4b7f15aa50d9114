"""TopologyTree.from_domains: validation errors, normalization, paths, skipped layers and low roots."""

from __future__ import annotations

import pytest

from gangsched.core.topology import Domain, TopologyTree, natural_key
from gangsched.core.values.errors import InvalidField

D = Domain

SEED_EXAMPLE = [
    D(2, "s2", (), ("s0", "s1")),
    D(1, "s0", ("s2",), ("node0", "node1")),
    D(1, "s1", ("s2",), ("node2", "node3")),
]


def test_seed_example_paths_and_nodes() -> None:
    tree = TopologyTree.from_domains(SEED_EXAMPLE)
    assert tree.tiers == 2
    assert tree.nodes() == frozenset({"node0", "node1", "node2", "node3"})
    assert tree.node_path("node2") == ("s1", "s2")
    assert tree.node_path("node9") is None
    assert tree.domains_at(1) == ("s0", "s1")


def test_links_declared_on_one_side_only_are_enough() -> None:
    one_side = [D(2, "s2", (), ("s0",)), D(1, "s0", (), ("n0",)), D(1, "s1", ("s2",), ("n1",))]
    tree = TopologyTree.from_domains(one_side)
    assert tree.node_path("n0") == ("s0", "s2")
    assert tree.node_path("n1") == ("s1", "s2")
    assert tree == TopologyTree.from_domains(list(reversed(one_side)))
    assert [d.name for d in tree.domains] == ["s2", "s0", "s1"]
    assert tree.domains[0].children == ("s0", "s1")


def test_skipped_layer_and_low_root_stand_in_for_themselves() -> None:
    tree = TopologyTree.from_domains(
        [
            D(3, "spine", (), ("leaf", "unitB")),  # unitB skips layer 2
            D(2, "leaf", (), ("unitA",)),
            D(1, "unitA", (), ("a",)),
            D(1, "unitB", (), ("b",)),
            D(2, "lonely-leaf", (), ("unitC",)),  # a root below the top layer
            D(1, "unitC", (), ("c",)),
        ]
    )
    assert tree.node_path("a") == ("unitA", "leaf", "spine")
    assert tree.node_path("b") == ("unitB", "unitB", "spine")
    assert tree.node_path("c") == ("unitC", "lonely-leaf", "lonely-leaf")


def test_natural_order() -> None:
    assert sorted(["n10", "n2", "n1", "m"], key=natural_key) == ["m", "n1", "n2", "n10"]


@pytest.mark.parametrize(
    ("domains", "field", "message"),
    [
        pytest.param(
            [D(3, "a", ("c",), ()), D(4, "b", ("a",), ()), D(5, "c", ("b",), ())],
            "domains[",
            "cycle in the topology",
            id="cycle",
        ),
        pytest.param([D(1, "a", ("a",), ())], "domains[0].parents", "cycle", id="self-parent"),
        pytest.param([D(1, "u", ("nope",), ("n",))], "domains[0].parents", "unknown parent", id="unknown-parent"),
        pytest.param([D(2, "l", (), ("ghost",))], "domains[0].children", "unknown child", id="unknown-child"),
        pytest.param(
            [D(2, "l0", (), ("u",)), D(2, "l1", (), ("u",)), D(1, "u", (), ("n",))],
            "domains[1].children",
            "one parent per tier",
            id="domain-under-two-parents",
        ),
        pytest.param(
            [D(1, "u0", (), ("n",)), D(1, "u1", (), ("n",))],
            "domains[1].children",
            "one parent per tier",
            id="node-under-two-parents",
        ),
        pytest.param(
            [D(2, "l", (), ("u",)), D(2, "u", (), ())],
            "domains[0].children",
            "must increase upwards",
            id="equal-layers",
        ),
        pytest.param(
            [D(1, "l", (), ("u",)), D(2, "u", (), ())],
            "domains[0].children",
            "must increase upwards",
            id="decreasing-layers",
        ),
        pytest.param([D(1, "", (), ())], "domains[0].name", "non-empty", id="empty-name"),
        pytest.param([D(0, "u", (), ())], "domains[0].layer", ">= 1", id="layer-zero"),
        pytest.param([D(1, "u", (), ("",))], "domains[0].children", "non-empty", id="empty-child"),
        pytest.param([D(1, "u", (), ()), D(1, "u", (), ())], "domains[1].name", "unique", id="duplicate"),
        pytest.param(
            [
                D(3, "s0", (), ()),
                D(3, "s1", (), ()),
                D(2, "l", (), ()),
                D(1, "u", ("l", "s0"), ("n",)),
                D(1, "x", ("l",), ()),
                D(2, "l2", ("s1",), ("x",)),
            ],
            "domains[",
            "not on one chain",
            id="parents-not-on-one-chain",
        ),
    ],
)
def test_invalid_topologies_are_named(domains: list[Domain], field: str, message: str) -> None:
    with pytest.raises(InvalidField) as err:
        TopologyTree.from_domains(domains)
    assert err.value.field.startswith(field), err.value
    assert message in str(err.value)


def test_two_parents_on_one_chain_are_accepted() -> None:
    tree = TopologyTree.from_domains([D(3, "s", (), ("l",)), D(2, "l", (), ()), D(1, "u", ("l", "s"), ("n",))])
    assert tree.node_path("n") == ("u", "l", "s")


def test_empty_tree_holds_nothing() -> None:
    tree = TopologyTree.from_domains([])
    assert tree.tiers == 0 and tree.nodes() == frozenset()


def test_cycle_message_names_the_loop() -> None:
    with pytest.raises(InvalidField) as err:
        TopologyTree.from_domains([D(2, "a", (), ("b",)), D(3, "b", (), ("a",))])
    assert "'a' -> 'b' -> 'a'" in str(err.value) or "'b' -> 'a' -> 'b'" in str(err.value)
