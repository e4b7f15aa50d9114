"""Apportioning equal items (DP groups, or single members) among the children of one domain, in as few children as
possible (pure; used by placement.py).

Contract: `apportion(children, slots, short_fits, pod_capacity, *, items, short_last, item_pods, last_pods)` shares
`items` equal items, the last one short (`last_pods` pods instead of `item_pods`) when `short_last`. A child c takes
up to slots[c] items, or slots[c] + 1 when it receives the short last item and short_fits[c] (it has room for the
short item beside its whole ones). Largest children first; the child that completes the set is the best fit (the
fewest pods left over). Returns [(child, items)] in rank order (the child with the short item last), or None when
the items do not fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

Plan = list[tuple[int, int]]  # (child, items it takes), in rank order


class _NeverFits:
    def __getitem__(self, _: int) -> bool:
        return False


NEVER_FITS: Final = _NeverFits()  # short_fits when there is no short item

Slots = Sequence[int] | Mapping[int, int]
ShortFits = Sequence[bool] | Mapping[int, bool] | _NeverFits


class _Spread:
    __slots__ = ("item_pods", "last_pods", "pod_capacity", "short_fits", "short_last", "slots")

    def __init__(
        self,
        slots: Slots,
        short_fits: ShortFits,
        pod_capacity: Sequence[int],
        *,
        short_last: bool,
        item_pods: int,
        last_pods: int,
    ) -> None:
        self.slots = slots
        self.short_fits = short_fits
        self.pod_capacity = pod_capacity
        self.short_last = short_last
        self.item_pods = item_pods
        self.last_pods = last_pods

    def room_with_last(self, child: int) -> int:
        """Items the child can take when it also takes the last one."""
        return self.slots[child] + (1 if self.short_last and self.short_fits[child] else 0)

    def pods_left(self, child: int, items: int) -> int:
        """Pods left over on the child after taking `items`, the last of them included."""
        if self.short_last:
            return self.pod_capacity[child] - (items - 1) * self.item_pods - self.last_pods
        return self.pod_capacity[child] - items * self.item_pods

    def largest_first(self, children: list[int], items: int) -> Plan | None:
        order = sorted(children, key=lambda c: (-self.slots[c], c))
        count = len(order)
        best_after = [0] * (count + 1)  # best_after[m]: the most any child from position m on can take as the last
        for m in range(count - 1, -1, -1):
            best_after[m] = max(best_after[m + 1], self.room_with_last(order[m]))
        taken = 0
        for m in range(count):
            remaining = items - taken
            if best_after[m] >= remaining:
                rest = [c for c in order[m:] if self.room_with_last(c) >= remaining]
                last = min(rest, key=lambda c: (self.pods_left(c, remaining), c))
                head = [(c, self.slots[c]) for c in order[:m]]
                return _in_rank_order(head, (last, remaining), self.short_last)
            taken += self.slots[order[m]]
        return None

    def short_item_beside(self, children: list[int], items: int) -> Plan | None:
        """The short item needs the room of a child that the largest-first pass used up as a plain one."""
        candidates = [c for c in children if self.short_fits[c]]
        if not candidates:
            return None
        last = max(candidates, key=lambda c: (self.slots[c], -c))
        others_need = items - self.room_with_last(last)
        head = []
        for child in sorted(children, key=lambda c: (-self.slots[c], c)):
            if others_need <= 0:
                break
            if child == last or self.slots[child] == 0:
                continue
            take = min(self.slots[child], others_need)
            head.append((child, take))
            others_need -= take
        if others_need > 0:
            return None
        return _in_rank_order(head, (last, items - sum(n for _, n in head)), self.short_last)


def apportion(
    children: list[int],
    slots: Slots,
    short_fits: ShortFits,
    pod_capacity: Sequence[int],
    *,
    items: int,
    short_last: bool,
    item_pods: int,
    last_pods: int,
) -> Plan | None:
    """See the module docstring."""
    state = _Spread(slots, short_fits, pod_capacity, short_last=short_last, item_pods=item_pods, last_pods=last_pods)
    plan = state.largest_first(children, items)
    if plan is None and short_last:
        plan = state.short_item_beside(children, items)
    return plan


def _in_rank_order(head: Plan, last: tuple[int, int], short_last: bool) -> Plan:
    plan = [(child, n) for child, n in head if n > 0]
    if short_last:
        return [*sorted(plan), last]
    return sorted([*plan, last])
