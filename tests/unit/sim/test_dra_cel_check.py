"""The emulator's create-time check of DRA CEL selectors (sim/dra/cel_check.py).

Oracle: kubernetes staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go `testcases`, the cases that
decide compilation (names kept): "true", "false", "syntax-error", "type-error", and cases that compile and fail
only at match time ("runtime-error-lookup-identifier", "runtime-error-lookup-map", "domain-check-negative",
"driver-name-qualifier-map-lookup", "bind", "macro-on-list-of-semver", "includes-function-on-string-list-positive",
"list-of-int"); pkg/apis/resource/validation/validation_resourceclaim_test.go "CEL-compile-errors" and "CEL-cost"
for the message and the cost limit. Costs are this module's estimate, not cel-go's figures: only the limit is
compared.
"""

from __future__ import annotations

import pytest

from gangsched.sim.dra.cel_check import CEL_SELECTOR_MAX_COST, compile_selector

COMPILES = {
    "true": "true",
    "false": "false",
    "runtime-error-lookup-identifier": 'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
    "runtime-error-lookup-map": 'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
    "domain-check-negative": '"no-such-domain" in device.attributes',
    "driver-name-qualifier-map-lookup": 'device.attributes["dra.example.com"]["name"]',
    "bind": 'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
    "macro-on-list-of-semver": 'device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))',
    "includes-function-on-string-list-positive": 'device.attributes["dra.example.com"].name.includes("fish")',
    "list-of-int": 'device.attributes["dra.example.com"].names.size() == 2',
    "quantity-compare": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0',
}


@pytest.mark.parametrize("name", sorted(COMPILES))
def test_compiles_within_the_cost_limit(name: str) -> None:
    result = compile_selector(COMPILES[name])
    assert result.error is None, result.error
    assert result.max_cost <= CEL_SELECTOR_MAX_COST


@pytest.mark.parametrize(
    ("name", "expression", "detail"),
    [
        ("syntax-error", "?!", "Syntax error"),
        ("type-error", "1", "must evaluate to bool or the unknown type, not int"),
        ("undeclared-identifier", "foo == 1", "undeclared reference to 'foo' (in container '')"),
        ("undefined-field", "device.noSuchField", "undefined field 'noSuchField'"),
        ("undeclared-function", "device.driver.noSuchMethod()", "undeclared reference to 'noSuchMethod'"),
    ],
)
def test_does_not_compile(name: str, expression: str, detail: str) -> None:
    result = compile_selector(expression)
    assert result.error is not None and detail in result.error, (name, result.error)


def test_compile_error_message_as_cel_go_words_it() -> None:
    """validation_resourceclaim_test.go "CEL-compile-errors": position, source line and caret."""
    assert compile_selector("device.attributes[true].someBoolean").error == (
        "compilation failed: ERROR: <input>:1:18: found no matching overload for '_[_]' applied to "
        "'(map(string, map(string, any)), bool)'\n | device.attributes[true].someBoolean\n | .................^"
    )


def test_macro_variables_are_in_scope_only_inside() -> None:
    assert compile_selector("device.attributes.exists(k, k == 'x')").error is None
    assert "undeclared reference to 'k'" in (
        compile_selector("device.attributes.exists(k, true) && k == 'x'").error or ""
    )


def test_nested_comprehensions_exceed_the_cost_limit() -> None:
    """ "CEL-cost": seven nested all() over 10-element lists is far beyond 1,000,000."""
    nested = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    expression = "true"
    for var in ("z5", "z4", "z3", "z2", "z", "y", "x"):
        expression = f"{nested}.all({var}, {expression})"
    assert compile_selector(expression).max_cost > CEL_SELECTOR_MAX_COST
    two_levels = "device.attributes.all(d, device.attributes[d].all(a, a != ''))"
    assert compile_selector(two_levels).max_cost <= CEL_SELECTOR_MAX_COST
