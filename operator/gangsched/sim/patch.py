"""PATCH bodies applied to an object: merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch.

Contract: every function takes the current object and the parsed patch and returns a NEW object; the inputs are
never mutated (the store shares objects between readers). Problems raise PatchError with a message naming the
operation/path; a failing JSON-patch `test` op raises PatchTestFailed (a 422 in the API server).

Strategic merge patch is the subset kubectl needs for the built-in kinds served: lists whose field name has a
known merge key (containers by name, env by name, volumeMounts by mountPath, conditions by type, ...) are merged
element by element; `$patch: delete|replace|merge` in maps and list elements, `$deleteFromPrimitiveList/<f>`,
`$setElementOrder/<f>` (used for ordering only), and `$retainKeys` (ignored) are understood; `finalizers` is
merged as a set of strings; every other list is replaced. null deletes a key, as in merge patch.
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
            raise PatchError(f"JSON patch operation {i}: unknown op {name!r}; allowed: add, remove, replace, move, copy, test")
    return doc


# ---------------------------------------------------------------- strategic merge patch

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "conditions": "type",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "addresses": "type",
    "taints": "key",
    "resourceClaims": "name",
    "podIPs": "ip",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
}
SET_LISTS = frozenset({"finalizers"})


def _merge_key(field: str, items: list[Any]) -> str | None:
    key = MERGE_KEYS.get(field)
    if key == "containerPort" and items and isinstance(items[0], dict) and "port" in items[0] and "containerPort" not in items[0]:
        return "port"  # Service ports merge by port
    return key


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    return _smp_map(target if isinstance(target, dict) else {}, patch)


def _smp_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    result = dict(target)
    order: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            if isinstance(value, list):
                order[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [x for x in result[field] if x not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = _smp_map(current if isinstance(current, dict) else {}, value)
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _smp_list(key, result.get(key), value)
        else:
            result[key] = value
    for field, wanted in order.items():
        if isinstance(result.get(field), list):
            result[field] = _apply_order(field, result[field], wanted)
    return result


def _smp_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    cur = current if isinstance(current, list) else []
    if field in SET_LISTS and all(not isinstance(x, dict) for x in patch):
        out = list(cur)
        for x in patch:
            if x not in out:
                out.append(x)
        return out
    key = _merge_key(field, patch or cur)
    if key is None or not all(isinstance(x, dict) for x in patch):
        if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
            return [copy.deepcopy(x) for x in patch if not (isinstance(x, dict) and x.get("$patch"))]
        return copy.deepcopy(patch)
    if any(x.get("$patch") == "replace" for x in patch):
        return [copy.deepcopy(x) for x in patch if not x.get("$patch")]
    out = list(cur)
    for item in patch:
        ident = item.get(key)
        pos = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == ident), None)
        if item.get("$patch") == "delete":
            if pos is not None:
                out.pop(pos)
            continue
        if pos is None:
            out.append({k: copy.deepcopy(v) for k, v in item.items() if k != "$patch"})
        else:
            out[pos] = _smp_map(out[pos], item)
    return out


def _apply_order(field: str, items: list[Any], wanted: list[Any]) -> list[Any]:
    key = _merge_key(field, items)

    def ident(x: Any) -> Any:
        return x.get(key) if key and isinstance(x, dict) else x

    rank = {ident(w): i for i, w in enumerate(wanted)}
    ordered = sorted(range(len(items)), key=lambda i: (rank.get(ident(items[i]), len(rank)), i))
    return [items[i] for i in ordered]
