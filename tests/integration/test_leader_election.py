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
from collections.abc import AsyncIterator

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.k8s.lease import Clock, LeaderElector
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


class LoopClock:
    """The event loop's clock (virtual under looptime) as the monotonic clock; a wall clock that moves with it,
    offset from the real one."""

    def __init__(self, offset: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.start = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset - self.loop.time())

    def now(self) -> dt.datetime:
        return self.start + dt.timedelta(seconds=self.loop.time())

    def monotonic(self) -> float:
        return self.loop.time()


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


def _leads(e: LeaderElector) -> bool:
    """(functions, not properties: mypy keeps a property's narrowing from one assert to the next)"""
    return e.is_leader


def _holds(e: LeaderElector) -> bool:
    return e.holds_lease()


def elector(client: KubeClient, identity: str, clock: Clock, *, lease: float = 2.0) -> LeaderElector:
    return LeaderElector(
        client,
        namespace="default",
        name="gangsched",
        identity=identity,
        lease_duration=lease,
        renew_deadline=1.5,
        retry_period=0.25,
        clock=clock,
    )


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
    assert await b.step() and _leads(b)
    lease = await client.get(LEASE)
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert MICRO_RE.match(lease["spec"]["acquireTime"]) and lease["spec"]["acquireTime"] != acquired
    # a resumes: its own renewal is older than renewDeadline, so it has stopped leading before sending anything
    ca.mono += 2.1
    assert not _leads(a) and stopped == ["a"]
    assert not await a.step()  # and it does not take the lease back: b's record is fresh to a's eyes
    assert (await client.get(LEASE))["spec"]["holderIdentity"] == "b"


async def test_leader_stops_leading_when_it_cannot_renew_within_the_deadline(client: KubeClient) -> None:
    clock = FakeClock(0.0)
    a = elector(client, "a", clock)
    assert await a.step()
    lost: list[int] = []
    a.on_stopped_leading.append(lambda: lost.append(a.term))
    clock.mono += 1.49
    assert _leads(a) and _holds(a)
    clock.mono += 0.02  # renewDeadline (1.5 s) passed on its own clock without a renewal
    assert not _holds(a) and a.leading.is_set()  # the side-effect-free view (metrics thread)
    assert not _leads(a) and lost == [1] and not a.leading.is_set()
    assert await a.step() and a.term == 2  # still its own record: it leads again, in a new term
    assert (await client.get(LEASE))["spec"]["leaseTransitions"] == 0


@pytest.mark.looptime  # virtual time: the 3 s of sampling and the 2 s lease take no wall time
async def test_two_running_electors_with_skewed_clocks_never_both_lead(client: KubeClient) -> None:
    """The electors' own run loops, their clocks on the event loop's time (the wall clocks offset by an hour
    either way): sampled every 10 ms, never two leaders; once the leader stops, the follower takes over about a
    lease duration later."""
    loop = asyncio.get_running_loop()
    a = elector(client, "a", LoopClock(offset=-HOUR))
    b = elector(client, "b", LoopClock(offset=+HOUR))
    ta = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 5)
    tb = asyncio.create_task(b.run())
    both = 0
    deadline = loop.time() + 3.0
    while loop.time() < deadline:
        both += a.holds_lease() and b.holds_lease()
        await asyncio.sleep(0.01)
    assert both == 0 and a.holds_lease() and not b.holds_lease()
    ta.cancel()  # the leader dies without releasing
    stopped = loop.time()
    while not b.holds_lease():
        assert not a.holds_lease() or loop.time() - stopped < 1.5
        await asyncio.sleep(0.01)
        assert loop.time() - stopped < 5, "b never took over"
    waited = loop.time() - stopped
    assert 2.0 - 0.3 <= waited <= 2.0 + 0.3  # lease duration, give or take a retry period (0.25 s)
    tb.cancel()
    await asyncio.gather(ta, tb, return_exceptions=True)
