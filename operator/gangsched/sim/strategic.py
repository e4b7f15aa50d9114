"""Strategic merge patch, applied server-side as kube-apiserver applies it, driven by the kind's OpenAPI schema.

Contract:
- `strategic_merge_patch(original, patch, meta)` returns a NEW object (inputs never mutated); problems raise
  `PatchError` (422/400) with upstream's wording.
- `meta` says how lists and maps merge: `SchemaPatchMeta` reads `x-kubernetes-patch-strategy` and
  `x-kubernetes-patch-merge-key` from a schema; `patch_meta_for(group, version, kind)` uses Kubernetes 1.37's
  schemas (sim/validation/schemas.py), else the table `NAME_TABLE_META`.
- Semantics of strategicpatch/patch.go: `$patch`, `$retainKeys`, `$deleteFromPrimitiveList`, `$setElementOrder`,
  merged lists ordered as upstream's mergeSortedSlice.
More: docs/modules.md#simstrategicpy.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from gangsched.sim.patch import PatchError
from gangsched.sim.validation import schemas

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"


@dataclass(frozen=True, slots=True)
class FieldMeta:
    """How one field merges: its own meta (for a list, its elements'), the strategy and the merge key."""

    meta: PatchMeta
    strategy: str = ""  # "" | "merge" | "replace"
    retain_keys: bool = False
    merge_key: str = ""


class PatchMeta(Protocol):
    def field(self, name: str) -> FieldMeta: ...


class _Unknown:
    """A part of the object the schema says nothing about: maps merge, lists are replaced."""

    def field(self, name: str) -> FieldMeta:
        return FieldMeta(UNKNOWN)


UNKNOWN = _Unknown()


def _strategy(text: str) -> tuple[str, bool]:
    """(patch strategy, retainKeys) of an x-kubernetes-patch-strategy value (extractRetainKeysPatchStrategy)."""
    parts = [p for p in text.split(",") if p]
    retain = "retainKeys" in parts
    others = [p for p in parts if p != "retainKeys"]
    if len(others) > 1 or (len(parts) == 2 and not retain):
        raise PatchError(f"unexpected patch strategy: {text}")
    return (others[0] if others else ""), retain


@dataclass(frozen=True)
class SchemaPatchMeta:
    """Patch metadata read from an OpenAPI v2/v3 or JSON schema node, `$ref`s resolved in `definitions`."""

    schema: dict[str, Any]
    definitions: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in node and seen < 32:
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            node = self.definitions.get(name, {})
            seen += 1
        if "allOf" in node and len(node["allOf"]) == 1:
            return {**self._resolve(node["allOf"][0]), **{k: v for k, v in node.items() if k != "allOf"}}
        return node

    def field(self, name: str) -> FieldMeta:
        node = self._resolve(self.schema)
        prop = (node.get("properties") or {}).get(name)
        if prop is None:
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                return FieldMeta(SchemaPatchMeta(extra, self.definitions))
            return FieldMeta(UNKNOWN)
        strategy, retain = _strategy(str(prop.get("x-kubernetes-patch-strategy", "")))
        key = str(prop.get("x-kubernetes-patch-merge-key", ""))
        target = self._resolve(prop)
        if target.get("type") == "array" or "items" in target:
            items = target.get("items")
            child: PatchMeta = SchemaPatchMeta(items, self.definitions) if isinstance(items, dict) else UNKNOWN
        else:
            child = SchemaPatchMeta(prop, self.definitions)
        return FieldMeta(child, strategy, retain, key)


@dataclass(frozen=True)
class NameTableMeta:
    """The fallback: merge keys by field name, the same at every depth (core/v1's common ones)."""

    keys: tuple[tuple[str, str], ...]
    merged_scalars: frozenset[str] = frozenset({"finalizers"})

    def field(self, name: str) -> FieldMeta:
        key = dict(self.keys).get(name, "")
        if key:
            return FieldMeta(self, "merge", False, key)
        if name in self.merged_scalars:
            return FieldMeta(self, "merge")
        return FieldMeta(self)


NAME_TABLE_META = NameTableMeta(
    keys=(
        ("containers", "name"),
        ("initContainers", "name"),
        ("ephemeralContainers", "name"),
        ("env", "name"),
        ("volumes", "name"),
        ("volumeMounts", "mountPath"),
        ("volumeDevices", "devicePath"),
        ("ports", "containerPort"),
        ("conditions", "type"),
        ("imagePullSecrets", "name"),
        ("hostAliases", "ip"),
        ("ownerReferences", "uid"),
        ("topologySpreadConstraints", "topologyKey"),
        ("addresses", "type"),
        ("taints", "key"),
        ("resourceClaims", "name"),
        ("podIPs", "ip"),
        ("containerStatuses", "name"),
        ("initContainerStatuses", "name"),
    )
)


@functools.cache
def patch_meta_for(group: str, version: str, kind: str) -> PatchMeta:
    """The patch metadata of a built-in kind, from Kubernetes' own schema; the name table when unknown."""
    name = schemas.definition_name(group, version, kind)
    if name is None:
        return NAME_TABLE_META
    definitions = schemas.definitions()
    return SchemaPatchMeta(definitions[name], definitions)


# ---------------------------------------------------------------------------------------------- applying


def strategic_merge_patch(
    original: Any, patch: Any, meta: PatchMeta = NAME_TABLE_META, *, private: bool = False
) -> Any:
    """original + patch; `private=True` says original is the caller's own copy, which may then be reused."""
    if not isinstance(patch, dict):
        raise PatchError(f"a strategic merge patch must be a JSON object, got {type(patch).__name__}")
    if not isinstance(original, dict):
        base: dict[str, Any] = {}
    else:
        base = original if private else copy.deepcopy(original)
    return _merge_map(base, copy.deepcopy(patch), meta)


def _merge_map(original: dict[str, Any], patch: dict[str, Any], meta: PatchMeta) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch.pop(DIRECTIVE)
        if directive == "replace":
            return patch
        if directive == "delete":
            return {}
        raise PatchError(f"Unknown patch type: {directive} in map: {patch}")
    _apply_retain_keys(original, patch)
    _apply_set_element_order(original, patch, meta)
    for key, value in patch.items():
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE)
        if is_delete_list:
            key = key[len(DELETE_FROM_PRIMITIVE) :]
            if key not in original:
                continue
        if value is None:
            original.pop(key, None)
            continue
        if key not in original:
            original[key] = value
            continue
        current = original[key]
        if type(current) is not type(value):
            original[key] = value
            continue
        info = meta.field(key)
        if isinstance(value, dict):
            original[key] = value if info.strategy == "replace" else _merge_map(current, value, info.meta)
        elif isinstance(value, list):
            if info.strategy == "merge":
                original[key] = _merge_list(current, value, info, is_delete_list=is_delete_list)
            else:
                original[key] = value
        else:
            original[key] = value
    return original


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    keep = patch.pop(RETAIN_KEYS)
    if not isinstance(keep, list):
        raise PatchError("invalid patch format: the $retainKeys directive must be a list")
    allowed = set(keep)
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE, SET_ELEMENT_ORDER)):
            continue
        if key not in allowed:
            raise PatchError(f"doesn't match $retainKeys list: {key} is in the patch but not in {keep}")
    for key in [k for k in original if k not in allowed]:
        del original[key]


