"""The volume side of the cluster cache: PVCs and PVs, and what they mean for the pods of ours that use them
(kube-scheduler's VolumeBinding, VolumeZone, VolumeRestrictions, for claims already bound: gangsched binds and
provisions no volume).

Contract (`VolumeBook`, owned by state/cache.py; no I/O):
- `on_claim(kind, obj)` / `on_volume(kind, obj)`: the keys of the pods whose records may change, plus for an
  unreadable PV the message to report; kept: `ClaimInfo` per claim, a node constraint per volume.
- `resolve(record, obj)`, `refresh(record)`, `forget(key)`: a pod's record with its volumes applied: every fully
  bound claim's volume terms ANDed into the required node affinity; a claim missing, unbound, Lost, being deleted,
  with its volume not found, not owned by its pod, or too many terms makes the pod unready (`unready_reasons`).
  ReadWriteOncePod is placed without that check and reported in `unsupported`. More: docs/modules.md#statevolumespy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.core import ClassRegistry, InvalidField, PodRecord, SchedulingClass
from gangsched.models.volumes import (
    MAX_TERMS,
    ClaimInfo,
    PodVolumes,
    TooManyTerms,
    VolumeInfo,
    and_terms,
    claim_from_api,
    pod_claims,
    volume_from_api,
)


@dataclass(frozen=True, slots=True)
class _PodBase:
    """A pod's record parts before its volumes were applied, and its claims."""

    volumes: PodVolumes
    sclass: SchedulingClass
    unsupported: tuple[str, ...]
    unready: bool


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


