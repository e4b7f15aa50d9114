"""The structured device allocator: claims' device requests against one node's pools (DRA, stable feature set).

Contract (oracle: structured/internal/stable/allocator_stable.go and allocatortesting/allocator_testing.go):
- `Allocator(inventory, classes, cel, features).allocate(node, labels, claims, in_use)` -> an `AllocationResult`
  per claim, in order, or None when the devices do not fit; `AllocationError` (upstream's words) for claims or
  slices that cannot be allocated as written (unknown class, bad selector, CEL runtime error, too many devices,
  invalid pools and nothing else fits, ...).
- Depth first over claims, requests (`firstAvailable`: subrequests in order) and devices in pool / slice order;
  the first complete assignment wins, as upstream's. Devices in `in_use` (any claim's, other schedulers'
  included) or taken earlier in the call are skipped, but `adminAccess` may share other claims' devices. `All`
  takes every matching device; `matchAttribute`: one value of the attribute across the requests named.
- Accepted devices are kept per (node, class, selectors): a new Allocator when slices, classes or labels change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from gangsched.core.devices.cel import CelCache, CelCompileError, CelRuntimeError
from gangsched.core.devices.model import (
    ALL,
    EXACT_COUNT,
    MAX_DEVICES_PER_CLAIM,
    AllocationError,
    AllocationResult,
    Claim,
    ConfigResult,
    Device,
    DeviceClass,
    DeviceID,
    DeviceResult,
    ExactRequest,
    Features,
    ResourceSlice,
)
from gangsched.core.devices.pools import Inventory, Pool
from gangsched.core.devices.results import MatchAttribute, claim_config, node_selector

DEFAULT_FEATURES = Features()
CLAIM = "\x00claim\x00"  # stands for the claim's key in a selector error kept with a device for every claim


@dataclass(frozen=True, slots=True)
class Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    error: str | None = None  # a selector failed on this device: raised when the search reaches it


@dataclass(slots=True)
class _Req:
    claim: int
    name: str  # "req" or "req/sub"
    parent: str
    sub: str
    cls: DeviceClass
    spec: ExactRequest
    num: int = 0
    cands: list[Candidate] = field(default_factory=list)


class Allocator:
    def __init__(
        self,
        inventory: Inventory,
        classes: Mapping[str, DeviceClass],
        cel: CelCache,
        features: Features = DEFAULT_FEATURES,
    ) -> None:
        self.inventory = inventory
        self.classes = classes
        self.cel = cel
        self.features = features
        self._cands: dict[tuple[str, str, tuple[str | None, ...]], tuple[list[Candidate], list[Candidate]]] = {}
        self._selects: dict[tuple[Any, ...], str | bool] = {}  # (class, selectors, driver, device key) -> result

    def allocate(
        self, node: str, labels: Mapping[str, str], claims: Sequence[Claim], in_use: AbstractSet[DeviceID]
    ) -> list[AllocationResult] | None:
        pools = self.inventory.pools_for(node, labels)
        return _Run(self, node, labels, pools, claims, in_use).run()

    def candidates(self, node: str, labels: Mapping[str, str], req: _Req) -> tuple[list[Candidate], list[Candidate]]:
        """(devices of complete valid pools the class and the request select, every device that `All` takes)."""
        key = (node, req.cls.name, req.spec.selectors)
        out = self._cands.get(key)
        if out is None:
            out = self._cands[key] = self._select(self.inventory.pools_for(node, labels), req)
        return out

    def _select(self, pools: Sequence[Pool], req: _Req) -> tuple[list[Candidate], list[Candidate]]:
        usable: list[Candidate] = []
        every: list[Candidate] = []
        for pool in pools:
            for s in pool.slices:
                for dev in s.devices:
                    key = (req.cls.name, req.spec.selectors, s.driver, dev.cel_key)
                    got = self._selects.get(key)
                    if got is None:
                        try:
                            got = self._selects[key] = self._selected(req, s.driver, dev)
                        except AllocationError as e:
                            got = self._selects[key] = str(e)
                    if got is False:
                        continue
                    c = Candidate(DeviceID(s.driver, s.pool, dev.name), dev, s, got if isinstance(got, str) else None)
                    every.append(c)
                    if not pool.incomplete and pool.invalid is None:
                        usable.append(c)
        return usable, every

    def _selected(self, req: _Req, driver: str, dev: Device) -> bool:
        for i, expr in enumerate(req.cls.selectors):
            if not self._match(expr, driver, dev, f"class {req.cls.name}: selector #{i}"):
                return False
        for i, expr in enumerate(req.spec.selectors):
            if not self._match(expr, driver, dev, f"claim {CLAIM}: selector #{i}"):
                return False
        return True

    def _match(self, expr: str | None, driver: str, dev: Device, where: str) -> bool:
        if expr is None:
            raise AllocationError(f"{where}: CEL expression empty (unsupported selector type?)")
        try:
            return self.cel.matches(expr, driver, dev)
        except CelCompileError as e:
            raise AllocationError(f"{where}: CEL compile error: {e}") from None
        except CelRuntimeError as e:
            raise AllocationError(f"{where}: CEL runtime error: {e}") from None


class _Run:
    """One call's search state."""

    def __init__(
        self,
        alloc: Allocator,
        node: str,
        labels: Mapping[str, str],
        pools: Sequence[Pool],
        claims: Sequence[Claim],
        in_use: AbstractSet[DeviceID],
    ) -> None:
        self.alloc, self.node, self.labels, self.pools, self.claims = alloc, node, labels, pools, claims
        self.in_use = in_use
        self.reqs: list[list[list[_Req]]] = []  # claim -> request -> alternatives (one unless firstAvailable)
        self.chosen: dict[tuple[int, int], int] = {}  # (claim, request) -> alternative chosen
        self.taking: dict[DeviceID, set[int]] = {}  # devices taken in this call -> claims
        self.counts = [0] * len(claims)  # devices per claim so far
        self.results: list[list[tuple[_Req, Candidate]]] = [[] for _ in claims]
        self.positions: list[int] = []  # index in its request's candidates of each device taken by ExactCount
        self.constraints: list[list[MatchAttribute]] = []

    def run(self) -> list[AllocationResult] | None:
        for c, claim in enumerate(self.claims):
            self.constraints.append(self._constraints(claim))
            self.reqs.append([self._alternatives(c, claim, r) for r in range(len(claim.requests))])
            self._check_limit(claim, self.reqs[c])
        if not self._greedy() and not self._one(0, 0, 0):
            if any(p.invalid is not None for p in self.pools):
                raise AllocationError("invalid resource pools were encountered")
            return None
        return [self._result(c, claim) for c, claim in enumerate(self.claims)]

    def _greedy(self) -> bool:
        """The depth-first search's first path, without its bookkeeping, for claims without constraints,
        alternatives, All or admin access: when every request finds its devices in order, that is the search's
        first solution; otherwise the state is left as it was and the search runs."""
        if any(self.constraints) or any(
            len(alts) > 1 or alts[0].spec.mode != EXACT_COUNT or alts[0].spec.admin_access
            for reqs in self.reqs
            for alts in reqs
        ):
            return False
        taken: set[DeviceID] = set()
        picked: list[list[tuple[_Req, Candidate]]] = [[] for _ in self.claims]
        in_use = self.in_use
        for c, reqs in enumerate(self.reqs):
            for (req,) in reqs:
                need = req.num
                if need > MAX_DEVICES_PER_CLAIM:
                    return False
                for cand in req.cands:
                    if not need:
                        break
                    if cand.error is not None:
                        return False  # the search raises it if it gets there
                    if cand.id in in_use or cand.id in taken:
                        continue
                    taken.add(cand.id)
                    picked[c].append((req, cand))
                    need -= 1
                if need:
                    return False
        self.results = picked
        return True

    def _constraints(self, claim: Claim) -> list[MatchAttribute]:
        out = []
        for i, con in enumerate(claim.constraints):
            if con.match_attribute is None:
                raise AllocationError(
                    f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                )
            out.append(MatchAttribute(frozenset(con.requests), con.match_attribute))
        return out

    def _alternatives(self, c: int, claim: Claim, r: int) -> list[_Req]:
        request = claim.requests[r]
        if request.first_available:
            if not self.alloc.features.prioritized_list:
                raise AllocationError(
                    f"claim {claim.key}, request {request.name}: has subrequests, but the DRAPrioritizedList "
                    "feature is disabled"
                )
            return [self._req(c, claim, request.name, sub) for sub in request.first_available]
        if request.exactly is None:
            raise AllocationError(
                f"claim {claim.key}, request {request.name}: missing device class name (unsupported request type?)"
            )
        return [self._req(c, claim, request.name, request.exactly)]

    def _req(self, c: int, claim: Claim, parent: str, spec: ExactRequest) -> _Req:
        sub = spec.name if spec.name != parent else ""
        name = f"{parent}/{sub}" if sub else parent
        where = f"claim {claim.key}, request {name}"
        if not spec.device_class:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        cls = self.alloc.classes.get(spec.device_class)
        if cls is None:
            raise AllocationError(f"{where}: could not retrieve device class {spec.device_class}: not found")
        if spec.admin_access and not self.alloc.features.admin_access:
            raise AllocationError(f"{where}: admin access is requested, but the feature is disabled")
        req = _Req(c, name, parent, sub, cls, spec)
        if spec.mode == EXACT_COUNT:
            req.num = spec.count
            if spec.count <= MAX_DEVICES_PER_CLAIM:  # a subrequest asking for more is never chosen
                req.cands = self.alloc.candidates(self.node, self.labels, req)[0]
        elif spec.mode == ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"{where}: asks for all devices, but resource pool {pool} is currently being updated"
                    )
                if pool.invalid is not None:
                    raise AllocationError(
                        f"{where}: asks for all devices, but resource pool {pool} is currently invalid"
                    )
            req.cands = self.alloc.candidates(self.node, self.labels, req)[1]
            req.num = len(req.cands)
        else:
            raise AllocationError(f"{where}: unsupported count mode {spec.mode}")
        return req

    def _check_limit(self, claim: Claim, reqs: list[list[_Req]]) -> None:
        total = sum(min(alt.num for alt in alts) for alts in reqs)
        if total > MAX_DEVICES_PER_CLAIM:
            raise AllocationError(
                f"claim {claim.key}: number of requested devices {total} exceeds the claim limit of "
                f"{MAX_DEVICES_PER_CLAIM}"
            )

    def _one(self, c: int, r: int, d: int) -> bool:
        while True:
            if c == len(self.claims):
                return True
            if r == len(self.reqs[c]):
                c, r, d = c + 1, 0, 0
                continue
            alts = self.reqs[c][r]
            if len(alts) > 1 and (c, r) not in self.chosen:
                return self._choose(c, r, alts)
            req = alts[self.chosen.get((c, r), 0)]
            if not req.num:
                return False  # All and no device matches (a count of 0 is refused by the API)
            if d == req.num:
                r, d = r + 1, 0
                continue
            if req.spec.mode == ALL:
                return self._take_all(c, r, d, req)
            return self._take_one(c, r, d, req)

    def _choose(self, c: int, r: int, alts: list[_Req]) -> bool:
        rest = sum(min(a.num for a in later) for later in self.reqs[c][r + 1 :])  # what the next requests need
        for i, alt in enumerate(alts):
            if alt.num == 0 or self.counts[c] + alt.num + rest > MAX_DEVICES_PER_CLAIM:
                continue  # All with no device, or more than the claim may hold: the next alternative
            self.chosen[c, r] = i
            if self._one(c, r, 0):
                return True
        self.chosen.pop((c, r), None)
        return False

    def _take_all(self, c: int, r: int, d: int, req: _Req) -> bool:
        undo = self._take(req, req.cands[d], must=True)
        if undo is None:
            return False
        if self._one(c, r, d + 1):
            return True
        self._untake(req, req.cands[d])
        return False

    def _take_one(self, c: int, r: int, d: int, req: _Req) -> bool:
        if req.num > MAX_DEVICES_PER_CLAIM:
            return False
        # devices of one request are combinations, not permutations: continue after the previous one
        start = self.positions[-1] + 1 if d else 0
        cands = req.cands
        for i in range(start, len(cands)):
            cand = cands[i]
            if self._take(req, cand, must=False) is None:
                continue
            self.positions.append(i)
            if self._one(c, r, d + 1):
                return True
            self.positions.pop()
            self._untake(req, cand)
        return False

    def _take(self, req: _Req, cand: Candidate, *, must: bool) -> bool | None:
        if cand.error is not None:
            raise AllocationError(cand.error.replace(CLAIM, self.claims[req.claim].key))
        c = req.claim
        holders = self.taking.get(cand.id)
        if req.spec.admin_access:
            if holders and c in holders:
                return None  # never twice in one claim
        elif cand.id in self.in_use or holders:
            return None
        cons = self.constraints[c]
        for i, con in enumerate(cons):
            if not con.add(req.parent, req.sub, cand.id, cand.device):
                for prev in cons[:i]:
                    prev.remove(req.parent, req.sub)
                if must:
                    raise AllocationError(
                        f"claim {self.claims[c].key}, request {req.name}: cannot add device {cand.id} because a "
                        "claim constraint would not be satisfied"
                    )
                return None
        self.taking.setdefault(cand.id, set()).add(c)
        self.counts[c] += 1
        self.results[c].append((req, cand))
        return True

    def _untake(self, req: _Req, cand: Candidate) -> None:
        c = req.claim
        self.results[c].pop()
        self.counts[c] -= 1
        holders = self.taking[cand.id]
        holders.discard(c)
        if not holders:
            del self.taking[cand.id]
        for con in self.constraints[c]:
            con.remove(req.parent, req.sub)

    def _result(self, c: int, claim: Claim) -> AllocationResult:
        picked = self.results[c]
        devices = tuple(
            DeviceResult(req.name, x.id.driver, x.id.pool, x.id.device, req.spec.admin_access) for req, x in picked
        )
        chosen = [alts[self.chosen.get((c, r), 0)] for r, alts in enumerate(self.reqs[c])]
        config: tuple[ConfigResult, ...] = ()
        if claim.config or any(q.cls.config for q in chosen):
            config = claim_config(claim, [(q.name, q.parent, q.cls) for q in chosen])
        taken = tuple(x.id for req, x in picked if not req.spec.admin_access)
        return AllocationResult(devices, node_selector(self.node, [x.slice for _, x in picked]), config, taken)