def _ident(item: Any, merge_key: str) -> Any:
    if merge_key and isinstance(item, dict):
        if merge_key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {merge_key}")
        return _hashable(item[merge_key])
    return _hashable(item)


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else (type(value).__name__, value)


def _apply_set_element_order(original: dict[str, Any], patch: dict[str, Any], meta: PatchMeta) -> None:
    for directive in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(directive)
        name = directive[len(SET_ELEMENT_ORDER) :]
        if not isinstance(order, list):
            raise PatchError(f"invalid patch format: {directive} must be a list")
        info = meta.field(name)
        found_original, found_patch = name in original, name in patch
        if (found_original and not isinstance(original[name], list)) or (
            found_patch and not isinstance(patch[name], list)
        ):
            raise PatchError(f"invalid patch format: {name} must be a list to be ordered by {directive}")
        current: list[Any] = original.get(name) or []
        listed: list[Any] = patch.get(name) or []
        _check_order(listed, order, info.merge_key)
        merged: list[Any]
        if found_original and found_patch:
            merged = _merge_list(current, listed, info, is_delete_list=False) if info.strategy == "merge" else listed
        elif found_patch:
            merged = listed
        elif found_original:
            merged = current
        else:
            continue
        wanted = {_ident(item, info.merge_key) for item in order}
        in_order = [x for x in merged if _ident(x, info.merge_key) in wanted]
        server_only = [x for x in merged if _ident(x, info.merge_key) not in wanted]
        original[name] = _normalize_order(in_order, server_only, order, current, info.merge_key)
        patch.pop(name, None)


