"""Label selectors and node selector terms parsed by models/selectors.py and matched by the one matcher,
core/fit/matching.py. Semantics: staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go LabelSelectorAsSelector
(In, NotIn, Exists, DoesNotExist; an empty selector matches everything) and
staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity (Gt/Lt compare integers; matchFields only on
metadata.name)."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.records.records import requirement_matches
from gangsched.core.values.errors import InvalidField
from gangsched.models.selectors import LABEL_OPERATORS, NODE_OPERATORS, label_selector, node_selector_term, requirement

LABELS = {"app": "web", "tier": "3"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param({}, True, id="empty-matches-everything"),
        pytest.param({"matchLabels": {"app": "web"}}, True, id="labels"),
        pytest.param({"matchLabels": {"app": "db"}}, False, id="labels-differ"),
        pytest.param({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "x"]}]}, True, id="in"),
        pytest.param({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, False, id="notin"),
        pytest.param({"matchExpressions": [{"key": "gone", "operator": "NotIn", "values": ["a"]}]}, True, id="absent"),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True, id="exists"),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False, id="does-not-exist"),
    ],
)
def test_label_selectors_match_as_kubernetes_does(selector: dict[str, Any], matches: bool) -> None:
    assert label_selector(selector, field="spec.selector").matches(LABELS) is matches


@pytest.mark.parametrize(
    ("selector", "field"),
    [
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "operator", id="gt"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In"}]}, "values", id="in-without-values"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "values", id="exists"
        ),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}, "values", id="not-strings"),
        pytest.param({"matchExpressions": [{"operator": "Exists"}]}, "key", id="no-key"),
    ],
)
def test_bad_label_selectors_name_the_field(selector: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidField, match=rf"spec\.selector\.matchExpressions\[0\]\.{field}"):
        label_selector(selector, field="spec.selector")


def test_node_terms_have_gt_lt_and_match_fields_on_the_name_only() -> None:
    term = node_selector_term(
        {
            "matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["2"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
        },
        field="t",
    )
    assert requirement_matches(term.expressions[0], LABELS)
    assert requirement_matches(term.fields[0], {"metadata.name": "n1"})
    with pytest.raises(InvalidField, match=r"t\.matchFields\[0\]\.key"):
        node_selector_term({"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}, field="t")
    assert set(LABEL_OPERATORS) < set(NODE_OPERATORS)
    with pytest.raises(InvalidField, match="exactly one integer"):
        requirement({"key": "tier", "operator": "Lt", "values": ["x"]}, field="r", operators=NODE_OPERATORS)
