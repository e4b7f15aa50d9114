"""The allocator's greedy first path gives the depth-first search's first solution (property test).

Oracle: structured/internal/stable/allocator_stable.go `allocateOne`: depth first, devices in pool / slice order,
the first complete assignment is the result. The allocator tries that search's first path without its
bookkeeping when claims have no constraints, alternatives, All or admin access (core/devices/allocator.py
`_greedy`); whenever that path completes it is the search's first solution, so results must be identical with
and without it, and a greedy failure must leave the search its chance (backtracking finds what greedy misses).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.core.devices import (
    Allocator,
    AttrValue,
    CelCache,
    Claim,
    Device,
    DeviceClass,
    DeviceID,
    DeviceRequest,
    ExactRequest,
    Inventory,
    ResourceSlice,
)
from gangsched.core.devices.allocator import _Run

DRIVER = "d.example.com"
SELECTORS = (None, f'device.attributes["{DRIVER}"].size >= 2', f'device.attributes["{DRIVER}"].size < 3')


def _world(sizes: list[int], claims: list[list[tuple[int, int]]], used: list[int]) -> tuple[Any, ...]:
    devices = tuple(Device(f"dev-{i}", {"size": AttrValue("int", s)}) for i, s in enumerate(sizes))
    inv = Inventory([ResourceSlice("s", DRIVER, "p", node_name="n", devices=devices)])
    classes = {"c": DeviceClass("c", (f'device.driver == "{DRIVER}"',))}
    specs = [
        Claim(
            f"claim-{c}",
            tuple(
                DeviceRequest(
                    f"r{r}", ExactRequest(f"r{r}", "c", () if sel == 0 else (SELECTORS[sel] or "true",), count=n)
                )
                for r, (n, sel) in enumerate(reqs)
            ),
        )
        for c, reqs in enumerate(claims)
    ]
    return inv, classes, specs, {DeviceID(DRIVER, "p", f"dev-{i}") for i in used if i < len(sizes)}


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=7),
    claims=st.lists(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2)), min_size=1, max_size=3), max_size=3),
    used=st.lists(st.integers(0, 6), max_size=2),
)
def test_greedy_first_path_equals_the_searchs_first_solution(
    sizes: list[int], claims: list[list[tuple[int, int]]], used: list[int]
) -> None:
    inv, classes, specs, in_use = _world(sizes, claims, used)
    cel = CelCache()
    with_greedy = Allocator(inv, classes, cel).allocate("n", {}, specs, in_use)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_Run, "_greedy", lambda self: False)
        search_only = Allocator(inv, classes, cel).allocate("n", {}, specs, in_use)
    assert with_greedy == search_only
