"""DRA CEL selectors: upstream's TestCEL cases (scalar attributes and capacities), names kept, and the caches.

Oracle: staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go `testcases` (expectations: match,
compile error substring, evaluation error substring) and compile.go `DeviceMatches` (the `device` variable).
Not ported: the list-valued attribute cases and `includes` (DRAListTypeAttributes, not modelled), the cost
cases ("expensive": the cost limit is the apiserver's create-time check), `cel.bind` ("bind": not in celpy),
"type-error" (celpy has no type checker: a non-bool result is reported when evaluated, see below), the
"macro-exists-on-*" cases (celpy iterates a string where cel-go reports a type error) and the
allowMultipleAllocations environment cases (no NewExpressions environment here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import pytest

from gangsched.core.devices import AttrValue, CelCache, CelCompileError, CelRuntimeError, Device

D = "dra.example.com"
Ki, Mi = Fraction(1024), Fraction(1024 * 1024)


@dataclass(frozen=True)
class C:
    expression: str
    driver: str = ""
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    capacity: dict[str, Fraction] = field(default_factory=dict)
    match: bool = False
    compile_error: str = ""
    match_error: str = ""
    multi: bool = False


def b(v: bool) -> AttrValue:
    return AttrValue("bool", v)


CASES: dict[str, C] = {
    "true": C("true", match=True),
    "false": C("false"),
    "syntax-error": C("?!", compile_error="Syntax error"),
    "runtime-error-lookup-identifier": C(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "runtime-error-lookup-map": C(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "domain-check-negative": C('"no-such-domain" in device.attributes'),
    "domain-check-positive": C(
        '"dra.example.com" in device.attributes', attributes={f"{D}/something": b(True)}, match=True
    ),
    "empty-driver-name": C('device.driver == ""', match=True),
    "real-driver-name": C('device.driver == "dra.example.com"', driver=D, match=True),
    "driver-name-qualifier": C(f'device.attributes["{D}"].name', driver=D, attributes={"name": b(True)}, match=True),
    "driver-name-qualifier-map-lookup": C(
        f'device.attributes["{D}"]["name"]', driver=D, attributes={"name": b(True)}, match=True
    ),
    "qualified-attribute-name": C(
        'device.attributes["other.example.com"].name',
        driver=D,
        attributes={"other.example.com/name": b(True)},
        match=True,
    ),
    "bool": C(f'device.attributes["{D}"].name', driver=D, attributes={"name": b(True)}, match=True),
    "int": C(f'device.attributes["{D}"].name > 0', driver=D, attributes={"name": AttrValue("int", 1)}, match=True),
    "string": C(
        f'device.attributes["{D}"].name == "fish"',
        driver=D,
        attributes={"name": AttrValue("string", "fish")},
        match=True,
    ),
    "version": C(
        f'device.attributes["{D}"].name.isGreaterThan(semver("0.0.1"))',
        driver=D,
        attributes={"name": AttrValue("version", "1.0.0")},
        match=True,
    ),
    "version_v": C(
        f'device.attributes["{D}"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        driver=D,
        attributes={"name": AttrValue("version", "1.0.0")},
        match=True,
    ),
    "quantity": C(
        f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))', driver=D, capacity={"name": Mi}, match=True
    ),
    "check-positive": C(
        f'"name" in device.capacity["{D}"] && device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
        driver=D,
        capacity={"name": Mi},
        match=True,
    ),
    "check-negative": C(
        f'!("name" in device.capacity["{D}"]) || device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))', match=True
    ),
    "all": C(
        " && ".join(
            [
                f'device.capacity["{D}"].quantity.isGreaterThan(quantity("1Ki"))',
                f'device.attributes["{D}"].bool',
                f'device.attributes["{D}"].int > 0',
                f'device.attributes["{D}"].string == "fish"',
                f'device.attributes["{D}"].version.isGreaterThan(semver("0.0.1"))',
                f'device.capacity["{D}"]["quantity"].isGreaterThan(quantity("1Ki"))',
                f'device.attributes["{D}"]["bool"]',
                f'device.attributes["{D}"]["int"] > 0',
                f'device.attributes["{D}"]["string"] == "fish"',
                f'device.attributes["{D}"]["version"].isGreaterThan(semver("0.0.1"))',
            ]
        ),
        driver=D,
        attributes={
            "bool": b(True),
            "int": AttrValue("int", 1),
            "string": AttrValue("string", "fish"),
            "version": AttrValue("version", "1.0.0"),
        },
        capacity={"quantity": Mi},
        match=True,
    ),
    "many": C(
        f'device.attributes["{D}"].a && device.attributes["{D}"].b && device.attributes["{D}"].c',
        driver=D,
        attributes={"a": b(True), "b": b(True), "c": b(True)},
        match=True,
    ),
    "check_attribute_domains": C(
        'device.attributes.exists_one(x, x == "dra.example.com")',
        driver=D,
        attributes={"services": AttrValue("string", "some_example_value")},
        match=True,
    ),
    "check_attribute_ids": C(
        f'device.attributes["{D}"].exists_one(x, x == "services")',
        driver=D,
        attributes={"services": AttrValue("string", "some_example_value")},
        match=True,
    ),
    "split_attribute": C(
        f'device.attributes["{D}"].services.split("example").size() >= 2',
        driver=D,
        attributes={"services": AttrValue("string", "some_example_value")},
        match=True,
    ),
    "regexp_attribute": C(
        f'device.attributes["{D}"].services.matches("[^a]?sym")',
        driver=D,
        attributes={"services": AttrValue("string", "asymetric")},
        match=True,
    ),
    "check_capacity_domains": C(
        'device.capacity.exists_one(x, x == "dra.example.com")', driver=D, capacity={"memory": Mi}, match=True
    ),
    "check_capacity_ids": C(
        f'device.capacity["{D}"].exists_one(x, x == "memory")', driver=D, capacity={"memory": Mi}, match=True
    ),
    "allow_multiple_allocations": C("device.allowMultipleAllocations == true", driver=D, multi=True, match=True),
    "allow_multiple_allocations_default": C("device.allowMultipleAllocations == false", driver=D, match=True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_cel_case(name: str) -> None:
    case = CASES[name]
    cel = CelCache()
    compiled = cel.compile(case.expression)
    if case.compile_error:
        assert compiled.error is not None and case.compile_error in compiled.error
        with pytest.raises(CelCompileError):
            cel.matches(case.expression, case.driver, Device("d"))
        return
    assert compiled.error is None, compiled.error
    dev = Device("d", case.attributes, case.capacity, case.multi)
    if case.match_error:
        with pytest.raises(CelRuntimeError) as info:
            cel.matches(case.expression, case.driver, dev)
        assert case.match_error in str(info.value)
        return
    assert cel.matches(case.expression, case.driver, dev) is case.match


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("noSuchVar", "undeclared reference to 'noSuchVar' (in container '')"),  # allocator_testing.go invalid-CEL-*
        ("device.attributes.exists(x, y)", "undeclared reference to 'y'"),  # a macro binds only its own variable
        ('noSuchFunction("x")', "undeclared reference to 'noSuchFunction'"),
        ("device.driver.noSuchMethod()", "undeclared reference to 'noSuchMethod'"),
    ],
)
def test_undeclared_references_fail_to_compile_as_cel_go_says(expression: str, error: str) -> None:
    """cel-go's checker refuses an unknown identifier or function at compile time (compile.go runs it)."""
    compiled = CelCache().compile(expression)
    assert compiled.error is not None and error in compiled.error


