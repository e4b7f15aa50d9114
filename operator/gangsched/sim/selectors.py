"""Label and field selectors of list/watch requests, and LabelSelector objects (PDBs, etc.).

Contract:
- `parse_label_selector(text)` parses the query-string form (`a=b,c!=d,e in (x,y),f notin (z),g,!h`, also `==`)
  into a `LabelSelector`; bad syntax raises SelectorError naming the parameter, the value and what is allowed.
- `parse_field_selector(text)` parses `field=value,field!=value` (also `==`) over the supported fields
  (metadata.name, metadata.namespace, spec.nodeName, spec.schedulerName, status.phase, plus any dotted path of
  the object, compared as strings with missing -> "").
- `selector_from_object(sel)` turns a metav1.LabelSelector dict (matchLabels, matchExpressions) into one.
- Selectors are immutable and `matches(obj)` is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector that cannot be parsed; the message names the parameter, the value and what is allowed."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!exists":
            return self.key not in labels
        if op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" match when the label is absent, as in Kubernetes
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    match_nothing: bool = False

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.match_nothing

    def matches(self, obj: dict[str, Any]) -> bool:
        if self.match_nothing:
            return False
        if not self.requirements:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def parse_label_selector(text: str | None, *, param: str = "labelSelector") -> LabelSelector:
    if not text or not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for part in _split_top(text):
        if not part.strip():
            raise SelectorError(f"invalid {param} {text!r}: empty requirement")
        m = _SET_RE.match(part)
        if m:
            values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
            reqs.append(Requirement(m.group(1), m.group(3), values))
            continue
        m = _EQ_RE.match(part)
        if m:
            op = "=" if m.group(3) in ("=", "==") else "!="
            reqs.append(Requirement(m.group(1), op, frozenset({m.group(4)})))
            continue
        m = _EXISTS_RE.match(part)
        if m:
            reqs.append(Requirement(m.group(2), "!exists" if m.group(1) else "exists"))
            continue
        raise SelectorError(
            f"invalid {param} {text!r}: cannot parse {part.strip()!r}; allowed: key=value, key==value, key!=value, "
            "key in (v1,v2), key notin (v1,v2), key, !key"
        )
    return LabelSelector(tuple(reqs))


def selector_from_object(sel: dict[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector; None matches nothing, {} matches everything (as for PDBs in policy/v1)."""
    if sel is None:
        return LabelSelector(match_nothing=True)
    reqs: list[Requirement] = []
    for key, value in (sel.get("matchLabels") or {}).items():
        reqs.append(Requirement(str(key), "=", frozenset({str(value)})))
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in sel.get("matchExpressions") or []:
        operator = expr.get("operator")
        if operator not in ops:
            raise SelectorError(
                f"invalid selector.matchExpressions operator {operator!r}; allowed: In, NotIn, Exists, DoesNotExist"
            )
        reqs.append(Requirement(str(expr.get("key", "")), ops[operator], frozenset(map(str, expr.get("values") or ()))))
    return LabelSelector(tuple(reqs))


SUPPORTED_FIELDS = ("metadata.name", "metadata.namespace", "spec.nodeName", "spec.schedulerName", "status.phase")


@dataclass(frozen=True)
class FieldRequirement:
    path: tuple[str, ...]
    negate: bool
    value: str

    def matches(self, obj: dict[str, Any]) -> bool:
        cur: Any = obj
        for p in self.path:
            cur = cur.get(p) if isinstance(cur, dict) else None
            if cur is None:
                break
        actual = "" if cur is None else (str(cur).lower() if isinstance(cur, bool) else str(cur))
        return (actual == self.value) != self.negate


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: dict[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def exact_name(self) -> str | None:
        """The name when the selector pins metadata.name (a fast path for kubectl's single-object watch)."""
        for r in self.requirements:
            if r.path == ("metadata", "name") and not r.negate:
                return r.value
        return None


_FIELD_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.]*)\s*(==|=|!=)\s*([^,]*?)\s*$")


def parse_field_selector(text: str | None, *, param: str = "fieldSelector") -> FieldSelector:
    if not text or not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for part in text.split(","):
        m = _FIELD_RE.match(part)
        if not m:
            raise SelectorError(
                f"invalid {param} {text!r}: cannot parse {part.strip()!r}; allowed: field=value, field==value, "
                f"field!=value over {', '.join(SUPPORTED_FIELDS)}"
            )
        reqs.append(FieldRequirement(tuple(m.group(1).split(".")), m.group(2) == "!=", m.group(3)))
    return FieldSelector(tuple(reqs))