class VolumeBook:
    def __init__(self, *, classes: ClassRegistry) -> None:
        self.classes = classes  # the registry our pods' classes are interned in (the SchedulerState's)
        self.claims: dict[str, ClaimInfo] = {}  # "namespace/name" -> what the claim says
        self.volumes: dict[str, VolumeInfo | str] = {}  # PV name -> its constraint, or why it cannot be read
        self._pods: dict[str, _PodBase] = {}  # pod key -> its claims and record parts (pods of ours with claims)
        self._claim_pods: dict[str, set[str]] = {}  # claim key -> pod keys using it
        self._volume_claims: dict[str, set[str]] = {}  # PV name -> claim keys naming it in spec.volumeName

    # ------------------------------------------------------------ claims and volumes
    def on_claim(self, kind: str | None, obj: Mapping[str, Any]) -> set[str]:
        namespace, name = _key(obj)
        key = f"{namespace}/{name}"
        old = self.claims.get(key)
        new: ClaimInfo | None = None
        if kind != "DELETED":
            try:
                new = claim_from_api(obj)
            except InvalidField:
                new = None  # the apiserver validates claims: an unreadable one counts as absent
        if new == old:
            return set()
        if old is not None and old.volume:
            self._unlink(old.volume, key)
        if new is None:
            self.claims.pop(key, None)
        else:
            self.claims[key] = new
            if new.volume:
                self._volume_claims.setdefault(new.volume, set()).add(key)
        return set(self._claim_pods.get(key, ()))

    def _unlink(self, volume: str, claim: str) -> None:
        claims = self._volume_claims.get(volume)
        if claims is not None:
            claims.discard(claim)
            if not claims:
                del self._volume_claims[volume]

    def on_volume(self, kind: str | None, obj: Mapping[str, Any]) -> tuple[set[str], str | None]:
        name = _key(obj)[1]
        new: VolumeInfo | str | None = None
        error = None
        if kind != "DELETED":
            try:
                new = volume_from_api(obj)
            except (InvalidField, TooManyTerms) as exc:
                error = str(exc) if isinstance(exc, InvalidField) else f"nodeAffinity and zone labels: {exc}"
                new = f"persistentvolume {name!r} cannot be read ({error})"
        if new == self.volumes.get(name):
            return set(), None
        if new is None:
            self.volumes.pop(name, None)
        else:
            self.volumes[name] = new
        pods: set[str] = set()
        for claim in self._volume_claims.get(name, ()):
            pods.update(self._claim_pods.get(claim, ()))
        return pods, error

    # -------------------------------------------------------------------- pods
    def resolve(self, record: PodRecord, obj: Mapping[str, Any]) -> PodRecord:
        """The record of a freshly parsed pod with its volumes applied (see the module docstring)."""
        key = record.key
        volumes = pod_claims(obj) if record.ours else PodVolumes()
        if not volumes.claims and not volumes.unsupported:
            self.forget(key)
            return record
        base = _PodBase(volumes, record.sclass, record.unsupported, record.unready)
        old = self._pods.get(key)
        if old is None or old.volumes.claims != volumes.claims:
            self.forget(key)
            for claim in volumes.claims:
                self._claim_pods.setdefault(f"{record.namespace}/{claim.name}", set()).add(key)
        self._pods[key] = base
        return self._apply(record, base)

    def refresh(self, record: PodRecord) -> PodRecord:
        """A cached record re-derived after a claim or volume changed (unchanged when the pod uses no claim)."""
        base = self._pods.get(record.key)
        return record if base is None else self._apply(record, base)

    def forget(self, key: str) -> None:
        base = self._pods.pop(key, None)
        if base is None:
            return
        namespace = key.partition("/")[0]
        for claim in base.volumes.claims:
            claim_key = f"{namespace}/{claim.name}"
            pods = self._claim_pods.get(claim_key)
            if pods is not None:
                pods.discard(key)
                if not pods:
                    del self._claim_pods[claim_key]

    def sizes(self) -> dict[str, int]:
        return {"claims": len(self.claims), "volumes": len(self.volumes), "pods": len(self._pods)}

    def _apply(self, record: PodRecord, base: _PodBase) -> PodRecord:
        unsupported = list(base.unsupported) + list(base.volumes.unsupported)
        reasons: list[str] = []
        required = base.sclass.required
        for claim in base.volumes.claims:
            info = self.claims.get(f"{record.namespace}/{claim.name}")
            problem = self._claim_problem(record, claim.name, claim.ephemeral, info)
            if problem is not None:
                reasons.append(problem)
                continue
            assert info is not None
            if info.read_write_once_pod:
                unsupported.append(f"{claim.field} (ReadWriteOncePod claim {claim.name})")
            volume = self.volumes.get(info.volume)
            if isinstance(volume, VolumeInfo):
                try:
                    required = and_terms(required, volume.terms)
                except TooManyTerms:
                    reasons.append(
                        f"unsupported: the node affinity of the pod and of persistentvolume {info.volume!r} combine"
                        f" into more than {MAX_TERMS} node selector terms"
                    )
        sclass = base.sclass if required is base.sclass.required else self.classes.with_required(base.sclass, required)
        return dataclasses.replace(
            record,
            sclass=sclass,
            unsupported=tuple(unsupported),
            unready=base.unready or bool(reasons),
            unready_reasons=tuple(reasons),
        )

    def _claim_problem(self, pod: PodRecord, name: str, ephemeral: bool, info: ClaimInfo | None) -> str | None:
        """Why the pod cannot be placed for this claim (kube-scheduler's VolumeBinding PreFilter wording), or
        None."""
        if info is None:
            if ephemeral:
                return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
            return f'persistentvolumeclaim "{name}" not found'
        if info.phase == "Lost":
            return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{info.volume}"'
        if info.deleting:
            return f'persistentvolumeclaim "{name}" is being deleted'
        if ephemeral and info.owner != pod.uid:
            return f"PVC {pod.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
        if not info.bound:
            return (
                f'unsupported: persistentvolumeclaim "{name}" is not bound (gangsched binds no volume:'
                " WaitForFirstConsumer binding is not supported; the pod waits until the claim is bound)"
            )
        volume = self.volumes.get(info.volume)
        if volume is None:
            return f'persistentvolumeclaim "{name}" is bound to persistentvolume "{info.volume}", which was not found'
        if isinstance(volume, str):
            return volume
        return None
