"""One pod's lifecycle slot in the store, and the store's readers over the slots (core/memory/store.py `ClusterStore`
inherits them; they read, never change).

Contract: `PodSlot` is a pod's `PodState` with its node (every state but PENDING and TERMINAL; NOMINATED: the
nominated node), the uid of a pod we bound (ASSUMED), its resource charge and its name's natural sort key.
`SlotReaders`: `state_of`, `name_key`, `reservation_of` ((node, binding in flight) of a RESERVED or BINDING pod),
`pods_in(state)`, `nomination_of`, `nominations()`, `bindings_in_flight()`, `assumed` (pod -> (node, uid)).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gangsched.core.memory.accounting import Charge
from gangsched.core.memory.podstate import BINDING, NOMINATED, RESERVED, PodState
from gangsched.core.records.records import PodRecord
from gangsched.core.values.naming import natural_key


@dataclass(slots=True)
class PodSlot:
    """One pod's lifecycle state and what follows from it."""

    state: PodState
    node: str | None = None  # the node of every state but PENDING and TERMINAL (NOMINATED: the nominated node)
    uid: str = ""  # ASSUMED: the uid of the pod we bound
    charge: Charge | None = None  # (node, requests) counted in `used`
    name_key: tuple[tuple[int, int | str], ...] | None = None  # natural order of the name, computed when needed


class SlotReaders:
    """The readers of `ClusterStore` over its slots (the attributes below are the store's)."""

    pods: dict[str, PodRecord]
    _slots: dict[str, PodSlot]
    _by_state: dict[PodState, dict[str, None]]
    _nominated: dict[str, None]
    _binding: dict[str, None]
    _assumed: dict[str, None]

    def state_of(self, pod_key: str) -> PodState | None:
        slot = self._slots.get(pod_key)
        return slot.state if slot is not None else None

    def name_key(self, pod_key: str) -> tuple[tuple[int, int | str], ...]:
        """The natural sort key of the pod's name (members without a rank), computed once."""
        slot = self._slots[pod_key]
        if slot.name_key is None:
            slot.name_key = natural_key(self.pods[pod_key].name)
        return slot.name_key

    def reservation_of(self, pod_key: str) -> tuple[str, bool] | None:
        """(node, binding_in_flight) of a RESERVED or BINDING pod, or None."""
        slot = self._slots.get(pod_key)
        if slot is None or (slot.state is not RESERVED and slot.state is not BINDING):
            return None
        assert slot.node is not None
        return slot.node, slot.state is BINDING

    def pods_in(self, state: PodState) -> Mapping[str, None]:
        """The pods in a NOMINATED, RESERVED, BINDING or ASSUMED state (read-only)."""
        return self._by_state[state]

    def nomination_of(self, pod_key: str) -> str | None:
        slot = self._slots.get(pod_key)
        return slot.node if slot is not None and slot.state is NOMINATED else None

    def nominations(self) -> Iterator[tuple[str, str]]:
        """(pod_key, node) of every NOMINATED pod."""
        return self._with_nodes(self._nominated)

    def bindings_in_flight(self) -> Iterator[tuple[str, str]]:
        return self._with_nodes(self._binding)

    def _with_nodes(self, keys: Mapping[str, None]) -> Iterator[tuple[str, str]]:
        slots = self._slots
        return ((key, node) for key in keys if (node := slots[key].node) is not None)

    @property
    def assumed(self) -> dict[str, tuple[str, str]]:
        """Pods bound by us, not yet seen bound: pod -> (node, uid)."""
        slots = self._slots
        return {key: (slots[key].node or "", slots[key].uid) for key in self._assumed}  # ASSUMED has a node
