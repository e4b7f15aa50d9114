"""What was said about each gang's declaration (models/koordinator.py notices), so each is said once per gang.

Contract: `GangNotices.new(gang, notices)` returns the notices not said yet for that gang (and remembers them);
`told_members(gang, notices)` records notices that went to a member pod because the gang had no PodGroup yet, and
`retell(gang)` returns them once (they are said again on the PodGroup when it appears: watch streams do not keep
a PodGroup's creation ahead of its pods'); `forget(gang)` drops the gang's memory (the cache calls it when the
gang is forgotten, so a gang created again under that name is told again); `len()` counts the gangs remembered.
Per gang, not per pod and not per cycle: the members of one gang carry the same annotations, and their updates say
nothing new.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.models.koordinator import Notice


class GangNotices:
    def __init__(self) -> None:
        self._said: dict[str, set[Notice]] = {}
        self._on_members: dict[str, list[Notice]] = {}  # said on a member: the gang had no PodGroup then

    def new(self, gang: str, notices: Iterable[Notice]) -> list[Notice]:
        fresh = [n for n in notices if n not in self._said.get(gang, ())]
        if fresh:
            self._said.setdefault(gang, set()).update(fresh)
        return fresh

    def told_members(self, gang: str, notices: Iterable[Notice]) -> None:
        self._on_members.setdefault(gang, []).extend(notices)

    def retell(self, gang: str) -> list[Notice]:
        return self._on_members.pop(gang, [])

    def forget(self, gang: str) -> None:
        self._said.pop(gang, None)
        self._on_members.pop(gang, None)

    def __len__(self) -> int:
        return len(self._said)