def test_a_result_that_is_not_bool_is_an_evaluation_error() -> None:
    """compile.go DeviceMatches: "CEL result of type int could not be converted to bool" (cel-go refuses it at
    compile time, "type-error"; without a type checker celpy finds it when evaluating)."""
    with pytest.raises(CelRuntimeError, match="CEL result of type int could not be converted to bool"):
        CelCache().matches("1", "d", Device("d"))


@pytest.mark.parametrize(
    ("expression", "match"),
    [
        ('quantity("80Gi").compareTo(quantity("81920Mi")) == 0', True),  # equal values, different suffixes
        ('quantity("80Gi") == quantity("81920Mi")', True),
        ('quantity("1.5").isGreaterThan(quantity("1500m"))', False),
        ('quantity("1k").isLessThan(quantity("1Ki"))', True),
        ('quantity("2Gi").asInteger() == 2147483648', True),
        ('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', True),
        ('isQuantity("1Gi") && !isQuantity("one")', True),
        ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),  # a pre-release sorts first (semver.org 11)
        ('semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))', True),  # numeric < alphanumeric
        ('semver("1.10.0").compareTo(semver("1.9.0")) == 1', True),
        ('semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3', True),
        ('isSemver("1.2") || isSemver("v1.2.3")', False),  # strict parsing unless relaxed
        ('"A100".lowerAscii() == "a100"', True),
    ],
)
def test_kubernetes_cel_library_extensions(expression: str, match: bool) -> None:
    """k8s.io/apiserver/pkg/cel/library quantity.go and semverlib.go (compareTo, isGreaterThan, isLessThan,
    asInteger, add, isQuantity; semver precedence per semver.org), and the strings extension's lowerAscii."""
    assert CelCache().matches(expression, "d", Device("d")) is match


def test_results_are_cached_per_attribute_set_and_expressions_per_text() -> None:
    """Two devices with the same attributes share one evaluation; a compiled program is reused (the issue allows
    caching selector results per device attribute set)."""
    cel = CelCache()
    expr = f'device.capacity["{D}"].memory.compareTo(quantity("80Gi")) >= 0'
    a = Device("gpu-0", {"model": AttrValue("string", "H100")}, {"memory": 80 * Mi * Ki})
    b2 = Device("gpu-1", {"model": AttrValue("string", "H100")}, {"memory": 80 * Mi * Ki})
    assert cel.matches(expr, D, a) and cel.matches(expr, D, b2)
    assert len(cel._results) == 1 and len(cel._compiled) == 1
    assert cel.compile(expr) is cel.compile(expr)
