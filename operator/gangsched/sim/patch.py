"""PATCH bodies applied to an object: merge patch (RFC 7386) and JSON patch (RFC 6902); strategic merge patch is
in strategic.py.

Contract: every function takes the current object and the parsed patch and returns a NEW object; the inputs are
never mutated (the store shares objects between readers). Problems raise PatchError with a message naming the
operation/path; a failing JSON-patch `test` op raises PatchTestFailed (a 422 in the API server).
"""

from __future__ import annotations

import copy
from typing import Any


class PatchError(ValueError):
    """A patch that cannot be applied (a 422/400 in the API server)."""


class PatchTestFailed(PatchError):
    """A JSON-patch `test` operation did not hold."""


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


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f"invalid JSON pointer {path!r}: must be empty or start with '/'")
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, path: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r} in path {path!r}")
    i = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if i > limit:
        raise PatchError(f"array index {i} out of range in path {path!r}")
    return i


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict):
            if token not in cur:
                raise PatchError(f"path {path!r} does not exist (missing {token!r})")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, path=path, allow_end=False)]
        else:
            raise PatchError(f"path {path!r} does not exist")
    return cur


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path=path, allow_end=False)]
    raise PatchError(f"path {path!r} does not exist")


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"cannot remove {path!r}: it does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, path=path, allow_end=False))
    raise PatchError(f"cannot remove {path!r}: it does not exist")


def _add(doc: Any, path: str, value: Any, *, replace: bool) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"cannot replace {path!r}: it does not exist")
        parent[last] = value
    elif isinstance(parent, list):
        if replace:
            parent[_index(parent, last, path=path, allow_end=False)] = value
        else:
            parent.insert(_index(parent, last, path=path, allow_end=True), value)
    else:
        raise PatchError(f"cannot add at {path!r}: parent is not an object or array")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be an array of operations")
    doc = copy.deepcopy(target)
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"JSON patch operation {i} must be an object with 'op' and 'path'")
        name, path = op["op"], op["path"]
        if name in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"JSON patch operation {i} ({name} {path!r}) is missing 'value'")
        if name == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]), replace=False)
        elif name == "replace":
            doc = _add(doc, path, copy.deepcopy(op["value"]), replace=True)
        elif name == "remove":
            doc, _ = _remove(doc, path)
        elif name == "test":
            if _get(doc, path) != op["value"]:
                raise PatchTestFailed(f"test operation {i} failed: value at {path!r} is not {op['value']!r}")
        elif name in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise PatchError(f"JSON patch operation {i} ({name}) is missing 'from'")
            if name == "move":
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value, replace=False)
        else:
            raise PatchError(
                f"JSON patch operation {i}: unknown op {name!r}; allowed: add, remove, replace, move, copy, test"
            )
    return doc
