"""The emulator's selector parsing and matching (pure): the query-string grammar, LabelSelector objects, and error
messages that name the parameter, the value and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.sim.selectors import SelectorError, parse_field_selector, parse_label_selector, selector_from_object

OBJ = {
    "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web", "tier": "front", "v": "1"}},
    "spec": {"nodeName": "n1"},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        pytest.param("", True, id="empty"),
        pytest.param("app=web", True, id="eq"),
        pytest.param("app = web", True, id="spaces"),
        pytest.param("app!=web", False, id="neq"),
        pytest.param("app in (db, web)", True, id="in"),
        pytest.param("app notin (web)", False, id="notin"),
        pytest.param("missing notin (x)", True, id="notin-absent"),
        pytest.param("missing!=x", True, id="neq-absent"),
        pytest.param("tier,!missing", True, id="exists-and-not"),
        pytest.param("app=web,tier in (back)", False, id="and-fails"),
        pytest.param("example.com/key", False, id="prefixed-key"),
    ],
)
def test_label_selector(text: str, matches: bool) -> None:
    assert parse_label_selector(text).matches(OBJ) is matches


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a in (", id="open-paren"),
        pytest.param("=x", id="no-key"),
        pytest.param("a,,b", id="empty-part"),
        pytest.param("a=b=c", id="double-eq"),
    ],
)
def test_label_selector_errors_name_the_value(text: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_label_selector(text)
    assert "labelSelector" in str(err.value) and repr(text) in str(err.value)


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        pytest.param("metadata.name=p", True, id="name"),
        pytest.param("metadata.namespace==ns", True, id="namespace"),
        pytest.param("spec.nodeName!=n1", False, id="node-neq"),
        pytest.param("spec.schedulerName=", True, id="absent-is-empty"),
        pytest.param("status.phase=Running,metadata.name=p", True, id="and"),
    ],
)
def test_field_selector(text: str, matches: bool) -> None:
    assert parse_field_selector(text).matches(OBJ) is matches


def test_field_selector_error() -> None:
    with pytest.raises(SelectorError) as err:
        parse_field_selector("status.phase")
    assert "fieldSelector" in str(err.value) and "status.phase" in str(err.value)


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param(None, False, id="null-matches-nothing"),
        pytest.param({}, True, id="empty-matches-all"),
        pytest.param({"matchLabels": {"app": "web"}}, True, id="match-labels"),
        pytest.param({"matchExpressions": [{"key": "v", "operator": "NotIn", "values": ["1"]}]}, False, id="notin"),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True, id="exists"),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False, id="does-not-exist"),
    ],
)
def test_selector_objects(selector: dict[str, Any] | None, matches: bool) -> None:
    assert selector_from_object(selector).matches(OBJ) is matches


def test_selector_object_bad_operator() -> None:
    with pytest.raises(SelectorError) as err:
        selector_from_object({"matchExpressions": [{"key": "a", "operator": "Near"}]})
    assert "'Near'" in str(err.value) and "In, NotIn, Exists, DoesNotExist" in str(err.value)
