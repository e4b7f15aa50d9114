"""The parts of an allocation beyond the devices: matchAttribute constraints, the node selector and the config.

Contract (oracle: staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/allocator_stable.go,
`matchAttributeConstraint`, `createNodeSelector` and the config assembly of `Allocate`):
- `MatchAttribute(requests, attribute)`: `add` accepts a device of a request it applies to (every request when
  `requests` is empty; a subrequest also by its parent's name) only when the device has the attribute with the
  same value as the devices added before (a name in the driver's domain may be published without it); `remove`
  undoes the last `add` of that request.
- `node_selector(node, slices)`: the node itself (metadata.name field) when a device is node-local, else the
  requirements of the slices' one-term selectors merged into one term, else None (any node).
- `claim_config(claim, chosen)`: class configs (one entry per class, naming the requests that use it), then the
  claim's configs that name no request or a chosen request / subrequest.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from gangsched.core.devices.model import (
    AllocationError,
    AttrValue,
    Claim,
    ConfigResult,
    Device,
    DeviceClass,
    DeviceID,
    ResourceSlice,
)
from gangsched.core.records.records import Requirement, Term


def lookup(device: Device, driver: str, name: str) -> AttrValue | None:
    """upstream's lookupAttribute: the fully qualified name, or the bare id in the driver's own domain."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    return device.attributes.get(ident)


def _comparable(attr: AttrValue) -> tuple[str, object]:
    if attr.kind == "version":  # semver equality ignores build metadata
        return attr.kind, str(attr.value).split("+", 1)[0]
    return attr.kind, attr.value


@dataclass(slots=True)
class MatchAttribute:
    requests: frozenset[str]
    attribute: str
    value: tuple[str, object] | None = None
    count: int = 0
    stack: list[bool] = field(default_factory=list)

    def applies(self, parent: str, sub: str) -> bool:
        if not self.requests:
            return True
        return parent in self.requests or (bool(sub) and f"{parent}/{sub}" in self.requests)

    def add(self, parent: str, sub: str, dev_id: DeviceID, device: Device) -> bool:
        if not self.applies(parent, sub):
            return True
        attr = lookup(device, dev_id.driver, self.attribute)
        if attr is None:
            return False
        value = _comparable(attr)
        if self.count and value != self.value:
            return False
        if not self.count:
            self.value = value
        self.count += 1
        return True

    def remove(self, parent: str, sub: str) -> None:
        if self.applies(parent, sub):
            self.count -= 1
            if not self.count:
                self.value = None


@functools.lru_cache(maxsize=8192)
def local_selector(node: str) -> tuple[Term, ...]:
    """A node selector for the node alone (its metadata.name field)."""
    return (Term((), (Requirement("metadata.name", "In", (node,)),)),)


def node_selector(node: str, slices: Sequence[ResourceSlice]) -> tuple[Term, ...] | None:
    fields: list[Requirement] = []
    expressions: list[Requirement] = []
    for s in slices:
        if s.node_name is not None:
            return local_selector(node)
        if s.node_selector is None:
            continue
        if len(s.node_selector) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(s.node_selector)} terms")
        for term in s.node_selector:
            fields += [r for r in term.fields if r not in fields]
            expressions += [r for r in term.expressions if r not in expressions]
    if not fields and not expressions:
        return None
    return (Term(tuple(expressions), tuple(fields)),)


def claim_config(claim: Claim, chosen: Sequence[tuple[str, str, DeviceClass]]) -> tuple[ConfigResult, ...]:
    """`chosen`: per request, (name of the request or chosen subrequest, the request's name, its class)."""
    by_class: dict[str, list[str]] = {}
    classes: dict[str, DeviceClass] = {}
    for name, _, cls in chosen:
        if cls.config:
            by_class.setdefault(cls.name, []).append(name)
            classes[cls.name] = cls
    out = [
        ConfigResult("FromClass", tuple(names), cfg)
        for cname, names in by_class.items()
        for cfg in classes[cname].config
    ]
    names = {n for n, _, _ in chosen} | {p for _, p, _ in chosen}
    for cc in claim.config:
        if not cc.requests:
            out.append(ConfigResult("FromClaim", (), cc.config))
            continue
        used = tuple(r for r in cc.requests if r in names)
        if used:
            out.append(ConfigResult("FromClaim", cc.requests, cc.config))
    return tuple(out)
