"""PATCH bodies applied to an object: merge patch (RFC 7386) and JSON patch (RFC 6902); strategic merge patch is
in strategic.py.

Contract: every function takes the current object and the parsed patch and returns a NEW object; the inputs are
never mutated (the store shares objects between readers). Problems raise PatchError with a message naming the
operation/path; a failing JSON-patch `test` op raises PatchTestFailed (a 422 in the API server), a JSON patch that is
not a list of operation objects PatchDecodeError (a 400). The JSON patch is the `jsonpatch` library's.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer


class PatchError(ValueError):
    """A patch that cannot be applied (a 422/400 in the API server)."""


class PatchTestFailed(PatchError):
    """A JSON-patch `test` operation did not hold."""


class PatchDecodeError(PatchError):
    """A JSON patch body that is not a list of operation objects (400 in the API server)."""


# ---------------------------------------------------------------- merge patch (RFC 7386)


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


# ---------------------------------------------------------------- JSON patch (RFC 6902)


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 through the `jsonpatch` library. As kube-apiserver's jsonPatcher.applyJSPatch
    (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go): a body that does not decode as a list of
    operation objects is PatchDecodeError (400 there, from jsonpatch.DecodePatch); an operation that cannot be
    applied is PatchError (422 there, from patchObj.Apply); a failing `test` is PatchTestFailed."""
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise PatchDecodeError("a JSON patch must be an array of operation objects")
    for i, op in enumerate(ops):
        for member in ("path", "from"):
            if member in op and not isinstance(op[member], str):
                raise PatchError(f"JSON patch operation {i}: {member!r} must be a JSON pointer string")
    try:
        return jsonpatch.JsonPatch(ops).apply(target, in_place=False)
    except jsonpatch.JsonPatchTestFailed as exc:
        raise PatchTestFailed(f"test operation failed: {exc}") from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise PatchError(str(exc)) from None
