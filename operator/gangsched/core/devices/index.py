"""The cheap side of DRA placement: what a pod's claims ask for, as counts of "shapes", and each node's free count.

Contract (`Shapes`; the per-node filter before the allocator, which decides): a shape is a request's (device
class, selectors), named as a resource by `Shapes.resource` (`devices.gangsched.io/<class>.<digest>`, noted in
`shapes`, a ClassRegistry's table) so the capacity indexes (core/fit/capacity.py) count it per node; `of`,
`describe` (a sentence), `is_resource`. `demand(claim, shapes)`: what an unallocated claim takes, for `exactly`
requests in ExactCount mode without adminAccess (alternatives, `All` and adminAccess add nothing). `free(allocator,
node, labels, shape, in_use) -> (count, error)`: devices of the node's complete pools selected and held by no
claim, and a selector's runtime error met (upstream's words, `{claim}` for the claim's key). One shape is never
overcounted; shapes that share devices may each count them: CycleSession.take_devices on the chosen node decides.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, MutableMapping
from collections.abc import Set as AbstractSet

from gangsched.core.devices.allocator import CLAIM, Allocator
from gangsched.core.devices.model import EXACT_COUNT, Claim, DeviceID

PREFIX = "devices.gangsched.io/"
Shape = tuple[str, tuple[str | None, ...]]
ShapeTable = MutableMapping[str, Shape]  # resource name -> its shape (a ClassRegistry's `shapes`: only growing)


class Shapes:
    """The functions of this module (the package exports this one name)."""

    @staticmethod
    def resource(device_class: str, selectors: tuple[str | None, ...], shapes: ShapeTable) -> str:
        digest = hashlib.blake2s(repr(selectors).encode(), digest_size=5).hexdigest()
        name = f"{PREFIX}{device_class}.{digest}"
        shapes.setdefault(name, (device_class, selectors))
        return name

    @staticmethod
    def of(resource: str, shapes: Mapping[str, Shape]) -> Shape | None:
        return shapes.get(resource)

    @staticmethod
    def is_resource(resource: str) -> bool:
        return resource.startswith(PREFIX)

    @staticmethod
    def describe(resource: str, count: int, shapes: Mapping[str, Shape]) -> str:
        """`8 x gpu.nvidia.com with <selector>`: a device demand as a sentence."""
        shape = shapes.get(resource)
        if shape is None:
            return f"{count} x {resource}"
        cls, selectors = shape
        shown = " && ".join(s for s in selectors if s)
        return f"{count} x {cls}" + (f" with {shown}" if shown else "")

    @staticmethod
    def demand(claim: Claim, shapes: ShapeTable) -> dict[str, int]:
        out: dict[str, int] = {}
        for request in claim.requests:
            spec = request.exactly
            if spec is None or request.first_available or spec.mode != EXACT_COUNT or spec.admin_access:
                continue
            name = Shapes.resource(spec.device_class, spec.selectors, shapes)
            out[name] = out.get(name, 0) + spec.count
        return out

    @staticmethod
    def free(
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
