"""What an update of a Pod may change, as kube-apiserver v1.32 validates it (ValidatePodUpdate and the helpers it
calls, the v1 defaults applied on decode, the Priority admission plugin keeping priority and preemptionPolicy).

Contract: `check_pod_update(old, new) -> list[(field, detail, reason)]` (empty: allowed) after defaulting `new`'s
spec in place. Allowed: metadata, container and init-container images (not emptied), activeDeadlineSeconds (set
or lowered), tolerations (additions; tolerationSeconds may change), schedulingGates (removals),
terminationGracePeriodSeconds to 1 from negative, nodeSelector additions while gated. Anything else in spec is
422 "Forbidden: pod updates may not change fields other than ..." with the differing fields. Comparison is
semantic as Go's: absent, null, empty and false/"" are equal.
More: docs/modules.md#simpod_updatepy.
"""

from __future__ import annotations

import copy
from typing import Any

FORBIDDEN_TEXT = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
    "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_MAX_INT32 = 2**31 - 1

Problem = tuple[str, str, str]


def _semantic(value: Any) -> Any:
    """Drop what Go's semantic equality cannot tell from absent: null, [], {}, "", false."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {}, "", False)}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def default_spec(spec: dict[str, Any]) -> None:
    """The defaults the API server applies to a decoded pod spec (those the emulator applies on create)."""
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")


def _containers(new: list[Any], old: list[Any], path: str) -> tuple[list[Problem], bool]:
    if len(new) != len(old):
        return [(path, "Forbidden: pod updates may not add or remove containers", "FieldValueForbidden")], True
    problems = []
    for i, c in enumerate(new):
        if not isinstance(c, dict) or not c.get("image"):
            problems.append((f"{path}[{i}].image", "Required value", "FieldValueRequired"))
    return problems, False


def _tolerations(new: list[Any], old: list[Any]) -> list[Problem]:
    for prev in old:
        if not isinstance(prev, dict):
            continue
        found = False
        for cand in new:
            if not isinstance(cand, dict):
                continue
            clone = dict(prev)
            clone["tolerationSeconds"] = cand.get("tolerationSeconds")
            if _semantic(clone) == _semantic(cand):
                found = True
                break
        if not found:
            return [
                (
                    "spec.tolerations",
                    "Forbidden: existing toleration can not be modified except its tolerationSeconds",
                    "FieldValueForbidden",
                )
            ]
    return []


def _scheduling_gates(new: list[Any], old: list[Any]) -> list[Problem]:
    old_names = {g.get("name") for g in old if isinstance(g, dict)}
    problems = []
    for i, gate in enumerate(new):
        name = gate.get("name") if isinstance(gate, dict) else gate
        if name not in old_names:
            problems.append(
                (
                    f"spec.schedulingGates[{i}].name",
                    f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'",
                    "FieldValueForbidden",
                )
            )
    return problems


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(set(old) | set(new))
    lines = [f"  spec.{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys if old.get(k) != new.get(k)]
    return "\n" + "\n".join(lines) if lines else ""


def check_pod_update(old_pod: dict[str, Any], new_pod: dict[str, Any]) -> list[Problem]:  # noqa: C901 (predates the complexity ceiling)
    old = old_pod.get("spec") or {}
    new = new_pod.get("spec")
    if not isinstance(new, dict):
        return [("spec", "Required value", "FieldValueRequired")]
    default_spec(new)
    for key in ("priority", "preemptionPolicy"):  # Priority admission keeps them on update
        if key in old:
            new[key] = old[key]
        else:
            new.pop(key, None)
    problems: list[Problem] = []
    for key, path in (("containers", "spec.containers"), ("initContainers", "spec.initContainers")):
        found, stop = _containers(new.get(key) or [], old.get(key) or [], path)
        problems += found
        if stop:
            return problems
    deadline = new.get("activeDeadlineSeconds")
    old_deadline = old.get("activeDeadlineSeconds")
    if deadline is not None:
        if not isinstance(deadline, int) or deadline < 0 or deadline > _MAX_INT32:
            return [
                *problems,
                (
                    "spec.activeDeadlineSeconds",
                    f"Invalid value: {deadline!r}: must be between 0 and {_MAX_INT32}, inclusive",
                    "FieldValueInvalid",
                ),
            ]
        if isinstance(old_deadline, int) and old_deadline < deadline:
            return [
                *problems,
                (
                    "spec.activeDeadlineSeconds",
                    f"Invalid value: {deadline}: must be less than or equal to previous value",
                    "FieldValueInvalid",
                ),
            ]
    elif old_deadline is not None:
        problems.append(
            (
                "spec.activeDeadlineSeconds",
                'Invalid value: "null": must not update from a positive integer to nil value',
                "FieldValueInvalid",
            )
        )
    problems += _tolerations(new.get("tolerations") or [], old.get("tolerations") or [])
    problems += _scheduling_gates(new.get("schedulingGates") or [], old.get("schedulingGates") or [])
    if _semantic(new) == _semantic(old):
        return problems
    munged = copy.deepcopy(new)
    for key in ("containers", "initContainers"):
        olds = old.get(key) or []
        for i, c in enumerate(munged.get(key) or []):
            if isinstance(c, dict) and i < len(olds) and isinstance(olds[i], dict):
                c["image"] = olds[i].get("image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        if key in old:
            munged[key] = copy.deepcopy(old[key])
        else:
            munged.pop(key, None)
    if old.get("schedulingGates"):  # a gated pod may gain nodeSelector entries (no deletions or mutations)
        new_selector = munged.get("nodeSelector") or {}
        old_selector = old.get("nodeSelector") or {}
        if new_selector != old_selector:
            if any(new_selector.get(k) != v for k, v in old_selector.items()):
                problems.append(
                    (
                        "spec.nodeSelector",
                        (
                            f"Invalid value: {new_selector!r}: only additions to "
                            "spec.nodeSelector are allowed (no mutations or deletions)"
                        ),
                        "FieldValueInvalid",
                    )
                )
            if "nodeSelector" in old:
                munged["nodeSelector"] = copy.deepcopy(old["nodeSelector"])
            else:
                munged.pop("nodeSelector", None)
    old_grace = old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if _semantic(munged) != _semantic(old):
        problems.append(("spec", FORBIDDEN_TEXT + _diff(_semantic(old), _semantic(munged)), "FieldValueForbidden"))
    return problems
