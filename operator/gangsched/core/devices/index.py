"""The cheap side of DRA placement: what a pod's claims ask for, as counts of "shapes", and each node's free count.

Contract (the per-node filter before the allocator; oracle for the semantics: the allocator itself, which decides):
- A shape is a request's (device class, selectors); `shape_resource(class, selectors)` names it as a resource
  (`devices.gangsched.io/<class>.<digest>`), so the capacity machinery (core/fit/capacity.py) counts it per node.
- `claim_demand(claim) -> {resource: count}`: what an unallocated claim takes, for its `exactly` requests in
  ExactCount mode without adminAccess; alternatives (`firstAvailable`), `All` and adminAccess add nothing (the
  allocator alone decides them). `shape_of(resource)` gives (class, selectors) back, `describe` a sentence.
- `free_devices(allocator, node, labels, shape, in_use) -> (int, error)`: devices of the node's complete pools
  that the class and the selectors select and no claim holds; a selector that fails on a device (a CEL runtime
  error, upstream's words with `{claim}` where the claim's key goes) does not count it and is returned.
The counts never overcount a single shape; shapes that share devices may each count them: the allocator's check
on the chosen node (CycleSession.take_devices) is the decision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from gangsched.core.devices.allocator import CLAIM, Allocator
from gangsched.core.devices.model import EXACT_COUNT, Claim, DeviceID

PREFIX = "devices.gangsched.io/"
Shape = tuple[str, tuple[str | None, ...]]
_shapes: dict[str, Shape] = {}  # resource name -> its shape (process-wide, only growing: names are digests)


def shape_resource(device_class: str, selectors: tuple[str | None, ...]) -> str:
    digest = hashlib.blake2s(repr(selectors).encode(), digest_size=5).hexdigest()
    name = f"{PREFIX}{device_class}.{digest}"
    _shapes.setdefault(name, (device_class, selectors))
    return name


def shape_of(resource: str) -> Shape | None:
    return _shapes.get(resource)


def is_device_resource(resource: str) -> bool:
    return resource.startswith(PREFIX)


def describe(resource: str, count: int) -> str:
    """`8 x gpu.nvidia.com with <selector>`: a device demand as a sentence."""
    shape = _shapes.get(resource)
    if shape is None:
        return f"{count} x {resource}"
    cls, selectors = shape
    shown = " && ".join(s for s in selectors if s)
    return f"{count} x {cls}" + (f" with {shown}" if shown else "")


def claim_demand(claim: Claim) -> dict[str, int]:
    out: dict[str, int] = {}
    for request in claim.requests:
        spec = request.exactly
        if spec is None or request.first_available or spec.mode != EXACT_COUNT or spec.admin_access:
            continue
        name = shape_resource(spec.device_class, spec.selectors)
        out[name] = out.get(name, 0) + spec.count
    return out


def free_devices(
    allocator: Allocator, node: str, labels: Mapping[str, str], shape: Shape, in_use: AbstractSet[DeviceID]
) -> tuple[int, str | None]:
    n = 0
    error: str | None = None
    for c in allocator.matching(node, labels, shape[0], shape[1]):
        if c.error is not None:
            error = error or c.error.replace(CLAIM, "{claim}")
        elif c.id not in in_use:
            n += 1
    return n, error
