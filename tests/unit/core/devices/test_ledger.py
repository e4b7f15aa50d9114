"""The gang-level device API: a pod's claims against a node, shared claims, and all-or-nothing undo.

Oracle: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go: Filter (an allocated claim's
nodeSelector must match the node; a claim with resourceapi.ResourceClaimReservedForMaxSize = 256 consumers
"is in use by too many consumers"; unallocated claims go through the structured allocator together, devices
allocated by any claim are unavailable), Reserve / Unreserve (what Reserve took is given back on Unreserve: here
the cycle's Workspace.rollback, core/fit/capacity.py).
"""

from __future__ import annotations

import pytest

from gangsched.core.devices import (
    AllocationResult,
    Allocator,
    AttrValue,
    CelCache,
    Claim,
    ClaimState,
    Device,
    DeviceBook,
    DeviceClass,
    DeviceID,
    DeviceRequest,
    DeviceResult,
    ExactRequest,
    Inventory,
    ResourceSlice,
)
from gangsched.core.fit.capacity import Workspace
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.records.records import Requirement, Term

GPU = "gpu.example.com"
CLASS = DeviceClass("gpu", (f'device.driver == "{GPU}"',))


def _node_slice(node: str, count: int, clique: str = "c0") -> ResourceSlice:
    devices = tuple(Device(f"gpu-{i}", {"clique": AttrValue("string", clique)}) for i in range(count))
    return ResourceSlice(f"{node}-gpu", GPU, node, node_name=node, devices=devices)


def _claim(key: str, count: int, *selectors: str) -> Claim:
    return Claim(key, (DeviceRequest("gpus", ExactRequest("gpus", "gpu", selectors, count=count)),))


def _allocator(*slices: ResourceSlice) -> Allocator:
    return Allocator(Inventory(slices), {"gpu": CLASS}, CelCache())


def test_a_pod_fits_when_its_claims_fit_and_taking_them_makes_the_devices_unavailable() -> None:
    alloc = _allocator(_node_slice("n1", 8))
    book = DeviceBook()
    specs = {"ns/a": _claim("ns/a", 8), "ns/b": _claim("ns/b", 1)}
    fit = book.fit(alloc, "n1", {}, ["ns/a"], specs)
    assert fit.fits and len(fit.new["ns/a"].devices) == 8
    book.take(fit)
    second = book.fit(alloc, "n1", {}, ["ns/b"], specs)
    assert not second.fits and second.reason == "cannot allocate all claims"


def test_a_shared_claim_is_allocated_once_and_every_pod_is_a_consumer() -> None:
    """Pods sharing a claim: the first allocates it, the next only adds a consumer (no second allocation)."""
    alloc = _allocator(_node_slice("n1", 8))
    book = DeviceBook()
    specs = {"ns/shared": _claim("ns/shared", 2)}
    first = book.fit(alloc, "n1", {}, ["ns/shared"], specs)
    book.take(first)
    second = book.fit(alloc, "n1", {}, ["ns/shared"], specs)
    assert second.fits and not second.new
    book.take(second)
    assert book.claims["ns/shared"].consumers == 2
    assert len(book.in_use) == 2


def test_a_claim_allocated_for_another_node_does_not_fit_here() -> None:
    local = (Term((), (Requirement("metadata.name", "In", ("n1",)),)),)
    done = AllocationResult((DeviceResult("gpus", GPU, "n1", "gpu-0"),), local)
    book = DeviceBook([DeviceID(GPU, "n1", "gpu-0")], {"ns/c": ClaimState(done, 1)})
    alloc = _allocator(_node_slice("n1", 1), _node_slice("n2", 1))
    assert book.fit(alloc, "n1", {}, ["ns/c"], {}).fits
    other = book.fit(alloc, "n2", {}, ["ns/c"], {})
    assert not other.fits and other.reason == "claim ns/c is allocated for other nodes"


def test_a_claim_with_256_consumers_takes_no_more() -> None:
    done = AllocationResult((DeviceResult("gpus", GPU, "n1", "gpu-0"),), None)
    book = DeviceBook(claims={"ns/c": ClaimState(done, 256)})
    fit = book.fit(_allocator(), "n1", {}, ["ns/c"], {})
    assert not fit.fits and fit.reason == "claim ns/c is reserved for 256 consumers"


def test_devices_allocated_by_other_schedulers_are_respected() -> None:
    book = DeviceBook([DeviceID(GPU, "n1", f"gpu-{i}") for i in range(7)])
    alloc = _allocator(_node_slice("n1", 8))
    fit = book.fit(alloc, "n1", {}, ["ns/a"], {"ns/a": _claim("ns/a", 1)})
    assert fit.fits and fit.new["ns/a"].devices == (DeviceResult("gpus", GPU, "n1", "gpu-7"),)


def test_a_selector_runtime_error_is_the_reason_with_upstreams_words() -> None:
    """allocator_stable.go selectorsMatch: "claim %s: selector #%d: CEL runtime error: %w"; cel-go: "no such key"."""
    alloc = _allocator(_node_slice("n1", 1))
    expr = f'device.attributes["{GPU}"].memory == 80'
    fit = DeviceBook().fit(alloc, "n1", {}, ["ns/a"], {"ns/a": _claim("ns/a", 1, expr)})
    assert not fit.fits and fit.reason == "claim ns/a: selector #0: CEL runtime error: no such key: memory"


def test_workspace_rollback_gives_a_gangs_devices_back_with_its_placement() -> None:
    """All or nothing: what a gang took in a transaction is undone by the cycle's rollback (Unreserve)."""
    ws = Workspace(SchedulerState().store, spread=False)
    alloc = _allocator(_node_slice("n1", 8), _node_slice("n2", 8))
    book = DeviceBook()
    specs = {f"ns/p{i}": _claim(f"ns/p{i}", 8) for i in range(3)}
    mark = ws.begin()
    for i, node in enumerate(("n1", "n2")):
        ws.take_devices(book, book.fit(alloc, node, {}, [f"ns/p{i}"], specs))
    assert len(book.in_use) == 16
    assert not book.fit(alloc, "n1", {}, ["ns/p2"], specs).fits  # the third member does not fit: abandon
    ws.rollback(mark)
    assert not book.in_use and not book.claims
    assert book.fit(alloc, "n1", {}, ["ns/p2"], specs).fits


def test_a_fit_made_before_another_pod_allocated_the_same_claim_is_refused() -> None:
    """Two members sharing an unallocated claim, both checked before either takes: the second fit is stale (the
    claim would be allocated twice); Reserve re-checks in the same way (dynamicresources.go, Reserve)."""
    alloc = _allocator(_node_slice("n1", 8))
    book = DeviceBook()
    specs = {"ns/shared": _claim("ns/shared", 2)}
    a = book.fit(alloc, "n1", {}, ["ns/shared"], specs)
    b = book.fit(alloc, "n1", {}, ["ns/shared"], specs)
    book.take(a)
    with pytest.raises(ValueError, match="stale fit"):
        book.take(b)
    assert len(book.in_use) == 2 and book.claims["ns/shared"].consumers == 1
