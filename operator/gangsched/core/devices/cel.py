"""DRA device selectors in CEL, evaluated with cel-python (`celpy`) plus Kubernetes' CEL extensions they use.

Contract (oracle: staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go, `DeviceMatches`):
- `CelCache.compile(expr)` -> `Compiled` (cached per expression): `.error` in cel-go's words ("undeclared
  reference to 'x' (in container '')", a syntax error), or None.
- `CelCache.matches(expr, driver, device)` -> bool, cached per (expression, driver, and the values the expression
  reads when it reads them by plain lookups (`references`), else the device attribute set); raises
  `CelRuntimeError` (upstream's message, e.g. "no such key: model") or `CelCompileError`.
- `device`: `driver`, `attributes[domain][id]`, `capacity[domain][id]` (no domain: the driver's; an unknown
  domain is an empty map), `allowMultipleAllocations`; versions are semver values, capacities quantities.
  Extensions (core/devices/cel_runtime.py): quantity, semver (strict or relaxed), their comparisons and
  accessors, and the strings extension's lowerAscii, upperAscii, trim, replace, split, join.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gangsched.core.devices.model import Device

# `device.driver`, `device.allowMultipleAllocations`, `device.attributes["domain"].id` / `["domain"]["id"]` (and
# capacity alike), not followed by a call: a selector that reads the device only through these depends only on
# the values they name, so its result is cached per those values instead of per whole attribute set
_REF = re.compile(
    r'\bdevice\s*\.\s*(?:(driver|allowMultipleAllocations)\b|(attributes|capacity)\s*\[\s*"([^"\\]*)"\s*\]\s*'
    r'(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()|\[\s*"([^"\\]*)"\s*\]))'
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_DEVICE = re.compile(r"\bdevice\b")
Ref = tuple[str, str, str]  # ("driver" | "allowMultipleAllocations", "", "") or (map, domain, id)


def references(expression: str) -> tuple[Ref, ...] | None:
    """What a selector reads of the device, when it reads it only through plain lookups; else None."""
    refs: list[Ref] = []
    for m in _REF.finditer(expression):
        field, kind, domain, ident, ident2 = m.groups()
        refs.append((field, "", "") if field else (kind, domain, ident or ident2))
    rest = _STRING.sub('""', _REF.sub("", expression))
    if _DEVICE.search(rest):
        return None
    return tuple(dict.fromkeys(refs))


def _lookup(device: Device, driver: str, ref: Ref) -> Any:
    kind, domain, ident = ref
    if kind == "driver":
        return driver
    if kind == "allowMultipleAllocations":
        return device.allow_multiple_allocations
    table: Any = device.attributes if kind == "attributes" else device.capacity
    value = table.get(f"{domain}/{ident}")
    if value is None and domain == driver:
        value = table.get(ident)
    return value


class CelCompileError(Exception):
    """A selector that does not compile."""


class CelRuntimeError(Exception):
    """A selector that fails while evaluated against a device (e.g. a missing attribute)."""


@dataclass(frozen=True, slots=True)
class Compiled:
    expression: str
    program: Any  # a celpy Runner, or None when `error` is set
    error: str | None


class CelCache:
    """Compiled selectors by expression and their results by (expression, driver, device attribute set)."""

    def __init__(self) -> None:
        self._rt: Any = None  # core/devices/cel_runtime.py, imported on first use
        self._env: Any = None
        self._compiled: dict[str, Compiled] = {}
        self._refs: dict[str, tuple[Ref, ...] | None] = {}
        self._results: dict[tuple[Any, ...], bool | str] = {}

    def _runtime(self) -> Any:
        if self._rt is None:
            import gangsched.core.devices.cel_runtime as cel_runtime  # celpy is slow to import: on first use

            self._rt = cel_runtime
            self._env = cel_runtime.environment()
        return self._rt

    def compile(self, expression: str) -> Compiled:
        c = self._compiled.get(expression)
        if c is None:
            c = self._compiled[expression] = self._compile(expression)
        return c

    def _compile(self, expression: str) -> Compiled:
        rt = self._runtime()
        try:
            tree = self._env.compile(expression)
        except rt.celpy.CELParseError as e:
            return Compiled(expression, None, f"Syntax error: {str(e).splitlines()[0]}")
        name = rt.undeclared(tree)
        if name is not None:
            return Compiled(expression, None, f"undeclared reference to '{name}' (in container '')")
        return Compiled(expression, self._env.program(tree, functions=rt.FUNCTIONS), None)

    def matches(self, expression: str, driver: str, device: Device) -> bool:
        if expression in self._refs:
            refs = self._refs[expression]
        else:
            refs = self._refs[expression] = references(expression)
        if refs is None:
            key: tuple[Any, ...] = (expression, driver, device.cel_key)
        else:
            key = (expression, driver, *(_lookup(device, driver, r) for r in refs))
        out = self._results.get(key)
        if out is None:
            out = self._results[key] = self._evaluate(expression, driver, device)
        if isinstance(out, str):
            raise CelRuntimeError(out)
        return out

    def _evaluate(self, expression: str, driver: str, device: Device) -> bool | str:
        c = self.compile(expression)
        if c.error is not None:
            raise CelCompileError(c.error)
        rt = self._runtime()
        try:
            result = c.program.evaluate(rt.activation(driver, device))
        except rt.CELEvalError as e:
            return str(rt.runtime_message(e))
        except ValueError as e:  # e.g. an attribute with a malformed version
            return str(e)
        if not isinstance(result, rt.celtypes.BoolType):
            return f"CEL result of type {rt.type_name(result)} could not be converted to bool"
        return bool(result)
