"""Leader election with client-go's semantics, against the real emulator over HTTP, replicas with skewed clocks.

Reference: client-go `staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go`: `tryAcquireOrRenew`
takes the lock over only when `observedTime + LeaseDuration` is past on the candidate's OWN clock (observedTime is
when it last saw the raw record change, `setObservedRecord`), never by comparing the holder's renewTime with the
local clock; `renew` gives leadership up when it cannot renew within RenewDeadline; a takeover writes a new
acquireTime and leaseTransitions+1; renewTime/acquireTime are MicroTime. kube-scheduler exits when it stops
leading (`cmd/kube-scheduler/app/server.go`, OnStoppedLeading); the operator rebuilds as a follower instead.

The wall clocks of the two replicas are offset by more than the lease duration, in both directions: with the
old comparison of renewTime against the local clock, the replica whose clock is ahead took over a live lease
(two leaders), and the one whose clock is behind never took over a dead one.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
from collections.abc import AsyncIterator

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.k8s.lease import LeaderElector, SystemClock
from gangsched.sim.apiserver import ApiServer

HOUR = 3600.0
MICRO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class FakeClock:
    """A wall clock offset from the real one and a monotonic clock the test advances."""

    def __init__(self, offset: float) -> None:
        self.offset = offset
        self.mono = 1000.0

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.offset)

    def monotonic(self) -> float:
        return self.mono


@pytest.fixture
async def client(tmp_path: object) -> AsyncIterator[KubeClient]:
    server = ApiServer()
    await server.start()
    kubeconfig = server.write_kubeconfig(f"{tmp_path}/kubeconfig")
    k = await KubeClient.connect(str(kubeconfig))
    try:
        yield k
    finally:
        await k.close()
        await server.stop()


def elector(client: KubeClient, identity: str, clock: object, *, lease: float = 2.0) -> LeaderElector:
    return LeaderElector(
        client,
        namespace="default",
        name="gangsched",
        identity=identity,
        lease_duration=lease,
        renew_deadline=1.5,
        retry_period=0.25,
        clock=clock,
    )  # type: ignore[arg-type]


LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/gangsched"


@pytest.mark.parametrize(
    ("a_offset", "b_offset"), [(-HOUR, HOUR), (HOUR, -HOUR)], ids=["follower-ahead", "follower-behind"]
)
async def test_skewed_follower_takes_over_only_after_a_lease_duration_of_its_own_clock(
    client: KubeClient, a_offset: float, b_offset: float
) -> None:
    ca, cb = FakeClock(a_offset), FakeClock(b_offset)
    a, b = elector(client, "a", ca), elector(client, "b", cb)
    stopped: list[str] = []
    a.on_stopped_leading.append(lambda: stopped.append("a"))
    assert await a.step() and a.is_leader
    lease = await client.get(LEASE)
    assert lease["spec"]["holderIdentity"] == "a" and lease["spec"]["leaseTransitions"] == 0
    assert MICRO_RE.match(lease["spec"]["renewTime"]) and MICRO_RE.match(lease["spec"]["acquireTime"])
    acquired = lease["spec"]["acquireTime"]
    for _ in range(5):  # a renews every second of its clock; b, an hour off either way, never takes over
        assert not await b.step()
        ca.mono += 1.0
        cb.mono += 1.0
        assert await a.step() and a.is_leader and not b.is_leader
    lease = await client.get(LEASE)
    assert lease["spec"]["acquireTime"] == acquired  # renewal keeps acquireTime and the transition count
    assert lease["spec"]["leaseTransitions"] == 0
    # a stops renewing (frozen). b last saw the record change at its step below; it waits 2 s of ITS clock.
    assert not await b.step()
    cb.mono += 1.9
    assert not await b.step() and not b.is_leader
    cb.mono += 0.2  # 2.1 s since b last observed a change
    assert await b.step() and b.is_leader
    lease = await client.get(LEASE)
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert MICRO_RE.match(lease["spec"]["acquireTime"]) and lease["spec"]["acquireTime"] != acquired
    # a resumes: its own renewal is older than renewDeadline, so it has stopped leading before sending anything
    ca.mono += 2.1
    assert not a.is_leader and stopped == ["a"]
    assert not await a.step()  # and it does not take the lease back: b's record is fresh to a's eyes
    assert (await client.get(LEASE))["spec"]["holderIdentity"] == "b"


async def test_leader_stops_leading_when_it_cannot_renew_within_the_deadline(client: KubeClient) -> None:
    clock = FakeClock(0.0)
    a = elector(client, "a", clock)
    assert await a.step()
    lost: list[int] = []
    a.on_stopped_leading.append(lambda: lost.append(a.term))
    clock.mono += 1.49
    assert a.is_leader and a.holds_lease()
    clock.mono += 0.02  # renewDeadline (1.5 s) passed on its own clock without a renewal
    assert not a.holds_lease() and a.leading.is_set()  # the side-effect-free view (metrics thread)
    assert not a.is_leader and lost == [1] and not a.leading.is_set()
    assert await a.step() and a.term == 2  # still its own record: it leads again, in a new term
    assert (await client.get(LEASE))["spec"]["leaseTransitions"] == 0


async def test_two_running_electors_with_skewed_clocks_never_both_lead(client: KubeClient) -> None:
    """Real clocks (the wall clocks offset by an hour either way), the electors' own run loops: sampled every
    10 ms, never two leaders; once the leader stops, the follower takes over about a lease duration later."""
    a = elector(client, "a", SystemClock(offset=-HOUR))
    b = elector(client, "b", SystemClock(offset=+HOUR))
    ta = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 5)
    tb = asyncio.create_task(b.run())
    both = 0
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        both += a.holds_lease() and b.holds_lease()
        await asyncio.sleep(0.01)
    assert both == 0 and a.holds_lease() and not b.holds_lease()
    ta.cancel()  # the leader dies without releasing
    stopped = time.monotonic()
    while not b.holds_lease():
        assert not a.holds_lease() or time.monotonic() - stopped < 1.5
        await asyncio.sleep(0.01)
        assert time.monotonic() - stopped < 5, "b never took over"
    waited = time.monotonic() - stopped
    assert 2.0 - 0.3 <= waited <= 2.0 + 1.0  # lease duration, give or take a retry period and a round trip
    tb.cancel()
    await asyncio.gather(ta, tb, return_exceptions=True)
