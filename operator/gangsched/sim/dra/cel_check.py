"""Create-time check of DRA CEL selectors, as kube-apiserver's resource validation runs it (never evaluates).

Contract: `compile_selector(expression) -> CompileResult(error, max_cost)`. The expression is parsed by cel-python
(`celpy`, the maintained CEL library the scheduler's allocator evaluates selectors with); on top of the parse,
a small static check of the tree stands in for cel-go's type checker in the DRA environment of
k8s.io/dynamic-resource-allocation/cel/compile.go (`device` of type kubernetes.DRADevice with fields driver,
attributes, capacity; Kubernetes' quantity/semver/strings/lists/regex libraries; `cel.bind`): undeclared
identifiers and functions, undefined fields of `device`, map lookups with a non-string key, a literal result that is
not bool. Errors read as cel-go words them (`compilation failed: ERROR: <input>:L:C: ...` plus the source line and
caret; for syntax errors the detail after `Syntax error:` is this module's). `max_cost` is an upper estimate in the
spirit of cel.EstimateCost (comprehensions multiply their body by the target's maximum size: 32 attributes per map,
list literals by length); compare it with CEL_SELECTOR_MAX_COST. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import celpy
import lark
from celpy.celparser import CELParseError

CEL_SELECTOR_MAX_COST = 1_000_000  # pkg/apis/resource/types.go CELSelectorExpressionMaxCost
CEL_SELECTOR_MAX_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
MAX_ATTRIBUTES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice: the size bound of each attributes map
MAX_VALUE_LENGTH = 64  # DeviceAttributeMaxValueLength

DEVICE_FIELDS = {"driver": "string", "attributes": "attributes", "capacity": "capacity"}
TYPE_NAMES = {
    "attributes": "map(string, map(string, any))",
    "attr_domain": "map(string, any)",
    "capacity": "map(string, map(string, kubernetes.Quantity))",
    "cap_domain": "map(string, kubernetes.Quantity)",
}
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
# global functions of CEL's standard library and the Kubernetes libraries (k8s.io/apiserver/pkg/cel/library)
FUNCTIONS = {
    "has": "bool", "size": "int", "int": "int", "uint": "uint", "double": "double", "string": "string",
    "bytes": "dyn", "bool": "bool", "type": "dyn", "dyn": "dyn", "duration": "dyn", "timestamp": "dyn",
    "matches": "bool", "quantity": "quantity", "isQuantity": "bool", "semver": "semver", "isSemver": "bool",
    "url": "dyn", "isURL": "bool", "ip": "dyn", "isIP": "bool", "cidr": "dyn", "isCIDR": "bool",
    "format": "dyn",
}  # fmt: skip
METHODS = {
    "contains": "bool", "includes": "bool", "startsWith": "bool", "endsWith": "bool", "matches": "bool", "size": "int",
    "compareTo": "int", "isGreaterThan": "bool", "isLessThan": "bool", "add": "dyn", "sub": "dyn",
    "asInteger": "int", "asApproximateFloat": "double", "isInteger": "bool", "sign": "int",
    "major": "int", "minor": "int", "patch": "int", "lowerAscii": "string", "upperAscii": "string",
    "find": "string", "findAll": "dyn", "split": "dyn", "join": "string", "trim": "string",
    "replace": "string", "substring": "string", "charAt": "string", "indexOf": "int", "lastIndexOf": "int",
    "format": "string", "quote": "string", "reverse": "dyn", "sum": "dyn", "min": "dyn", "max": "dyn",
    "isSorted": "bool", "distinct": "dyn", "flatten": "dyn", "slice": "dyn", "getScheme": "string",
    "getHost": "string", "getHostname": "string", "getPort": "string", "getEscapedPath": "string",
    "getQuery": "dyn", "family": "int", "isUnspecified": "bool", "isLoopback": "bool",
    "isGlobalUnicast": "bool", "isLinkLocalMulticast": "bool", "isLinkLocalUnicast": "bool",
    "isCanonical": "bool", "containsIP": "bool", "containsCIDR": "bool", "prefixLength": "int",
    "masked": "dyn", "getHours": "int", "getMinutes": "int", "getSeconds": "int",
    "getMilliseconds": "int", "getFullYear": "int", "getMonth": "int", "getDate": "int",
    "getDayOfMonth": "int", "getDayOfWeek": "int", "getDayOfYear": "int",
}  # fmt: skip
Tree = lark.Tree[lark.Token]
Node = Tree | lark.Token
BOOL_NODES = frozenset({"conditionalor", "conditionaland"})  # with 2 operands; relation_* and unary_not always


@dataclass(frozen=True)
class CompileResult:
    error: str | None  # the validation detail (None: compiled)
    max_cost: int


@dataclass
class _Checker:
    source: str
    issues: list[tuple[int, int, str]] = field(default_factory=list)

    def issue(self, line: int, column: int, message: str) -> None:
        self.issues.append((line, column, message))

    # ---------------------------------------------------------------- walk: (cost, kind, size)
    def walk(self, node: Node, scope: dict[str, str]) -> tuple[int, str, int]:
        if isinstance(node, lark.Token):
            return 0, "dyn", MAX_VALUE_LENGTH
        handler = getattr(self, f"_{node.data}", None)
        if handler is not None:
            result: tuple[int, str, int] = handler(node, scope)
            return result
        cost, kind, size = 0, "dyn", MAX_VALUE_LENGTH
        trees = [c for c in node.children if isinstance(c, lark.Tree)]
        for child in trees:
            c_cost, kind, size = self.walk(child, scope)
            cost += c_cost
        boolean = node.data.startswith("relation_") or node.data == "unary_not"
        if boolean or len(trees) > 1:
            cost += 1
            kind = "bool" if boolean or node.data in BOOL_NODES else "dyn"
        return cost, kind, size

    def _ident(self, node: Tree, scope: dict[str, str]) -> tuple[int, str, int]:
        token = node.children[0]
        assert isinstance(token, lark.Token)
        name = str(token)
        if name in scope:
            return 1, scope[name], MAX_ATTRIBUTES
        if name == "device":
            return 1, "device", MAX_ATTRIBUTES
        self.issue(token.line or 1, token.column or 1, f"undeclared reference to '{name}' (in container '')")
        return 1, "dyn", MAX_VALUE_LENGTH

    def _literal(self, node: Tree, scope: dict[str, str]) -> tuple[int, str, int]:
        text = str(node.children[0])
        if text in ("true", "false"):
            return 0, "bool", 1
        if text == "null":
            return 0, "null_type", 1
        if text[:1] in "\"'" or text[:2].lower() in ('r"', "r'"):
            return 0, "string", len(text)
        if text[:2].lower() in ('b"', "b'"):
            return 0, "bytes", len(text)
        if text.lower().endswith("u"):
            return 0, "uint", 1
        if any(ch in text for ch in ".eE") and not text.lower().startswith(("0x", "-0x")):
            return 0, "double", 1
        return 0, "int", 1

    def _list_lit(self, node: Tree, scope: dict[str, str]) -> tuple[int, str, int]:
        exprs = _args(node, 0)
        cost = sum(self.walk(e, scope)[0] for e in exprs)
        return cost + 1, "list", len(exprs)

    def _member_dot(self, node: Tree, scope: dict[str, str]) -> tuple[int, str, int]:
        target, name = node.children[0], str(node.children[1])
        cost, kind, _ = self.walk(target, scope)
        dot = _end_column(target)
        if kind == "device":
            if name not in DEVICE_FIELDS:
                self.issue(_line(target), dot, f"undefined field '{name}'")
                return cost + 1, "dyn", MAX_VALUE_LENGTH
            return cost + 1, DEVICE_FIELDS[name], MAX_ATTRIBUTES
        return cost + 1, _element(kind), MAX_ATTRIBUTES

    def _member_index(self, node: Tree, scope: dict[str, str]) -> tuple[int, str, int]:
        target, index = node.children[0], node.children[1]
        cost, kind, _ = self.walk(target, scope)
        i_cost, i_kind, _ = self.walk(index, scope)
        if kind in TYPE_NAMES and i_kind not in ("string", "dyn"):
            self.issue(
                _line(target),
                _end_column(target),
                f"found no matching overload for '_[_]' applied to '({TYPE_NAMES[kind]}, {i_kind})'",
            )
        return cost + i_cost + 1, _element(kind), MAX_ATTRIBUTES

    def _member_dot_arg(self, node: Tree, scope: dict[str, str]) -> tuple[int, str, int]:
        target, method = node.children[0], str(node.children[1])
        args = _args(node, 2)
        if method == "bind" and _ident_name(target) == "cel" and len(args) == 3:
            var = _ident_name(args[0]) or ""
            init_cost, init_kind, _ = self.walk(args[1], scope)
            body_cost, kind, size = self.walk(args[2], {**scope, var: init_kind})
            return init_cost + body_cost + 1, kind, size
        cost, kind, size = self.walk(target, scope)
        if method in MACROS and args and _ident_name(args[0]):
            item = "string" if kind in TYPE_NAMES else "dyn"  # a map's comprehension variable is its key
            inner = {**scope, _ident_name(args[0]) or "": item}
            body = sum(self.walk(a, inner)[0] + 1 for a in args[1:])
            result = "bool" if method in ("all", "exists", "exists_one") else "list"
            return cost + max(size, 1) * (body + 1) + 1, result, size
        if method not in METHODS:
            self.issue(
                _line(target),
                _end_column(target) + 1 + len(method),
                f"undeclared reference to '{method}' (in container '')",
            )
        arg_cost = sum(self.walk(a, scope)[0] for a in args)
        extra = MAX_VALUE_LENGTH // 10 if method in ("matches", "find", "findAll", "split", "replace") else 0
        return cost + arg_cost + 1 + extra, METHODS.get(method, "dyn"), MAX_VALUE_LENGTH

    def _ident_arg(self, node: Tree, scope: dict[str, str]) -> tuple[int, str, int]:
        token = node.children[0]
        assert isinstance(token, lark.Token)
        name = str(token)
        args = _args(node, 1)
        if name not in FUNCTIONS:
            self.issue(
                token.line or 1, (token.column or 1) + len(name), f"undeclared reference to '{name}' (in container '')"
            )
        cost = sum(self.walk(a, scope)[0] for a in args)
        return cost + 1, FUNCTIONS.get(name, "dyn"), MAX_VALUE_LENGTH


def _args(node: Tree, index: int) -> list[Node]:
    """The children of the node's `index`-th child (an exprlist), or none."""
    child = node.children[index] if len(node.children) > index else None
    return list(child.children) if isinstance(child, lark.Tree) else []


