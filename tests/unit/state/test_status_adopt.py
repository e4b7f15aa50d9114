"""GangStatusBook.adopt (state/status.py): the status memory belongs to one PodGroup object (uid). A PodGroup
deleted and created again under the same name, even when the DELETED event was missed (a watch restarted: the
relist shows the new object, generation 1 again), gets a full status body, not "unchanged"."""

from __future__ import annotations

from typing import Any

from gangsched.state.cache import ClusterCache
from tests.builders import member_obj, podgroup_obj


def status(cache: ClusterCache, key: str) -> dict[str, Any] | None:
    info = cache.podgroup(key)
    assert info is not None
    cache.statuses.adopt(key, info.uid)
    return cache.statuses.status_of(
        key,
        min_member=1,
        members=cache.members(key),
        generation=info.generation,
        decided=None,
        satisfied=False,
        timed_out=False,
        invalid=None,
        in_flight=0,
        now_iso="2024-01-01T00:00:00Z",
    )


def test_a_podgroup_seen_again_with_another_uid_gets_its_status_again() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_podgroup("ADDED", podgroup_obj("g", min_member=1))
    cache.on_pod_event("ADDED", member_obj("g-0", group="g", cpu="1"))
    assert status(cache, "default/g") is not None
    assert status(cache, "default/g") is None  # unchanged: not written twice
    again = podgroup_obj("g", min_member=1)
    again["metadata"]["uid"] = "pg-g-2"
    cache.on_podgroup(None, again)  # a relist: no DELETED seen in between
    assert status(cache, "default/g") is not None
    assert status(cache, "default/g") is None


def test_adopt_says_when_nothing_was_written_to_that_object() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    book = cache.statuses
    assert book.adopt("default/g", "a") is True
    assert book.adopt("default/g", "a") is False
    assert book.adopt("default/g", "b") is True
    book.forget("default/g")
    assert book.tracked() == 0
    assert book.adopt("default/g", "b") is True
