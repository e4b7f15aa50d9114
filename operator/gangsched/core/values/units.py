"""Scheduling units and their keys: a gang, or a pod scheduled alone (no gang).

Contract: `UnitKey(kind, key)` is the typed key of a unit in the queue and in the Plan's bookkeeping fields;
`kind` is "gang" (key "namespace/name" of the gang) or "pod" (key "namespace/name" of the pod).
`UnitKey.gang(k)` / `UnitKey.pod(k)` build them.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

UnitKind = Literal["gang", "pod"]


class UnitKey(NamedTuple):
    kind: UnitKind
    key: str

    @classmethod
    def gang(cls, gang_key: str) -> UnitKey:
        return cls("gang", gang_key)

    @classmethod
    def pod(cls, pod_key: str) -> UnitKey:
        return cls("pod", pod_key)

    @property
    def is_pod(self) -> bool:
        return self.kind == "pod"

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"
