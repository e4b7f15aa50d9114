"""The emulator's resourceclaim controller, as kube-controller-manager runs it (pkg/controller/resourceclaim), plus
1.37's PodGroup-level claims (DRAWorkloadResourceClaims).

Contract:
- `ResourceClaimController(registry)`; `start()` taps the store and syncs what changed on the event loop;
  `sync_all()` syncs now (tests); `stop()` removes the taps.
- A pod's template claim is created (generateName `<pod>-<claim>-`, owned by the pod) or reused, and recorded in
  its `status.resourceClaimStatuses`; a missing template is a Warning FailedResourceClaimCreation. A claim equal to
  its PodGroup's resolves to the PodGroup's claim (one per template, owned by the PodGroup).
- A bound pod is added to its allocated claim's `reservedFor`; entries of pods gone, replaced or done and of
  PodGroups gone are removed; an unreserved claim loses its allocation, and a generated one of a pod done or
  replaced is deleted. More: docs/modules.md#simdraclaimspy.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from gangsched.sim.disruption import StoreTap
from gangsched.sim.request import RequestContext
from gangsched.sim.store import StorageKey, WatchEvent

log = logging.getLogger(__name__)

PODS: StorageKey = ("", "pods")
CLAIMS: StorageKey = ("resource.k8s.io", "resourceclaims")
TEMPLATES: StorageKey = ("resource.k8s.io", "resourceclaimtemplates")
PODGROUPS: StorageKey = ("scheduling.k8s.io", "podgroups")
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
MAX_RESERVED_FOR = 256
MAX_BASE_LEN = 57  # controller.go: room for "-" and 5 random characters in 63
PODGROUP_API = "scheduling.k8s.io/v1beta1"
Obj = dict[str, Any]
Key = tuple[str, str]


def generate_name(owner: str, claim: str) -> str:
    """handleClaim's generateName: `<owner>-<claim>-`, both cut proportionally when longer than 57."""
    base = f"{owner}-{claim}-"
    if len(base) > MAX_BASE_LEN:
        base = owner[: len(owner) * MAX_BASE_LEN // len(base)] + "-" + claim[: len(claim) * MAX_BASE_LEN // len(base)]
    return base


def is_pod_done(pod: Obj) -> bool:
    """controller.go isPodDone: terminal phase, or deleted before being bound."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _owner(claim: Obj, api_version: str, kind: str) -> tuple[str, str]:
    for ref in _meta(claim).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("apiVersion") == api_version and ref.get("kind") == kind:
            return str(ref.get("name")), str(ref.get("uid"))
    return "", ""


class ResourceClaimController:
    """See module docstring."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.store = registry.store
        self._dirty: dict[tuple[str, str, str], None] = {}  # (kind, namespace, name)
        self._deleted_pods: set[str] = set()  # uids of pods seen deleted (controller.go deletedObjects)
        self._claim_pods: dict[str, set[str]] = {}  # namespace -> names of pods with spec.resourceClaims
        self._pods_by_claim: dict[Key, set[str]] = {}  # (namespace, claim) -> pods naming or recording it
        self._handle: asyncio.Handle | None = None
        self._taps: list[tuple[StorageKey, StoreTap]] = []
        self.syncs = 0
        self._reported: set[tuple[Any, str]] = set()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._taps:
            return
        for key, callback in (
            (PODS, self._on_pod),
            (CLAIMS, self._on_claim),
            (TEMPLATES, self._on_template),
            (PODGROUPS, self._on_podgroup),
        ):
            tap = StoreTap(callback)
            self.store.subscribe(key, tap)
            self._taps.append((key, tap))
        for ns, name in list(self.store.table(CLAIMS)):
            self._mark("claim", ns, name)
        for (ns, name), entry in self.store.table(PODS).items():
            if (entry.obj.get("spec") or {}).get("resourceClaims"):
                self._claim_pods.setdefault(ns, set()).add(name)
                self._mark("pod", ns, name)

    def stop(self) -> None:
        for key, tap in self._taps:
            self.store.unsubscribe(key, tap)
        self._taps.clear()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    # ------------------------------------------------------------------ store events
    def _on_pod(self, event: WatchEvent) -> None:
        pod = event.entry.obj
        if not (pod.get("spec") or {}).get("resourceClaims"):
            return  # the hot path for pods without claims: one dict lookup
        meta = _meta(pod)
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        deleted = event.type == "DELETED"
        used = {str(c["resourceClaimName"]) for c in pod["spec"]["resourceClaims"] if c.get("resourceClaimName")}
        used |= {
            str(st["resourceClaimName"])
            for st in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
            if st.get("resourceClaimName")
        }
        for claim in used:
            pods = self._pods_by_claim.setdefault((ns, claim), set())
            if deleted:
                pods.discard(name)
                if not pods:
                    del self._pods_by_claim[(ns, claim)]
            else:
                pods.add(name)
        if deleted:
            self._deleted_pods.add(str(meta.get("uid")))
            self._claim_pods.get(ns, set()).discard(name)
        else:
            self._claim_pods.setdefault(ns, set()).add(name)
        if deleted or is_pod_done(pod) or (pod.get("spec") or {}).get("nodeName"):
            for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
                if status.get("resourceClaimName"):
                    self._mark("claim", ns, str(status["resourceClaimName"]))
            for claim in pod["spec"]["resourceClaims"]:
                if claim.get("resourceClaimName"):
                    self._mark("claim", ns, str(claim["resourceClaimName"]))
        if not deleted:
            self._mark("pod", ns, name)

    def _on_claim(self, event: WatchEvent) -> None:
        """The claim, and the pods that use it (controller.go podResourceClaimIndex): its owner pod, the pods naming
        it, and those whose status records it."""
        meta = _meta(event.entry.obj)
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        if event.type != "DELETED":
            self._mark("claim", ns, name)
        owner, _ = _owner(event.entry.obj, "v1", "Pod")
        if owner:
            self._mark("pod", ns, owner)
        for pod in list(self._pods_by_claim.get((ns, name), ())):
            self._mark("pod", ns, pod)

    def _on_template(self, event: WatchEvent) -> None:
        ns = str(_meta(event.entry.obj).get("namespace") or "")
        self._mark_pods(ns)
        for (pns, name), entry in self.store.table(PODGROUPS).items():
            if pns == ns and (entry.obj.get("spec") or {}).get("resourceClaims"):
                self._mark("podgroup", ns, name)

    def _on_podgroup(self, event: WatchEvent) -> None:
        meta = _meta(event.entry.obj)
        ns = str(meta.get("namespace") or "")
        if not (event.entry.obj.get("spec") or {}).get("resourceClaims"):
            return  # PodGroups without claims (most, and their frequent status writes) cost nothing here
        if event.type != "DELETED":
            self._mark("podgroup", ns, str(meta.get("name")))
        self._mark_pods(ns)

    def _mark_pods(self, ns: str) -> None:
        for name in list(self._claim_pods.get(ns, ())):
            self._mark("pod", ns, name)

    def _mark(self, kind: str, ns: str, name: str) -> None:
        self._dirty[(kind, ns, name)] = None
        if self._handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (synchronous use): sync_all() runs the work
        self._handle = loop.call_soon(self._run)

    def _run(self) -> None:
        self._handle = None
        self.sync_all()

    def sync_all(self) -> None:
        """Sync every dirty object (syncs may mark more; those run too)."""
        rounds = 0
        while self._dirty and rounds < 20:
            rounds += 1
            dirty, self._dirty = list(self._dirty), {}
            for kind, ns, name in dirty:
                self.syncs += 1
                try:
                    {"pod": self._sync_pod, "claim": self._sync_claim, "podgroup": self._sync_podgroup}[kind](ns, name)
                except Exception as exc:  # an API error: logged, retried on the next change
                    log.warning("resourceclaim controller: sync of %s %s/%s failed: %s", kind, ns, name, exc)
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    # ------------------------------------------------------------------ helpers
    def _type(self, group: str, version: str, plural: str) -> Any:
        return self.registry.resolve(group, version, plural)

    def _ctx(self) -> Any:
        return RequestContext()

    def _get(self, key: StorageKey, ns: str, name: str) -> Obj | None:
        entry = self.store.get(key, ns, name)
        return entry.obj if entry is not None else None

    def _claims_owned_by(self, ns: str, uid: str) -> list[Obj]:
        """Claims with a controller ownerReference to `uid` (the store's owner index, as claimPodOwnerIndex)."""
        out: list[Obj] = []
        for key, (cns, name) in self.store.dependents.get(uid, ()):
            entry = self.store.get(key, cns, name) if key == CLAIMS and cns == ns else None
            if entry is not None and any(
                r.get("uid") == uid and r.get("controller") for r in _meta(entry.obj).get("ownerReferences") or ()
            ):
                out.append(entry.obj)
        return out

    def _ensure_claim(self, owner: Obj, api_version: str, kind: str, claim: Obj, current: str | None) -> str | None:
        """handleClaim: the generated claim's name for one (pod or PodGroup) claim entry, creating it if needed;
        None when its template is missing (a Warning event says so)."""
        meta = _meta(owner)
        ns, uid = str(meta.get("namespace") or ""), str(meta.get("uid"))
        if current:
            existing = self._get(CLAIMS, ns, current)
            if existing is not None and _owner(existing, api_version, kind)[1] == uid:
                return current
        for existing in self._claims_owned_by(ns, uid):
            if (_meta(existing).get("annotations") or {}).get(POD_CLAIM_ANNOTATION) == claim.get("name"):
                return str(_meta(existing)["name"])
        template_name = str(claim.get("resourceClaimTemplateName"))
        template = self._get(TEMPLATES, ns, template_name)
        if template is None:
            self._event(
                owner,
                "FailedResourceClaimCreation",
                f'PodResourceClaim {claim.get("name")}: resource claim template "{template_name}": '
                f'resourceclaimtemplates.resource.k8s.io "{template_name}" not found',
            )
            return None
        template_spec = template.get("spec") or {}
        template_meta = template_spec.get("metadata") or {}
        body = {
            "metadata": {
                "generateName": generate_name(str(meta.get("name")), str(claim.get("name"))),
                "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_ANNOTATION: claim.get("name")},
                "ownerReferences": [
                    {
                        "apiVersion": api_version,
                        "kind": kind,
                        "name": meta.get("name"),
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template_spec.get("spec") or {},
        }
        if template_meta.get("labels"):
            body["metadata"]["labels"] = dict(template_meta["labels"])
        entry = self.registry.create(self._type("resource.k8s.io", "v1", "resourceclaims"), ns, body, self._ctx())
        return str(entry.obj["metadata"]["name"])

    def _write_claim_statuses(self, rtype: Any, obj: Obj, found: dict[str, str]) -> None:
        status = obj.get("status") or {}
        current = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()}
        if all(current.get(k) == v for k, v in found.items()):
            return
        merged = {**current, **found}
        statuses = [{"name": k, "resourceClaimName": v} for k, v in merged.items() if k]
        meta = _meta(obj)
        self.registry.patch(
            rtype,
            str(meta.get("namespace") or ""),
            str(meta.get("name")),
            {"status": {"resourceClaimStatuses": statuses}},
            "application/merge-patch+json",
            self._ctx(),
            subresource="status",
        )

    def _event(self, obj: Obj, reason: str, message: str) -> None:
        meta = _meta(obj)
        if (meta.get("uid"), message) in self._reported:
            return  # once per object and message (client-go's recorder aggregates repeats too)
        self._reported.add((meta.get("uid"), message))
        ns = str(meta.get("namespace") or "default")
        stamp = self.registry.now()
        event = {
            "metadata": {"name": f"{meta.get('name')}.{uuid.uuid4().hex[:16]}", "namespace": ns},
            "involvedObject": {
                "kind": obj.get("kind", ""),
                "apiVersion": obj.get("apiVersion", ""),
                "namespace": ns,
                "name": meta.get("name"),
                "uid": meta.get("uid"),
            },
            "reason": reason,
            "message": message,
            "type": "Warning",
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": "resource_claim"},
            "reportingComponent": "resource_claim",
        }
        try:
            self.registry.create(self._type("", "v1", "events"), ns, event, self._ctx())
        except Exception as exc:  # best effort, as client-go's recorder
            log.debug("resourceclaim controller: recording event %s failed: %s", reason, exc)

    # ------------------------------------------------------------------ syncs
    def _podgroup_claim(self, pod: Obj, claim: Obj) -> tuple[Obj | None, bool]:
        """(the pod's PodGroup, whether `claim` is one of its claims: same name and template)."""
        group_name = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if not group_name:
            return None, False
        group = self._get(PODGROUPS, str(_meta(pod).get("namespace") or ""), str(group_name))
        if group is None:
            return None, False
        wanted = {k: claim.get(k) for k in ("name", "resourceClaimName", "resourceClaimTemplateName")}
        for entry in (group.get("spec") or {}).get("resourceClaims") or ():
            if {k: entry.get(k) for k in wanted} == wanted:
                return group, True
        return group, False

    def _sync_pod(self, ns: str, name: str) -> None:
        pod = self._get(PODS, ns, name)
        if pod is None or _meta(pod).get("deletionTimestamp") or is_pod_done(pod):
            return
        current = {
            s.get("name"): s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        }
        found: dict[str, str] = {}
        for claim in (pod.get("spec") or {}).get("resourceClaims") or ():
            if not claim.get("resourceClaimTemplateName"):
                continue
            group, shared = self._podgroup_claim(pod, claim)
            if shared and group is not None:
                statuses = (group.get("status") or {}).get("resourceClaimStatuses") or ()
                generated = next((s.get("resourceClaimName") for s in statuses if s.get("name") == claim["name"]), None)
                if generated:
                    found[str(claim["name"])] = str(generated)
                continue
            generated = self._ensure_claim(pod, "v1", "Pod", claim, current.get(claim.get("name")))
            if generated is not None:
                found[str(claim["name"])] = generated
        if found:
            self._write_claim_statuses(self._type("", "v1", "pods"), pod, found)
        if (pod.get("spec") or {}).get("nodeName"):
            self._reserve_bound(pod, {**current, **found})

    def _reserve_bound(self, pod: Obj, generated: dict[Any, Any]) -> None:
        """syncPod's tail: an allocated claim of a bound pod, not reserved for it, gets the pod in reservedFor."""
        meta = _meta(pod)
        ns, uid = str(meta.get("namespace") or ""), str(meta.get("uid"))
        for claim in (pod.get("spec") or {}).get("resourceClaims") or ():
            _group, shared = self._podgroup_claim(pod, claim)
            if shared:
                continue  # reserved for the PodGroup, by the scheduler
            name = claim.get("resourceClaimName") or generated.get(claim.get("name"))
            obj = self._get(CLAIMS, ns, str(name)) if name else None
            if obj is None:
                continue
            status = obj.get("status") or {}
            reserved = status.get("reservedFor") or []
            if not status.get("allocation") or any(r.get("uid") == uid for r in reserved):
                continue
            if len(reserved) >= MAX_RESERVED_FOR:
                continue
            entry = {"resource": "pods", "name": meta.get("name"), "uid": uid}
            new_status = {**status, "reservedFor": [*reserved, entry]}
            self._update_status(obj, new_status)

    def _update_status(self, claim: Obj, status: Obj) -> Obj:
        meta = _meta(claim)
        body = {**claim, "status": status}
        entry = self.registry.update(
            self._type("resource.k8s.io", "v1", "resourceclaims"),
            str(meta.get("namespace") or ""),
            str(meta.get("name")),
            body,
            self._ctx(),
            subresource="status",
        )
        result: Obj = entry.obj
        return result

    def _sync_podgroup(self, ns: str, name: str) -> None:
        group = self._get(PODGROUPS, ns, name)
        if group is None or _meta(group).get("deletionTimestamp"):
            return
        current = {
            s.get("name"): s.get("resourceClaimName")
            for s in (group.get("status") or {}).get("resourceClaimStatuses") or ()
        }
        found: dict[str, str] = {}
        for claim in (group.get("spec") or {}).get("resourceClaims") or ():
            if not claim.get("resourceClaimTemplateName"):
                continue
            generated = self._ensure_claim(group, PODGROUP_API, "PodGroup", claim, current.get(claim.get("name")))
            if generated is not None:
                found[str(claim["name"])] = generated
        if found:
            self._write_claim_statuses(self._type("scheduling.k8s.io", "v1beta1", "podgroups"), group, found)

    def _keep(self, ns: str, ref: Obj) -> bool:
        """syncClaim's test of one reservedFor entry."""
        if ref.get("resource") == "pods" and not ref.get("apiGroup"):
            if str(ref.get("uid")) in self._deleted_pods:
                return False
            pod = self._get(PODS, ns, str(ref.get("name")))
            return pod is not None and _meta(pod).get("uid") == ref.get("uid") and not is_pod_done(pod)
        if ref.get("resource") == "podgroups" and ref.get("apiGroup") == "scheduling.k8s.io":
            group = self._get(PODGROUPS, ns, str(ref.get("name")))
            return group is not None and _meta(group).get("uid") == ref.get("uid")
        return True  # other consumers: kept (controller.go returns an error for them)

    def _sync_claim(self, ns: str, name: str) -> None:
        claim = self._get(CLAIMS, ns, name)
        if claim is None:
            return
        status = dict(claim.get("status") or {})
        reserved = status.get("reservedFor") or []
        valid = [r for r in reserved if self._keep(ns, r)]
        meta = _meta(claim)
        has_finalizer = FINALIZER in (meta.get("finalizers") or ())
        if len(valid) < len(reserved) or (has_finalizer and meta.get("deletionTimestamp") and not valid):
            status["reservedFor"] = valid
            if not valid:
                status.pop("reservedFor")
                if has_finalizer:
                    status.pop("allocation", None)
            claim = self._update_status(claim, status)
            meta = _meta(claim)
            if has_finalizer and not (claim.get("status") or {}).get("allocation"):
                body = {**claim, "metadata": {**meta, "finalizers": [f for f in meta["finalizers"] if f != FINALIZER]}}
                claim = self.registry.update(
                    self._type("resource.k8s.io", "v1", "resourceclaims"), ns, name, body, self._ctx()
                ).obj
        if valid:
            return
        pod_name, pod_uid = _owner(claim, "v1", "Pod")
        if not pod_name:
            return
        pod = self._get(PODS, ns, pod_name)
        if pod is not None and (_meta(pod).get("uid") != pod_uid or is_pod_done(pod)):
            rtype = self._type("resource.k8s.io", "v1", "resourceclaims")
            self.registry.delete(rtype, ns, name, self._ctx())
