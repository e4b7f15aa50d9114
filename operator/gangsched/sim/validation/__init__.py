"""Validation of built-in kinds against the real Kubernetes v1.37 schemas and rules (admission-time checks).

Contract (called by registry.py on every write; a CRD object's body goes through schema.py, its metadata here):
- `decode_body(rtype, obj, field_validation, warnings)`: the real JSON decoder's checks (decode.py): type errors
  400 BadRequest; unknown fields 400 under Strict, a warning under Warn, nothing under Ignore; then dropped.
- `apply_defaults(rtype, obj)`: the v1 defaulting the emulator models (Secret type Opaque).
- `validate_object(rtype, obj, namespace, create)`: required properties, the kind rules of rules.py and the size
  limits of limits.py -> ApiError 422 Invalid with one cause per problem.
More: docs/modules.md#simvalidation__init__py.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim import status as st
from gangsched.sim.types import ResourceType
from gangsched.sim.validation import decode, limits, rules, schemas

__all__ = ["apply_defaults", "decode", "decode_body", "limits", "rules", "schemas", "validate_object"]


def _drop(obj: Any, path: str) -> None:
    """Remove one unknown field, given as `a.b[0].c`."""
    parts: list[str | int] = []
    for seg in path.split("."):
        while "[" in seg:
            head, _, rest = seg.partition("[")
            if head:
                parts.append(head)
            idx, _, seg = rest.partition("]")
            parts.append(int(idx) if idx.isdigit() else idx)
        if seg:
            parts.append(seg)
    cur = obj
    for p in parts[:-1]:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(cur, dict):
        cur.pop(parts[-1], None)


def decode_body(rtype: ResourceType, obj: dict[str, Any], field_validation: str, warnings: list[str]) -> None:
    """See module docstring."""
    if rtype.is_crd:
        return
    try:
        unknown = decode.check(rtype.group, rtype.version, rtype.kind, obj)
    except decode.DecodeError as exc:
        raise st.bad_request(
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: {exc}'
        ) from None
    if not unknown:
        return
    if field_validation == "Strict":
        fields = ", ".join(f'unknown field "{p}"' for p in unknown)
        raise st.bad_request(
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
            f"strict decoding error: {fields}"
        )
    if field_validation == "Warn":
        warnings.extend(f'unknown field "{p}"' for p in unknown)
    for path in unknown:
        _drop(obj, path)


def apply_defaults(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """See module docstring."""
    if (rtype.group, rtype.kind) == ("", "Secret") and not obj.get("type"):
        obj["type"] = "Opaque"


def validate_object(rtype: ResourceType, obj: dict[str, Any], *, namespace: str, create: bool) -> None:
    """See module docstring."""
    problems: list[tuple[str, str, str]] = []
    if not rtype.is_crd:
        problems.extend(
            (path, "Required value", "FieldValueRequired")
            for path in decode.required(rtype.group, rtype.version, rtype.kind, obj)
        )
        problems.extend(rules.validate(rtype.group, rtype.kind, obj, namespace=namespace, create=create))
        if (rtype.group, rtype.kind) == ("", "ConfigMap"):
            problems.extend(limits.configmap_problems(obj))
    problems.extend(limits.meta_problems(obj))
    if problems:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise st.invalid(rtype, name, problems)
