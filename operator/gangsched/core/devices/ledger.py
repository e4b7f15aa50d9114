"""Devices and shared claims during a gang transaction: does a pod's set of claims fit a node, and taking it.

Contract (oracle: pkg/scheduler/framework/plugins/dynamicresources: Filter, Reserve, Unreserve; a claim is
allocated once and shared by the pods that reference it, `reservedFor` at most 256):
- `DeviceBook(allocated, claims)`: devices allocated by any claim (other schedulers' included) and the claims
  already allocated (`ClaimState`: allocation, consumers); tentative takes go on top.
- `book.fit(allocator, node, labels, claim_keys, specs)` -> `PodFit`: `fits`, the new allocations (claims not yet
  allocated, allocated together) and `reason` when not: a claim allocated for other nodes, one with 256
  consumers, devices that do not fit, an `AllocationError`'s message. It changes nothing.
- `book.take(fit)` records a fit (new allocations, one more consumer per claim; ValueError for a fit that does
  not fit or went stale) -> `DeviceTake`, reverted by `book.undo(take)`; `Workspace.take_devices`
  (core/fit/capacity.py) does both in the cycle's undo log: a gang's claims are all or nothing with its placement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gangsched.core.devices.allocator import Allocator
from gangsched.core.devices.model import MAX_CONSUMERS, AllocationError, AllocationResult, Claim, DeviceID
from gangsched.core.devices.pools import selector_matches


@dataclass(frozen=True, slots=True)
class ClaimState:
    allocation: AllocationResult
    consumers: int  # entries in status.reservedFor


@dataclass(frozen=True, slots=True)
class PodFit:
    fits: bool
    node: str
    claims: tuple[str, ...]  # every claim of the pod
    new: Mapping[str, AllocationResult] = field(default_factory=dict)  # claim key -> allocation made by this fit
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceTake:
    book: DeviceBook
    fit: PodFit


class DeviceBook:
    def __init__(self, allocated: Iterable[DeviceID] = (), claims: Mapping[str, ClaimState] | None = None) -> None:
        self.in_use: set[DeviceID] = set(allocated)
        self.claims: dict[str, ClaimState] = dict(claims or {})

    def fit(
        self,
        allocator: Allocator,
        node: str,
        labels: Mapping[str, str],
        claim_keys: Sequence[str],
        specs: Mapping[str, Claim],
    ) -> PodFit:
        todo: list[Claim] = []
        for key in claim_keys:
            state = self.claims.get(key)
            if state is None:
                todo.append(specs[key])
                continue
            sel = state.allocation.node_selector
            if sel is not None and not selector_matches(sel, node, labels):
                return PodFit(False, node, tuple(claim_keys), reason=f"claim {key} is allocated for other nodes")
            if state.consumers >= MAX_CONSUMERS:
                return PodFit(
                    False, node, tuple(claim_keys), reason=f"claim {key} is reserved for {MAX_CONSUMERS} consumers"
                )
        if not todo:
            return PodFit(True, node, tuple(claim_keys))
        try:
            results = allocator.allocate(node, labels, todo, self.in_use)
        except AllocationError as e:
            return PodFit(False, node, tuple(claim_keys), reason=str(e))
        if results is None:
            return PodFit(False, node, tuple(claim_keys), reason="cannot allocate all claims")
        return PodFit(True, node, tuple(claim_keys), {c.key: r for c, r in zip(todo, results, strict=True)})

    def take(self, fit: PodFit) -> DeviceTake:
        if not fit.fits:
            raise ValueError(f"taking a pod's claims that do not fit node {fit.node}: {fit.reason}")
        new = fit.new
        stale = [key for key in new if key in self.claims]
        if stale:  # allocated by another take since this fit was made: the fit must be made again
            raise ValueError(f"a stale fit for node {fit.node}: claims {stale} were allocated since")
        for key in fit.claims:
            result = new.get(key)
            if result is not None:
                self.claims[key] = ClaimState(result, 1)
                self.in_use.update(result.taken())
            else:
                state = self.claims[key]
                self.claims[key] = ClaimState(state.allocation, state.consumers + 1)
        return DeviceTake(self, fit)

    def undo(self, take: DeviceTake) -> None:
        fit = take.fit
        new = fit.new
        for key in fit.claims:
            result = new.get(key)
            if result is not None:
                del self.claims[key]
                self.in_use.difference_update(result.taken())
            else:
                state = self.claims[key]
                self.claims[key] = ClaimState(state.allocation, state.consumers - 1)
