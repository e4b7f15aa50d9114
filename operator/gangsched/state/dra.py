"""The DRA side of the cluster cache: ResourceSlices, DeviceClasses, ResourceClaims, and our pods' claims.

Contract (`DraBook`, owned by state/cache.py; no I/O; details in docs/devices.md): `on_slice` / `on_class` /
`on_claim(kind, obj)` take events. `rebase(record, obj | None)` remembers a pod's claims and returns its record with
the demand of the claims it owns added to its class (core/devices/index.py), a shared claim's (not owned) once, by
its first unfinished consumer, or, allocated, its node selector ANDed into the required node affinity (the
DynamicResources Filter), held with upstream's words while a claim is missing, deleted, not owned, or its selector
fails; `refresh(key)`, `forget(key)`; `errors_moved`: pods to re-derive at the next flush. `flush(nodes)` recounts
free devices per shape (`node_extra`); `state()`: the cycle's `DeviceState`. `assume_fit(fit)` / `unassume(key)`;
`consumer(claim, pod)`: the reservedFor entry. `claim_domain(gang)`: the node label key by which the multi-node
pools serving its PodGroup's claim select their nodes (the gang's domain: KEP-5732's DRA constraint), or None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.core import ClassRegistry, NodeRecord, PodRecord
from gangsched.core.devices import (
    AllocationResult,
    Allocator,
    CelCache,
    Claim,
    ClaimState,
    DeviceClass,
    DeviceID,
    DeviceState,
    Inventory,
    PodFit,
    ResourceSlice,
    Shapes,
)
from gangsched.models.dra import ClaimInfo, claim_from_api, device_class_from_api, slice_from_api
from gangsched.models.volumes import MAX_TERMS, TooManyTerms, and_terms


@dataclass(frozen=True, slots=True)
class _Claim:
    info: ClaimInfo
    owner_uids: frozenset[str]  # metadata.ownerReferences uids (a pod's template claim names it)
    podgroup: tuple[str, str] | None  # (name, uid) of the PodGroup (scheduling.k8s.io) owning it: a PodGroup claim
    deleting: bool
    reserved_for: tuple[str, ...]  # uids in status.reservedFor


@dataclass(slots=True)
class _Pod:
    base: PodRecord
    refs: tuple[tuple[str, str | None], ...]  # (pod claim name, claim key or None: not created yet)
    made: frozenset[str]  # the claim keys made from a template for the pod (it, or its PodGroup, must own them)
    group: str | None = None  # spec.schedulingGroup.podGroupName (its PodGroup's claims are shared by the group)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def pod_claim_refs(namespace: str, obj: Mapping[str, Any]) -> tuple[tuple[str, str | None], ...]:
    """Each spec.resourceClaims entry: (its name, "namespace/claim" or None while its template's claim is not
    made yet); an entry whose status says no claim is needed (resourceClaimName unset) is left out."""
    return tuple((name, key) for name, key, _made in _refs(namespace, obj))


def _refs(namespace: str, obj: Mapping[str, Any]) -> list[tuple[str, str | None, bool]]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    made = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in status.get("resourceClaimStatuses") or ()
        if isinstance(s, Mapping)
    }
    out: list[tuple[str, str | None, bool]] = []
    for ref in spec.get("resourceClaims") or ():
        if not isinstance(ref, Mapping):
            continue
        name = str(ref.get("name", ""))
        if ref.get("resourceClaimName"):
            out.append((name, f"{namespace}/{ref['resourceClaimName']}", False))
        elif name in made:
            if made[name]:
                out.append((name, f"{namespace}/{made[name]}", True))
        else:
            out.append((name, None, True))
    return out


class DraBook:
    def __init__(self, *, classes: ClassRegistry) -> None:
        self.registry = classes  # where our pods' classes are interned (the SchedulerState's; `classes`: DeviceClasses)
        self.slices: dict[str, ResourceSlice] = {}
        self.classes: dict[str, DeviceClass] = {}
        self.claims: dict[str, _Claim] = {}
        self.pods: dict[str, _Pod] = {}
        self.users: dict[str, set[str]] = {}  # claim key -> pods of ours referencing it
        self.assumed: dict[str, tuple[AllocationResult, int]] = {}  # claim key -> (allocation, consumers) we wrote
        self.cel = CelCache()
        self._allocator: Allocator | None = None
        self._state: DeviceState | None = None
        self._extra: dict[str, dict[str, int]] = {}  # node -> device resources last added to its allocatable
        self.shape_errors: dict[str, str] = {}  # device resource -> a selector's runtime error (`{claim}` in it)
        self.errors_moved: set[str] = set()  # pods whose claims' selector errors moved at the last flush
        self._last: tuple[Allocator, frozenset[str], frozenset[DeviceID], frozenset[str]] | None = None
        self._pools: tuple[Allocator, dict[tuple[str, str], set[str]]] | None = None
        self._carriers: dict[str, str] = {}  # unallocated shared claim -> the pod whose requests count its devices

    # ------------------------------------------------------------------ objects
    def on_slice(self, kind: str | None, obj: Mapping[str, Any]) -> str | None:
        name = str(_meta(obj).get("name", ""))
        self._moved(inventory=True)
        if kind == "DELETED":
            self.slices.pop(name, None)
            return None
        parsed = slice_from_api(obj)
        self.slices[name] = parsed.value
        return _unsupported(parsed.unsupported)

    def on_class(self, kind: str | None, obj: Mapping[str, Any]) -> str | None:
        name = str(_meta(obj).get("name", ""))
        self._moved(inventory=True)
        if kind == "DELETED":
            self.classes.pop(name, None)
            return None
        parsed = device_class_from_api(obj)
        self.classes[name] = parsed.value
        return _unsupported(parsed.unsupported)

    def on_claim(self, kind: str | None, obj: Mapping[str, Any]) -> tuple[set[str], str | None]:
        meta = _meta(obj)
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
        self._moved(inventory=False)
        pods = set(self.users.get(key, ()))
        if kind == "DELETED":
            self.claims.pop(key, None)
            self.assumed.pop(key, None)
            return pods, None
        parsed = claim_from_api(obj)
        status = obj.get("status") or {}
        reserved = tuple(str(r.get("uid", "")) for r in status.get("reservedFor") or () if isinstance(r, Mapping))
        refs = [o for o in meta.get("ownerReferences") or () if isinstance(o, Mapping)]
        owners = frozenset(str(o.get("uid", "")) for o in refs)
        group = next(
            (
                (str(o.get("name", "")), str(o.get("uid", "")))
                for o in refs
                if o.get("kind") == "PodGroup" and str(o.get("apiVersion", "")).startswith("scheduling.k8s.io/")
            ),
            None,
        )
        self.claims[key] = _Claim(parsed.value, owners, group, meta.get("deletionTimestamp") is not None, reserved)
        if parsed.value.allocation is not None or key not in self.assumed:
            self.assumed.pop(key, None)  # (what we wrote is now seen, or was never written)
        return pods, _unsupported(parsed.unsupported)

    def assume(self, key: str, allocation: AllocationResult, consumers: int) -> None:
        self.assumed[key] = (allocation, consumers)
        self._moved(inventory=False)
        self.errors_moved |= self.users.get(key, set())  # (a shared claim now pins its consumers)

    def assume_fit(self, fit: PodFit) -> None:
        """A pod's claims as its fit allocated or shares them (one more consumer each), until seen."""
        allocated = self._allocations()
        for key in fit.claims:
            new = fit.new.get(key)
            if new is not None:
                self.assume(key, new, 1)
            elif (had := allocated.get(key)) is not None:
                self.assume(key, had.allocation, had.consumers + 1)

    def unassume(self, key: str) -> None:
        if self.assumed.pop(key, None) is not None:
            self._moved(inventory=False)
            self.errors_moved |= self.users.get(key, set())

    def consumer(self, claim_key: str, pod_key: str, pod_uid: str) -> dict[str, Any]:
        """Whom a pod's use of the claim reserves it for: the PodGroup for a PodGroup's claim (as 1.37 does), else
        the pod (status.reservedFor entries)."""
        entry = self.claims.get(claim_key)
        if entry is not None and entry.podgroup is not None:
            name, uid = entry.podgroup
            return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": name, "uid": uid}
        return {"resource": "pods", "name": pod_key.partition("/")[2], "uid": pod_uid}

    def nodes_moved(self) -> None:
        self._moved(inventory=True)

    def _moved(self, *, inventory: bool) -> None:
        self._state = None
        if inventory:
            self._allocator = None

    # --------------------------------------------------------------------- pods
    def rebase(self, record: PodRecord, obj: Mapping[str, Any] | None) -> PodRecord:
        key = record.key
        if obj is not None:
            found = _refs(record.namespace, obj) if record.ours else []
            refs = tuple((name, claim) for name, claim, _ in found)
            made = frozenset(claim for _, claim, template in found if template and claim is not None)
            group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
            group = str(group) if group else None
        else:
            old = self.pods.get(key)
            refs, made, group = (old.refs, old.made, old.group) if old is not None else ((), frozenset(), None)
        if not refs:
            self.forget(key)
            return record
        old = self.pods.get(key)
        self._unlink(key)
        self.pods[key] = _Pod(record, refs, made, group)
        for _, claim in refs:
            if claim is not None:
                self.users.setdefault(claim, set()).add(key)
        self._state = None
        self._recarry(key, old)
        return self._apply(key)

    def refresh(self, key: str) -> PodRecord | None:
        return self._apply(key) if key in self.pods else None

    def forget(self, key: str) -> None:
        old = self.pods.get(key)
        if old is not None:
            self._unlink(key)
            del self.pods[key]
            self._state = None
            self._recarry(key, old)

    def _carrier(self, claim_key: str) -> str | None:
        """The consumer whose requests count an unallocated shared claim's devices: the first by key, unfinished."""
        users = [k for k in self.users.get(claim_key, ()) if not self.pods[k].base.terminal]
        return min(users) if users else None

    def _recarry(self, key: str, old: _Pod | None) -> None:
        """Pods to re-derive because the carrier of a claim of `key` (before or now) moved to another pod."""
        now = self.pods.get(key)
        claims = {c for _, c in (old.refs if old is not None else ()) if c} | {
            c for _, c in (now.refs if now is not None else ()) if c
        }
        for claim in claims:
            was = self._carriers.get(claim)
            new = self._carrier(claim)
            if was != new:
                self.errors_moved |= {k for k in (was, new) if k is not None and k != key and k in self.pods}
                if new is None:
                    self._carriers.pop(claim, None)
                else:
                    self._carriers[claim] = new

    def _unlink(self, key: str) -> None:
        old = self.pods.get(key)
        for _, claim in old.refs if old is not None else ():
            users = self.users.get(claim or "")
            if users is not None:
                users.discard(key)
                if not users:
                    del self.users[claim or ""]

    def _apply(self, key: str) -> PodRecord:
        pod = self.pods[key]
        base = pod.base
        reasons: list[str] = []
        waiting = 0  # reasons that only wait for the cluster (a claim not made, or made and not seen yet)
        demand: dict[str, int] = {}
        required = base.sclass.required
        assumed = self.assumed
        for name, claim_key in pod.refs:
            entry = self.claims.get(claim_key) if claim_key is not None else None
            # (upstream's words: dynamicresources.go PreEnqueue, foreachPodResourceClaim)
            if claim_key is None:
                reasons.append(f'pod "{key}": ResourceClaim not created yet (pod claim {name!r}, from its template)')
                waiting += 1
            elif entry is None:
                reasons.append(f'resourceclaim.resource.k8s.io "{claim_key.partition("/")[2]}" not found')
                waiting += claim_key in pod.made  # (made: it exists, its event is on the way)
            elif entry.deleting:
                reasons.append(f'resourceclaim "{claim_key.partition("/")[2]}" is being deleted')
            elif claim_key in pod.made and base.uid not in entry.owner_uids and not _groups(pod, entry):
                reasons.append(f"ResourceClaim {claim_key} was not created for pod {key} (pod is not owner)")
            else:
                asked = Shapes.demand(entry.info.claim, self.registry.shapes)
                failed = [self.shape_errors[r] for r in sorted(asked) if r in self.shape_errors]
                if failed:  # upstream: the pod is unschedulable with the selector's error
                    reasons.append(failed[0].replace("{claim}", claim_key))
                allocation = entry.info.allocation or (assumed[claim_key][0] if claim_key in assumed else None)
                shared = base.uid not in entry.owner_uids
                if shared and allocation is not None:  # Filter: an allocated claim's node selector must match
                    try:
                        required = and_terms(required, allocation.node_selector)
                    except TooManyTerms:
                        reasons.append(
                            f"unsupported: the node affinity of the pod and the node selector of claim {claim_key}'s"
                            f" allocation combine into more than {MAX_TERMS} node selector terms"
                        )
                elif not shared or self._carrier(claim_key) == key:  # its devices counted once, as requests
                    for r, q in asked.items():
                        demand[r] = demand.get(r, 0) + q
        sclass = self.registry.with_requests(base.sclass, demand)
        if required is not sclass.required:
            sclass = self.registry.with_required(sclass, required)
        if not reasons and sclass is base.sclass:
            return base
        return dataclasses.replace(
            base,
            sclass=sclass,
            unready=base.unready or bool(reasons),
            unready_reasons=(*base.unready_reasons, *reasons),
            waits=bool(reasons) and waiting == len(reasons) and not base.unready,
        )

    def _counted(self) -> set[str]:
        """Claims whose devices our pods' requests hold: owned by a pod we count (not finished: a finished pod's
        requests count nowhere, its claim's devices stay taken until the resourceclaim controller releases them)."""
        out: set[str] = set()
        for pod in self.pods.values():
            if pod.base.terminal:
                continue
            for _, claim_key in pod.refs:
                entry = self.claims.get(claim_key or "")
                if entry is not None and pod.base.uid in entry.owner_uids:
                    out.add(claim_key or "")
        return out

    # -------------------------------------------------------------- scheduling
    def allocator(self) -> Allocator:
        if self._allocator is None:
            self._allocator = Allocator(Inventory(self.slices.values()), dict(self.classes), self.cel)
        return self._allocator

    def _allocations(self) -> dict[str, ClaimState]:
        out = {k: ClaimState(c.info.allocation, c.info.consumers) for k, c in self.claims.items() if c.info.allocation}
        for key, (allocation, consumers) in self.assumed.items():
            out[key] = ClaimState(allocation, consumers)
        return out

    def state(self) -> DeviceState:
        if self._state is None:
            allocated = self._allocations()
            in_use = frozenset(d for s in allocated.values() for d in s.allocation.taken())
            specs: dict[str, Claim] = {}
            pod_claims: dict[str, tuple[str, ...]] = {}
            for key, pod in self.pods.items():
                keys = tuple(k for _, k in pod.refs if k is not None)
                if len(keys) != len(pod.refs) or any(k not in self.claims for k in keys):
                    continue  # held: a claim is missing
                pod_claims[key] = keys
                for k in keys:
                    specs[k] = self.claims[k].info.claim
            self._state = DeviceState(self.allocator(), in_use, allocated, specs, pod_claims)
        return self._state

    def flush(self, nodes: Mapping[str, NodeRecord]) -> list[str]:
        """Recount each node's free devices per shape our pods demand; the nodes whose counts moved."""
        state = self.state()
        shapes = {r for pod in self.pods.values() for r in _device_requests(self._apply_demand(pod))}
        counted = self._counted()
        held: set[DeviceID] = set()
        allocated = state.claims
        for key, s in allocated.items():
            if key not in counted:
                held.update(s.allocation.taken())
        allocator = state.allocator
        moved: list[str] = []
        errors: dict[str, str] = {}
        names = self._touched(allocator, shapes, held, nodes)
        full = names is None
        for name in sorted(set(nodes) | set(self._extra)) if names is None else sorted(names):
            node = nodes.get(name)
            extra: dict[str, int] = {}
            if node is not None:
                for r in sorted(shapes):
                    shape = Shapes.of(r, self.registry.shapes)
                    if shape is not None and shape[0] not in self.classes:
                        errors.setdefault(r, f"claim {{claim}}: could not retrieve device class {shape[0]}: not found")
                    elif shape is not None:
                        n, error = Shapes.free(allocator, name, node.labels, shape, held)
                        if n:
                            extra[r] = n
                        if error is not None:
                            errors.setdefault(r, error)
            if extra != self._extra.get(name, {}):
                if extra:
                    self._extra[name] = extra
                else:
                    self._extra.pop(name, None)
                moved.append(name)
        self._last = (allocator, frozenset(shapes), frozenset(held), frozenset(nodes))
        if full and errors != self.shape_errors:
            changed = set(errors.items()) ^ set(self.shape_errors.items())
            self.shape_errors = errors
            shapes_moved = {r for r, _ in changed}
            self.errors_moved |= {k for k, pod in self.pods.items() if shapes_moved & self._apply_demand(pod).keys()}
        return moved

    def _touched(
        self, allocator: Allocator, shapes: set[str], held: set[DeviceID], nodes: Mapping[str, NodeRecord]
    ) -> set[str] | None:
        """The nodes whose counts may have moved since the last flush: those of the pools whose devices were
        taken or given back, when nothing else changed (None: every node)."""
        if self._last is None:
            return None
        was, was_shapes, was_held, was_nodes = self._last
        if was is not allocator or was_shapes != shapes or was_nodes != nodes.keys():
            return None
        pools = {(d.driver, d.pool) for d in was_held.symmetric_difference(held)}
        out: set[str] = set()
        for pool in pools:
            owners = self._pool_nodes(allocator).get(pool)
            if owners is None:  # (a pool of slices shared by several nodes)
                return None
            out |= owners
        return out

    def _pool_nodes(self, allocator: Allocator) -> dict[tuple[str, str], set[str]]:
        if self._pools is None or self._pools[0] is not allocator:
            table: dict[tuple[str, str], set[str]] = {}
            shared: set[tuple[str, str]] = set()
            for s in allocator.inventory.slices:
                if s.node_name is not None:
                    table.setdefault((s.driver, s.pool), set()).add(s.node_name)
                else:
                    shared.add((s.driver, s.pool))
            for pool in shared:
                table.pop(pool, None)
            self._pools = (allocator, table)
        return self._pools[1]

    def _apply_demand(self, pod: _Pod) -> Mapping[str, int]:
        out: dict[str, int] = {}
        for _, claim_key in pod.refs:
            entry = self.claims.get(claim_key or "")
            if entry is not None:
                out.update(Shapes.demand(entry.info.claim, self.registry.shapes))
        return out

    def claim_domain(self, gang_key: str) -> str | None:
        """See module docstring."""
        namespace, _, name = gang_key.partition("/")
        for key, entry in sorted(self.claims.items()):
            if entry.podgroup is None or entry.podgroup[0] != name or key.partition("/")[0] != namespace:
                continue
            for resource in sorted(Shapes.demand(entry.info.claim, self.registry.shapes)):
                label = self._pool_label(resource)
                if label is not None:
                    return label
        return None

    def _pool_label(self, resource: str) -> str | None:
        """The node label by which every pool that has devices of this shape selects its nodes, if one does."""
        shape = Shapes.of(resource, self.registry.shapes)
        if shape is None:
            return None
        allocator = self.allocator()
        found: set[str] = set()
        drivers: set[str] = set()
        for s in allocator.inventory.slices:
            terms = s.node_selector
            if s.node_name is not None or s.all_nodes or terms is None or len(terms) != 1:
                continue
            if terms[0].fields or len(terms[0].expressions) != 1:
                continue
            req = terms[0].expressions[0]
            if req.operator != "In" or len(req.values) != 1:
                continue
            picked = allocator.matching("", {req.key: req.values[0]}, *shape)
            if any(c.id.pool == s.pool and c.id.driver == s.driver for c in picked):
                found.add(req.key)
                drivers.add(s.driver)
        if len(found) != 1:
            return None
        for s in allocator.inventory.slices:  # devices of the shape elsewhere (node-local, everywhere): no domain
            local = s.node_name is not None or s.all_nodes
            if (
                local
                and s.driver in drivers
                and any(c.id.pool == s.pool for c in allocator.matching(s.node_name or "", {}, *shape))
            ):
                return None
        return found.pop()

    def node_extra(self, name: str) -> Mapping[str, int]:
        return self._extra.get(name, {})

    def sizes(self) -> dict[str, int]:
        return {"slices": len(self.slices), "claims": len(self.claims), "pods": len(self.pods)}


def _groups(pod: _Pod, entry: _Claim) -> bool:
    """The claim is the pod's PodGroup's (1.37 DRAWorkloadResourceClaims: shared by the group's pods)."""
    return entry.podgroup is not None and pod.group == entry.podgroup[0]


def _device_requests(demand: Mapping[str, int]) -> Iterable[str]:
    return demand.keys()


def _unsupported(paths: tuple[str, ...]) -> str | None:
    if not paths:
        return None
    return f"fields gangsched does not evaluate (devices they describe are allocated without them): {', '.join(paths)}"
