"""Which PodGroup object a gang uses when it exists in two API groups: scheduling.x-k8s.io (gangsched's own,
scheduler-plugins' current group) and scheduling.sigs.k8s.io (the older group Koordinator's manual creates).

Contract: `PodGroupKinds.route(key, kind, obj) -> Routed`: the PodGroup watch events (of either group) the cache
should apply to its one PodGroup per gang (`events`, in order, each (kind, object)), and the conflicts to report
(`conflicts`: (object, message), a Warning on that object). The rule: a gang uses its scheduling.x-k8s.io PodGroup
when there is one; its scheduling.sigs.k8s.io PodGroup otherwise. A scheduling.sigs.k8s.io object set aside that way
gets one Warning (PodGroupConflict) per object (uid), and when it was in use until then (its watch event came first)
and shows a status, it is listed in `cleared` so the status written to it is removed; when the scheduling.x-k8s.io
one is deleted, the set-aside one is applied in its place (the cache sees a new object: its status is written
afresh). Only scheduling.sigs.k8s.io objects are kept here (as received), and only while they exist. A DELETED of
another object (uid) than the one held is dropped: Kopf orders events per uid only (a successor's may come first)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gangsched.models.podgroup import API_VERSION, SIGS_API_VERSION

Event = tuple[str | None, dict[str, Any]]


@dataclass(slots=True)
class Routed:
    events: list[Event] = field(default_factory=list)
    conflicts: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    cleared: list[dict[str, Any]] = field(default_factory=list)  # set aside after being used: clear its status


def _conflict(key: str) -> str:
    return (
        f"PodGroup {key} exists in both {API_VERSION} and {SIGS_API_VERSION}: the {API_VERSION} one is used,"
        " this one is ignored (its status is not written)"
    )


class PodGroupKinds:
    def __init__(self) -> None:
        self._preferred: dict[str, str] = {}  # gang -> uid of its scheduling.x-k8s.io PodGroup
        self._sigs: dict[str, dict[str, Any]] = {}  # gang -> its scheduling.sigs.k8s.io PodGroup, as last received
        self._warned: dict[str, str] = {}  # gang -> uid of the scheduling.sigs.k8s.io object warned about

    def route(self, key: str, kind: str | None, obj: dict[str, Any]) -> Routed:
        if obj.get("apiVersion") == SIGS_API_VERSION:
            return self._sigs_event(key, kind, obj)
        return self._preferred_event(key, kind, obj)

    def _sigs_event(self, key: str, kind: str | None, obj: dict[str, Any]) -> Routed:
        out = Routed()
        if kind == "DELETED":
            held = self._sigs.get(key)
            if held is not None and _uid(held) != _uid(obj):
                return out  # an older object's deletion, seen after the one re-created under its name
            self._sigs.pop(key, None)
            self._warned.pop(key, None)
            if key not in self._preferred:
                out.events.append((kind, obj))
            return out
        self._sigs[key] = obj
        if key in self._preferred:
            self._warn(key, obj, out)
        else:
            out.events.append((kind, obj))
        return out

    def _preferred_event(self, key: str, kind: str | None, obj: dict[str, Any]) -> Routed:
        out = Routed()
        if kind == "DELETED":
            if self._preferred.get(key, _uid(obj)) != _uid(obj):
                return out  # an older object's deletion, seen after the one re-created under its name
            self._preferred.pop(key, None)
            shadowed = self._sigs.get(key)
            out.events.append((kind, obj) if shadowed is None else (None, shadowed))
            self._warned.pop(key, None)
            return out
        was_used = key not in self._preferred  # (its scheduling.sigs.k8s.io PodGroup, if any, was the one in use)
        self._preferred[key] = _uid(obj)
        out.events.append((kind, obj))
        shadowed = self._sigs.get(key)
        if shadowed is not None:
            self._warn(key, shadowed, out)
            if was_used and (shadowed.get("status") or {}).get("phase"):
                out.cleared.append(shadowed)
        return out

    def _warn(self, key: str, obj: dict[str, Any], out: Routed) -> None:
        uid = _uid(obj)
        if self._warned.get(key) != uid:
            self._warned[key] = uid
            out.conflicts.append((obj, _conflict(key)))

    def sizes(self) -> int:
        """How many gangs this remembers anything of (tests check that deleted PodGroups leave nothing)."""
        return len(set(self._preferred) | set(self._sigs) | set(self._warned))


def _uid(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))