def _check_order(listed: list[Any], order: list[Any], merge_key: str) -> None:
    """validatePatchWithSetOrderList: the patch's items appear in $setElementOrder, in the same relative order."""
    items = [x for x in listed if not (isinstance(x, dict) and DIRECTIVE in x)]
    i = j = 0
    while i < len(items) and j < len(order):
        if _ident(items[i], merge_key) == _ident(order[j], merge_key):
            i += 1
        j += 1
    if i < len(items):
        raise PatchError(f"The order in patch list:\n{listed}\n doesn't match $setElementOrder list:\n{order}\n")


def _merge_list(original: list[Any], patch: list[Any], info: FieldMeta, *, is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    key = info.merge_key
    if not any(isinstance(x, dict) for x in [*original, *patch]):
        if is_delete_list:
            doomed = {_hashable(x) for x in patch}
            return [x for x in original if _hashable(x) not in doomed]
        merged = _dedupe([*original, *patch])
        key = ""
    else:
        if not key:
            raise PatchError("cannot merge lists without merge key")
        original, patch = _special_elements(list(original), patch, key)
        merged = list(original)
        for item in patch:
            ident = _ident(item, key)
            pos = next(
                (
                    i
                    for i, x in enumerate(merged)
                    if isinstance(x, dict) and x.get(key) is not None and _hashable(x[key]) == ident
                ),
                None,
            )
            if pos is None:
                merged.append(item)
            else:
                merged[pos] = _merge_map(merged[pos], item, info.meta)
    wanted = {_ident(x, key) for x in patch}
    in_patch = [x for x in merged if _ident(x, key) in wanted]
    server_only = [x for x in merged if _ident(x, key) not in wanted]
    return _normalize_order(in_patch, server_only, patch, original, key)


def _special_elements(original: list[Any], patch: list[Any], key: str) -> tuple[list[Any], list[Any]]:
    """$patch elements of a merging list: delete removes one matching entry each, replace keeps only the patch."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"unable to merge {item!r}: the elements of a merging list of maps must be maps")
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            ident = _ident(item, key)
            pos = next((i for i, x in enumerate(original) if _ident(x, key) == ident), None)
            if pos is not None:
                original.pop(pos)
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"Unknown patch type: {directive} in map: {item}")
    if replace:
        return plain, []
    return original, plain


def _dedupe(items: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for item in items:
        ident = _hashable(item)
        if ident not in seen:
            seen.add(ident)
            out.append(item)
    return out


def _normalize_order(
    patch_items: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any], key: str
) -> list[Any]:
    """normalizeElementOrder + mergeSortedSlice: patch items in the patch's order, server-only items in the live
    order, interleaved where the live order places a server-only item before a patch item."""
    patch_rank: dict[Any, int] = {}
    for i, item in enumerate(patch_order):
        patch_rank.setdefault(_ident(item, key), i)
    server_rank: dict[Any, int] = {}
    for i, item in enumerate(server_order):
        if not (isinstance(item, dict) and key and key not in item):
            server_rank.setdefault(_ident(item, key), i)
    left = sorted(server_only, key=lambda x: server_rank.get(_ident(x, key), len(server_rank)))
    right = sorted(patch_items, key=lambda x: patch_rank.get(_ident(x, key), len(patch_rank)))
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li, ri = server_rank.get(_ident(left[i], key)), server_rank.get(_ident(right[j], key))
            if li is not None and ri is not None and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out
