"""The real OpenAPI definitions of the built-in kinds (Kubernetes v1.37.0), as data from `kubernetes-validate`.

Contract:
- `definitions() -> dict[str, dict]`: every definition (name -> JSON Schema), loaded once from the package's
  `_definitions.json`; empty when the package is not installed (then built-in kinds are not type-checked).
- `definition_name(group, version, kind) -> str | None`: found by the `x-kubernetes-group-version-kind` tag.
- `available() -> bool`; `K8S_VERSION` ("v1.37.0"), `K8S_MINOR` ("37"): the release the emulator serves.
Pure apart from reading the package data once.
More: docs/modules.md#simvalidationschemaspy.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

K8S_VERSION = "v1.37.0"
K8S_MINOR = K8S_VERSION.split(".")[1]


@lru_cache(maxsize=1)
def definitions() -> dict[str, dict[str, Any]]:
    try:
        root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"{K8S_VERSION}-local"
        text = (root / "_definitions.json").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return {}
    defs: dict[str, dict[str, Any]] = json.loads(text).get("$defs") or {}
    return defs


@lru_cache(maxsize=1)
def _gvk_index() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            key = (str(gvk.get("group", "")), str(gvk.get("version", "")), str(gvk.get("kind", "")))
            # the kind's own definition, not a shared one (DeleteOptions, WatchEvent carry many tags)
            if name.rsplit(".", 1)[-1] == key[2]:
                index.setdefault(key, name)
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    return _gvk_index().get((group, version, kind))


def available() -> bool:
    return bool(definitions())


def ref_name(ref: str) -> str:
    """`#/$defs/NAME` (or `/api/_definitions.json#/$defs/NAME`) -> NAME."""
    return ref.rsplit("/", 1)[-1]