def _element(kind: str) -> str:
    return {"attributes": "attr_domain", "capacity": "cap_domain", "cap_domain": "quantity"}.get(kind, "dyn")


def _line(node: Node) -> int:
    return int(getattr(getattr(node, "meta", None), "line", None) or getattr(node, "line", None) or 1)


def _end_column(node: Node) -> int:
    """The 1-based column just after the node (where the `.`, `[` or `(` that follows it is)."""
    meta = getattr(node, "meta", None)
    end = getattr(meta, "end_column", None) if meta is not None else getattr(node, "end_column", None)
    return int(end or 1)


def _ident_name(node: Node) -> str | None:
    """The identifier a subtree consists of (`x` of a macro, `cel` of cel.bind), else None."""
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "ident":
            return str(node.children[0])
        node = node.children[0]
    return None


def _format(source: str, issues: list[tuple[int, int, str]]) -> str:
    lines = source.split("\n")
    parts = []
    for line, column, message in issues:
        text = lines[line - 1] if 0 < line <= len(lines) else source
        parts.append(f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * (column - 1)}^")
    return "compilation failed: " + "\n".join(parts)


def _syntax_issue(exc: CELParseError) -> tuple[int, int, str]:
    context = exc.__context__
    token = getattr(context, "token", None)
    if token is not None:
        shown = "<EOF>" if token.type == "$END" else str(token)
        message = f"Syntax error: mismatched input '{shown}'"
    else:
        char = getattr(context, "char", None)
        message = f"Syntax error: token recognition error at: '{char}'" if char else "Syntax error: invalid input"
    return int(getattr(exc, "line", None) or 1), int(getattr(exc, "column", None) or 1), message


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> CompileResult:
    """See module docstring."""
    try:
        tree = celpy.Environment().compile(expression)
    except CELParseError as exc:
        return CompileResult(_format(expression, [_syntax_issue(exc)]), 2**64 - 1)
    checker = _Checker(expression)
    cost, kind, _ = checker.walk(tree, {})
    if checker.issues:
        return CompileResult(_format(expression, checker.issues), 2**64 - 1)
    if kind in ("string", "int", "uint", "double", "null_type", "bytes"):
        return CompileResult(f"must evaluate to bool or the unknown type, not {kind}", 2**64 - 1)
    return CompileResult(None, cost)
