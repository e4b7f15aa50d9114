"""Grove's PodGang (scheduler.grove.io/v1alpha1), parsed into a gang tree, as KAI scheduler serves it.

Contract (pure, no I/O):
- `API_VERSION`, `PLURAL` ("podgangs"), `DECLARED_BY` ("scheduler.grove.io/PodGang": a member's `declared_by`).
- `parse_podgang(obj, tier_keys=()) -> GroveGang`: `members` maps each referenced pod to its pod group's gang key;
  `specs` the GangSpec of each pod group (quorum `minReplicas`, required pack topology: a tier when its label is in
  `tier_keys`, else a label domain) and of the tree's nodes (root "namespace/<podgang>", one composite per
  `topologyConstraintGroupConfigs` entry); `unsupported`: fields set that gangsched does not honour, as paths.
  Bad input raises InvalidField naming the field. More: docs/modules.md#modelsgrovepy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangsched.core import DomainKey, GangSpec, GangTree, InvalidField, NetworkTopology, TopologyMode, TreeNode
from gangsched.models.fields import shown

API_VERSION = "scheduler.grove.io/v1alpha1"
PLURAL = "podgangs"
DECLARED_BY = "scheduler.grove.io/PodGang"


@dataclass(frozen=True, slots=True)
class GroveGang:
    key: str
    tree: GangTree
    specs: dict[str, GangSpec]
    members: dict[str, str]
    unsupported: tuple[str, ...]


def _required(constraint: Any, path: str, unsupported: list[str]) -> str | None:
    pack = constraint.get("packConstraint") if isinstance(constraint, Mapping) else None
    if not isinstance(pack, Mapping):
        return None
    if pack.get("preferred"):
        unsupported.append(f"{path}.packConstraint.preferred")
    required = pack.get("required")
    return required if isinstance(required, str) and required else None


def _domain(label: str | None, tier_keys: Sequence[str]) -> DomainKey | None:
    if label is None:
        return None
    return DomainKey(tier=list(tier_keys).index(label) + 1) if label in tier_keys else DomainKey(label=label)


def parse_podgang(obj: Mapping[str, Any], tier_keys: Sequence[str] = ()) -> GroveGang:
    """See module docstring."""
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    root = f"{namespace}/{meta.get('name')}"
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    unsupported: list[str] = ["spec.reuseReservationRef"] if spec.get("reuseReservationRef") else []
    groups = spec.get("podgroups") if isinstance(spec.get("podgroups"), list) else []
    assert isinstance(groups, list)
    leaves: dict[str, TreeNode] = {}
    specs: dict[str, GangSpec] = {}
    members: dict[str, str] = {}
    for i, group in enumerate(groups):
        path = f"spec.podgroups[{i}]"
        name = group.get("name") if isinstance(group, Mapping) else None
        if not isinstance(name, str) or not name:
            raise InvalidField(f"{path}.name", shown(name), "the name of the pod group (a PodClique)")
        count = group.get("minReplicas")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise InvalidField(f"{path}.minReplicas", shown(count), "an integer >= 1 (KAI's grove grouper: > 0)")
        label = _required(group.get("topologyConstraint"), f"{path}.topologyConstraint", unsupported)
        key = f"{namespace}/{name}"
        leaves[name] = TreeNode(key, count)
        domain = _domain(label, tier_keys)
        network = NetworkTopology(TopologyMode.HARD, domain.tier) if domain and domain.tier else None
        specs[key] = GangSpec(
            namespace,
            name,
            count,
            network_topology=network,
            source="grove",
            domain=domain if domain and domain.label else None,
        )
        refs = group.get("podReferences") if isinstance(group.get("podReferences"), list) else []
        assert isinstance(refs, list)
        for ref in refs:
            if isinstance(ref, Mapping) and ref.get("name"):
                members[f"{ref.get('namespace') or namespace}/{ref['name']}"] = key
    nodes: list[TreeNode] = []
    children: list[str] = []
    grouped: set[str] = set()
    configs = spec.get("topologyConstraintGroupConfigs")
    for i, config in enumerate(configs if isinstance(configs, list) else []):
        path = f"spec.topologyConstraintGroupConfigs[{i}]"
        names = config.get("podGroupNames") if isinstance(config, Mapping) else None
        if not isinstance(names, list) or not names:
            continue  # (KAI's grouper skips a config without pod groups)
        kids = []
        for name in names:
            if name not in leaves or name in grouped:
                why = "a pod group of this PodGang listed by no other config"
                raise InvalidField(f"{path}.podGroupNames", shown(name), why)
            grouped.add(name)
            kids.append(leaves[name].key)
        label = _required(config.get("topologyConstraint"), f"{path}.topologyConstraint", unsupported)
        node = TreeNode(f"{root}/{config.get('name')}", len(kids), tuple(kids), _domain(label, tier_keys))
        nodes.append(node)
        children.append(node.key)
    children.extend(leaf.key for name, leaf in leaves.items() if name not in grouped)
    label = _required(spec.get("topologyConstraint"), "spec.topologyConstraint", unsupported)
    top = TreeNode(root, len(children), tuple(children), _domain(label, tier_keys))
    tree = GangTree(root, (top, *nodes, *leaves.values()), "PodGang")
    specs = {
        key: GangSpec(
            s.namespace,
            s.name,
            s.min_member,
            network_topology=s.network_topology,
            source="grove",
            domain=s.domain,
            tree=tree,
        )
        for key, s in specs.items()
    }
    return GroveGang(root, tree, specs, members, tuple(unsupported))
