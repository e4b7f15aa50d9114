"""What the emulator knows about one kind of resource it serves: the shared vocabulary of sim/.

Contract: `ResourceType` is immutable and carries everything the REST layer (apiserver.py), discovery and
OpenAPI documents (openapi.py), schema validation (schema.py) and Table output (table.py) need about a kind.
Built-in kinds are listed in `builtin.py`; a CustomResourceDefinition becomes one ResourceType per served
version when it is created, and stops being served when it is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for core/v1
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    # subresources served besides the object itself: "status", "binding", "eviction", "scale"
    subresources: frozenset[str] = frozenset()
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    # OpenAPI v3 schema of the whole object (a CRD's openAPIV3Schema); None: built-in, loosely checked
    schema: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    # a CRD's additionalPrinterColumns (apiextensions.k8s.io/v1 form); empty: NAME and AGE (or kind-specific)
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), hash=False, compare=False)
    categories: tuple[str, ...] = ()
    is_crd: bool = False
    # a CRD version's selectableFields (jsonPaths without the leading dot): field labels it accepts
    selectable_fields: tuple[str, ...] = field(default=(), hash=False, compare=False)

    @property
    def group_version(self) -> str:
        """ "v1" for the core group, else "group/version" (the apiVersion of objects of this type)."""
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def key(self) -> tuple[str, str, str]:
        """(group, version, plural): how the REST layer finds the type from a URL."""
        return (self.group, self.version, self.plural)
