"""PersistentVolumeClaims, PersistentVolumes and a pod's claims, read from the API for the volume filters
(kube-scheduler's VolumeBinding, VolumeZone and VolumeRestrictions plugins).

Contract:
- `pod_claims(obj) -> PodVolumes`: a pod's claims (`persistentVolumeClaim`, and `ephemeral` volumes' `<pod>-<volume>`
  claims) and the inline disk volumes VolumeRestrictions checks (reported, not evaluated); other kinds are not read.
- `claim_from_api(obj) -> ClaimInfo`: fully bound, phase, being deleted, controller owner uid, ReadWriteOncePod.
- `volume_from_api(obj) -> VolumeInfo`: a PersistentVolume's node constraint as one OR-list of node selector terms
  (None: none): its required nodeAffinity ANDed with the zone and region labels VolumeZone reads. An invalid
  nodeAffinity raises InvalidField naming the field.
- `and_terms(a, b)`: two OR-lists ANDed (their cross product); more than MAX_TERMS raises TooManyTerms.
More: docs/modules.md#modelsvolumespy.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gangsched.core import InvalidField, Requirement, Term
from gangsched.models.fields import as_list, as_object
from gangsched.models.selectors import node_selector_term

BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"  # pkg/controller/volume/persistentvolume annBindCompleted
MAX_TERMS: Final = 256  # a pod's terms x its volumes' terms beyond this are not evaluated (the pod is unready)
# VolumeZone's topologyLabels and translateToGALabel (pkg/scheduler/framework/plugins/volumezone/volume_zone.go)
ZONE_LABELS: Final = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region": "topology.kubernetes.io/region",
}
_INLINE_DISKS: Final = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


class TooManyTerms(Exception):
    """ANDing node selector terms would give more than MAX_TERMS terms."""


@dataclass(frozen=True, slots=True)
class PodClaim:
    name: str  # the claim's name in the pod's namespace
    ephemeral: bool  # created for the pod by the ephemeral volume controller
    field: str  # spec.volumes[i].persistentVolumeClaim | spec.volumes[i].ephemeral


@dataclass(frozen=True, slots=True)
class PodVolumes:
    claims: tuple[PodClaim, ...] = ()
    unsupported: tuple[str, ...] = ()  # inline volume kinds gangsched does not evaluate (field paths)


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    volume: str  # spec.volumeName ("" when unset)
    bound: bool  # fully bound: volumeName set and the bind-completed annotation
    phase: str  # status.phase: Pending | Bound | Lost
    deleting: bool  # metadata.deletionTimestamp set
    owner: str  # uid of its controller ownerReference ("" when none)
    read_write_once_pod: bool


@dataclass(frozen=True, slots=True)
class VolumeInfo:
    terms: tuple[Term, ...] | None  # None: any node


def pod_claims(obj: Mapping[str, Any]) -> PodVolumes:
    """The claims and inline disks of a pod's spec.volumes (a bad entry is skipped: the apiserver validated it)."""
    spec = obj.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, Mapping) else None
    if not isinstance(volumes, list) or not volumes:
        return PodVolumes()
    meta = obj.get("metadata")
    pod_name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
    claims: list[PodClaim] = []
    unsupported: list[str] = []
    for i, volume in enumerate(volumes):
        if not isinstance(volume, Mapping):
            continue
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, Mapping):
            name = pvc.get("claimName")
            if isinstance(name, str) and name:
                claims.append(PodClaim(sys.intern(name), False, f"spec.volumes[{i}].persistentVolumeClaim"))
        elif volume.get("ephemeral") is not None:
            name = f"{pod_name}-{volume.get('name') or ''}"
            claims.append(PodClaim(sys.intern(name), True, f"spec.volumes[{i}].ephemeral"))
        else:
            unsupported.extend(f"spec.volumes[{i}].{kind}" for kind in _INLINE_DISKS if volume.get(kind) is not None)
    return PodVolumes(tuple(claims), tuple(unsupported))


def _controller_uid(meta: Mapping[str, Any]) -> str:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return ""


