"""Label selectors and node selector terms of API objects, parsed into the core's `Requirement` and `Term` records.

Contract:
- `requirement(raw, *, field, operators)`: one `{key, operator, values}` entry. `operators` is
  `LABEL_OPERATORS` (metav1.LabelSelectorRequirement: In, NotIn, Exists, DoesNotExist), `NODE_OPERATORS` (a
  NodeSelectorRequirement: those and Gt, Lt) or `FIELD_OPERATORS` (matchFields: In, NotIn on metadata.name only).
  In/NotIn need values, Exists/DoesNotExist take none, Gt/Lt exactly one integer.
- `node_selector_term(raw, *, field) -> Term`: matchExpressions and matchFields of a nodeSelectorTerm.
- `label_selector(raw, *, field) -> LabelSelector`: matchLabels and matchExpressions of a metav1.LabelSelector.
Bad input raises InvalidField naming the field path (e.g. `spec.selector.matchExpressions[0].operator`). Matching
is core/fit/matching.py's, one matcher for all of them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Final

from gangsched.core import InvalidField, LabelSelector, Requirement, Term
from gangsched.models.fields import as_list, as_object

LABEL_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS: Final = ("In", "NotIn")
FIELD_KEYS: Final = ("metadata.name",)  # the only key matchFields defines for nodes


def _values(raw: Any, op: str, *, field: str) -> tuple[str, ...]:
    listed = as_list(raw, field=field)
    if not all(isinstance(v, str) for v in listed):
        raise InvalidField(field, listed, "must be a list of strings")
    values = tuple(listed)
    if op in ("In", "NotIn") and not values:
        raise InvalidField(field, [], f"operator {op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and values:
        raise InvalidField(field, list(values), f"operator {op} takes no values")
    if op in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        raise InvalidField(field, list(values), f"operator {op} needs exactly one integer value")
    return values


def requirement(raw: Any, *, field: str, operators: tuple[str, ...]) -> Requirement:
    entry = as_object(raw, field=field)
    key = entry.get("key")
    op = entry.get("operator")
    if not isinstance(key, str) or not key:
        raise InvalidField(f"{field}.key", key, "must be a non-empty string")
    if operators is FIELD_OPERATORS and key not in FIELD_KEYS:
        raise InvalidField(f"{field}.key", key, "matchFields supports only metadata.name")
    if op not in operators:
        raise InvalidField(f"{field}.operator", op, f"must be one of {sorted(operators)}")
    return Requirement(sys.intern(key), op, _values(entry.get("values"), op, field=f"{field}.values"))


def _requirements(raw: Any, *, field: str, operators: tuple[str, ...]) -> tuple[Requirement, ...]:
    entries = as_list(raw, field=field)
    return tuple(requirement(e, field=f"{field}[{i}]", operators=operators) for i, e in enumerate(entries))


def node_selector_term(raw: Any, *, field: str) -> Term:
    term = as_object(raw, field=field)
    expressions = _requirements(
        term.get("matchExpressions"), field=f"{field}.matchExpressions", operators=NODE_OPERATORS
    )
    fields = _requirements(term.get("matchFields"), field=f"{field}.matchFields", operators=FIELD_OPERATORS)
    return Term(expressions, fields)


def label_selector(raw: Any, *, field: str) -> LabelSelector:
    if not isinstance(raw, Mapping):
        raise InvalidField(field, raw, "must be a label selector object")
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise InvalidField(f"{field}.matchLabels", match_labels, "must be a mapping of string to string")
    expressions = _requirements(
        raw.get("matchExpressions") or [], field=f"{field}.matchExpressions", operators=LABEL_OPERATORS
    )
    labels = tuple(sorted((str(k), str(v)) for k, v in match_labels.items()))
    return LabelSelector(labels, expressions)
