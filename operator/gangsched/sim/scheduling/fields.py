"""The field checks the scheduling.k8s.io strategies share, as apimachinery's declarative validation words them.

Contract: every function returns a list of problems `(field path, detail, cause reason)` (empty: valid), with the
details kube-apiserver prints (`Invalid value: "x": ...`, `Required value`, `Unsupported value: ...`,
`Too many: 2: must have at most 1 item`, `Duplicate value: ...`, `field is immutable`,
`field cannot be set once created`). Sources: staging/src/k8s.io/apimachinery/pkg/api/validate (union.go
Union, limits.go Minimum/Maximum, update.go NoSet/NoUnset, immutable.go Immutable, each.go (unique map keys),
strfmt.go formats k8s-short-name = DNS-1123 label, k8s-long-name = DNS-1123 subdomain, k8s-label-key = qualified
name) and staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation ValidateConditions. Pure.
"""

from __future__ import annotations

import re
from typing import Any

from gangsched.sim.validation.rules import invalid as invalid
from gangsched.sim.validation.rules import qualified_name_errors
from gangsched.sim.validation.rules import quote as quote
from gangsched.sim.validation.rules import required as required

Problem = tuple[str, str, str]

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONDITION_TYPE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
HIGHEST_USER_PRIORITY = 1_000_000_000  # pkg/apis/scheduling HighestUserDefinablePriority
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")

DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def forbidden(path: str, detail: str = "") -> Problem:
    return (path, f"Forbidden: {detail}" if detail else "Forbidden", "FieldValueForbidden")


def short_name(path: str, value: Any) -> list[Problem]:
    """format=k8s-short-name (a DNS-1123 label)."""
    text = str(value)
    if len(text) > 63:
        return [invalid(path, text, "must be no more than 63 characters")]
    return [] if _LABEL.match(text) else [invalid(path, text, DNS_LABEL_MSG)]


def long_name(path: str, value: Any) -> list[Problem]:
    """format=k8s-long-name (a DNS-1123 subdomain)."""
    text = str(value)
    if len(text) > 253:
        return [invalid(path, text, "must be no more than 253 characters")]
    return [] if _SUBDOMAIN.match(text) else [invalid(path, text, DNS_SUBDOMAIN_MSG)]


def label_key(path: str, value: Any) -> list[Problem]:
    """format=k8s-label-key (IsQualifiedName)."""
    return [invalid(path, value, msg) for msg in qualified_name_errors(str(value))]


def union(path: str, obj: Any, members: tuple[str, ...]) -> list[Problem]:
    """validate.Union: exactly one member set (a member set to null counts as unset)."""
    given = [m for m in members if isinstance(obj, dict) and obj.get(m) is not None]
    names = ", ".join(f"`{m}`" for m in members)
    if not given:
        return [invalid(path, "", f"must specify one of: {names}")]
    if len(given) > 1:
        listed = "{" + ", ".join(f"`{m}`" for m in given) + "}"
        return [invalid(path, listed, f"must specify exactly one of: {names}")]
    return []


def max_items(path: str, items: Any, limit: int) -> list[Problem]:
    if isinstance(items, list) and len(items) > limit:
        plural = "item" if limit == 1 else "items"
        return [(path, f"Too many: {len(items)}: must have at most {limit} {plural}", "FieldValueTooMany")]
    return []


def unique_keys(path: str, items: Any, key: str) -> list[Problem]:
    """listType=map: no two items with the same key."""
    seen: set[Any] = set()
    problems: list[Problem] = []
    for i, item in enumerate(items if isinstance(items, list) else ()):
        value = item.get(key) if isinstance(item, dict) else None
        if value in seen:
            problems.append(
                (f"{path}[{i}]", f"Duplicate value: {{{quote(key)}:{quote(value)}}}", "FieldValueDuplicate")
            )
        seen.add(value)
    return problems


def priority(path: str, value: Any) -> list[Problem]:
    if isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        return [invalid(path, value, f"must be less than or equal to {HIGHEST_USER_PRIORITY}")]
    return []


def preemption_policy(path: str, value: Any) -> list[Problem]:
    if value is not None and value not in PREEMPTION_POLICIES:
        supported = ", ".join(quote(p) for p in PREEMPTION_POLICIES)
        return [(path, f"Unsupported value: {quote(value)}: supported values: {supported}", "FieldValueNotSupported")]
    return []


def immutable(path: str, new: Any, old: Any) -> list[Problem]:
    """validate.Immutable (absent and null are the same value)."""
    return [] if new == old else [invalid(path, None, "field is immutable")]


def no_set_no_unset(path: str, new: Any, old: Any) -> list[Problem]:
    """+k8s:update=NoSet and NoUnset: may change, may not appear or disappear after create."""
    if old is None and new is not None:
        return [invalid(path, None, "field cannot be set once created")]
    if old is not None and new is None:
        return [invalid(path, None, "field cannot be cleared once set")]
    return []


def conditions(path: str, items: Any) -> list[Problem]:
    """metav1validation.ValidateConditions: type (qualified name), status True|False|Unknown, lastTransitionTime,
    reason (CamelCase, at most 1024), message (at most 32768), unique types."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, cond in enumerate(items if isinstance(items, list) else ()):
        at = f"{path}[{i}]"
        if not isinstance(cond, dict):
            continue
        ctype = str(cond.get("type") or "")
        if ctype in seen:
            problems.append((f"{at}.type", f"Duplicate value: {quote(ctype)}", "FieldValueDuplicate"))
        seen.add(ctype)
        if not ctype or not _CONDITION_TYPE.match(ctype.rsplit("/", 1)[-1]):
            problems.extend([required(f"{at}.type")] if not ctype else label_key(f"{at}.type", ctype))
        status = cond.get("status")
        if status not in ("True", "False", "Unknown"):
            supported = '"False", "True", "Unknown"'
            problems.append(
                (
                    f"{at}.status",
                    f"Unsupported value: {quote(status or '')}: supported values: {supported}",
                    "FieldValueNotSupported",
                )
            )
        if not cond.get("lastTransitionTime"):
            problems.append((f"{at}.lastTransitionTime", "Required value: must be set", "FieldValueRequired"))
        reason = str(cond.get("reason") or "")
        if not reason:
            problems.append((f"{at}.reason", "Required value: must be set", "FieldValueRequired"))
        elif len(reason) > 1024 or not _REASON.match(reason):
            problems.append(
                invalid(
                    f"{at}.reason",
                    reason,
                    "a condition reason must start with alphabetic character, "
                    "optionally followed by a string of alphanumeric characters or '_,:', and must "
                    "end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
                    "'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for "
                    "validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                )
            )
        if len(str(cond.get("message") or "")) > 32768:
            problems.append((f"{at}.message", "Too long: may not be more than 32768 bytes", "FieldValueTooLong"))
    return problems