def claim_from_api(obj: Mapping[str, Any]) -> ClaimInfo:
    meta = as_object(obj.get("metadata"), field="metadata")
    spec = as_object(obj.get("spec"), field="spec")
    status = as_object(obj.get("status"), field="status")
    annotations = as_object(meta.get("annotations"), field="metadata.annotations")
    volume = spec.get("volumeName") or ""
    if not isinstance(volume, str):
        raise InvalidField("spec.volumeName", volume, "must be a string")
    modes = as_list(spec.get("accessModes"), field="spec.accessModes")
    return ClaimInfo(
        volume=sys.intern(volume),
        bound=bool(volume) and BIND_COMPLETED in annotations,
        phase=sys.intern(str(status.get("phase") or "Pending")),
        deleting=meta.get("deletionTimestamp") is not None,
        owner=_controller_uid(meta),
        read_write_once_pod="ReadWriteOncePod" in modes,
    )


def _decided_fields(term: Term) -> Term | None:
    """The term as CheckNodeAffinity evaluates it: matchFields against a node without a name (None: it can never
    match)."""
    if not term.fields:
        return term
    for req in term.fields:
        inside = "" in req.values
        if inside != (req.operator == "In"):
            return None
    return Term(term.expressions, ()) if term.expressions else None


def _node_affinity(spec: Mapping[str, Any]) -> tuple[Term, ...] | None:
    affinity = as_object(spec.get("nodeAffinity"), field="spec.nodeAffinity")
    required = affinity.get("required")
    if required is None:
        return None
    where = "spec.nodeAffinity.required.nodeSelectorTerms"
    raw_terms = as_list(as_object(required, field="spec.nodeAffinity.required").get("nodeSelectorTerms"), field=where)
    if not raw_terms:
        raise InvalidField(where, raw_terms, "must have at least one term")
    terms = (_decided_fields(node_selector_term(t, field=f"{where}[{i}]")) for i, t in enumerate(raw_terms))
    return tuple(t for t in terms if t is not None)


def _zone_terms(labels: Mapping[str, Any]) -> tuple[Term, ...] | None:
    """VolumeZone's filter as terms: the node has none of the zone labels, or every zone label of the volume
    matches (its own key, else the GA key of a beta one)."""
    constraints: tuple[Term, ...] | None = None
    for key, ga in ZONE_LABELS.items():
        value = labels.get(key)
        if not isinstance(value, str):
            continue
        zones = tuple(sorted({z.strip() for z in value.split("__") if z.strip()}))  # volumehelpers.LabelZonesToSet
        if not zones:
            continue  # an unreadable label is ignored, as VolumeZone logs and skips it
        options = [Term((Requirement(key, "In", zones),), ())]
        if ga != key:
            options.append(Term((Requirement(key, "DoesNotExist", ()), Requirement(ga, "In", zones)), ()))
        constraints = and_terms(constraints, tuple(options))
    if constraints is None:
        return None
    unlabelled = Term(tuple(Requirement(k, "DoesNotExist", ()) for k in ZONE_LABELS), ())
    return (unlabelled, *constraints)


def volume_from_api(obj: Mapping[str, Any]) -> VolumeInfo:
    meta = as_object(obj.get("metadata"), field="metadata")
    spec = as_object(obj.get("spec"), field="spec")
    labels = as_object(meta.get("labels"), field="metadata.labels")
    return VolumeInfo(and_terms(_node_affinity(spec), _zone_terms(labels)))


def _merge(a: Term, b: Term) -> Term:
    expressions = a.expressions + tuple(r for r in b.expressions if r not in a.expressions)
    fields = a.fields + tuple(r for r in b.fields if r not in a.fields)
    return Term(expressions, fields)


def and_terms(a: tuple[Term, ...] | None, b: tuple[Term, ...] | None) -> tuple[Term, ...] | None:
    """(t1 or t2 ...) and (u1 or u2 ...) = (t1 and u1) or (t1 and u2) or ...; None is "any node"."""
    if a is None:
        return b
    if b is None:
        return a
    left = [t for t in a if t.expressions or t.fields]
    right = [t for t in b if t.expressions or t.fields]
    if len(left) * len(right) > MAX_TERMS:
        raise TooManyTerms(f"{len(left)} x {len(right)} node selector terms")
    out: list[Term] = []
    for t in left:
        for u in right:
            merged = _merge(t, u)
            if merged not in out:
                out.append(merged)
    return tuple(out)
