"""Prometheus metrics of one operator instance, in a registry of its own (two replicas may share a process in tests).

Contract:
- Counters and histograms the runtime updates directly (cycles, bindings, evictions, gang wait, deadlocks:
  `record_deadlocks(plan.deadlocks)`); gauges set after each round (`gangsched_pending_gangs`,
  `gangsched_oldest_waiting_gang_seconds`: a gang that never binds shows there, not in `gang_wait_seconds`).
- `attach(operator)` adds what is read from the operator when scraped (plain reads only, from the metrics thread):
  leader, seconds since the last cycle, watch restarts, relists, dropped events, cache errors, task restarts,
  fenced writes, rebuilds, what /readyz says about the API, and the process collector's `process_*` series.
- `serve(port)` runs prometheus-client's HTTP server in a daemon thread.
Every series: docs/metrics.md. More: docs/modules.md#runtimemetricspy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gangsched.core import Deadlock, GangState
from gangsched.k8s.fence import FencedClient
from gangsched.k8s.forbidden import ForbiddenBook
from gangsched.k8s.reflector import Reflector
from gangsched.runtime.supervisor import Supervisor


class Scraped(Protocol):
    """What `Metrics.attach` reads when scraped (runtime/operator.py `Operator`): plain reads, no side effects."""

    @property
    def pod_reflector(self) -> Reflector: ...
    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def fence(self) -> FencedClient: ...
    @property
    def forbidden(self) -> ForbiddenBook: ...
    @property
    def last_cycle_at(self) -> float: ...
    @property
    def rebuilds(self) -> int: ...
    @property
    def dropped_events(self) -> int: ...
    def holds_lease(self) -> bool: ...
    def readiness(self) -> dict[str, Any]: ...
    def cache_stale_seconds(self, now: float | None = None) -> float: ...
    def binds_failing_seconds(self, now: float | None = None) -> float: ...


def oldest_waiting_seconds(gangs: Iterable[GangState], now: float) -> float:
    """Seconds the longest-waiting gang has waited: members pending and its quorum never reached (a satisfied gang's
    late members schedule alone, they are not a gang waiting), counted from its first member's creation, as
    `gangsched_gang_wait_seconds` counts; 0.0 when no gang waits."""
    starts = [g.member_created for g in gangs if g.pending and not g.satisfied and g.member_created != float("inf")]
    return max(0.0, now - min(starts)) if starts else 0.0


class _RequestCounts:
    """`gangsched_api_requests_total{verb,code}` read from a KubeClient's `requests` dict when scraped."""

    def __init__(self, counts: Mapping[tuple[str, str], int]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "gangsched_api_requests",
            "API requests sent, by verb and HTTP code (code 'error': no answer)",
            labels=["verb", "code"],
        )
        for (verb, code), count in sorted(dict(self._counts).items()):  # a copy: scraped from another thread
            family.add_metric([verb, code], count)
        yield family


class _Live(Collector):
    """Series computed at scrape time from the operator's counters."""

    def __init__(self, read: Callable[[], list[tuple[str, str, str, float]]]) -> None:
        self._read = read

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        for kind, name, help_, value in self._read():
            if kind == "counter":
                yield CounterMetricFamily(name, help_, value=value)
            else:
                yield GaugeMetricFamily(name, help_, value=value)


def _api_health(op: Scraped) -> list[tuple[str, str, str, float]]:  # (kind, name, help, value)
    """What /readyz says about the API (Operator.api_problems), as series: alerts keep their data while the
    replica is not ready (the metrics Service publishes not-ready addresses, manifests/metrics-service.yaml)."""
    return [
        ("gauge", "gangsched_ready", "1 while /readyz answers 200", float(bool(op.readiness()["ready"]))),
        (
            "gauge",
            "gangsched_cache_stale_seconds",
            "Seconds since a pod watch was last open (0 while one is)",
            op.cache_stale_seconds(),
        ),
        (
            "gauge",
            "gangsched_binds_failing_seconds",
            "Seconds since bindings began failing with none succeeding since (0 while they work)",
            op.binds_failing_seconds(),
        ),
        (
            "gauge",
            "gangsched_forbidden_causes",
            "Distinct causes of 403 Forbidden answers seen lately and not cleared (/readyz lists them)",
            float(len(op.forbidden.causes())),
        ),
        (
            "counter",
            "gangsched_forbidden",
            "403 Forbidden answers to the operator's requests",
            float(op.forbidden.total),
        ),
        (
            "gauge",
            "gangsched_watch_backoff_seconds",
            "The pod watch's last retry delay (0 after a watch that made progress)",
            op.pod_reflector.retry_delay,
        ),
    ]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.cycle_seconds = Histogram(
            "gangsched_scheduling_cycle_seconds",
            "Duration of one scheduling cycle (snapshot + decision), seconds",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=self.registry,
        )
        self.gang_wait_seconds = Histogram(
            "gangsched_gang_wait_seconds",
            "Time from a gang's first pending member to its binding, seconds",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800),
            registry=self.registry,
        )
        self.pending_gangs = Gauge(
            "gangsched_pending_gangs", "Gangs with members waiting to be scheduled", registry=self.registry
        )
        self.oldest_waiting_gang_seconds = Gauge(
            "gangsched_oldest_waiting_gang_seconds",
            "Seconds the longest-waiting gang (members pending, quorum never reached) has waited since its first"
            " member was created; 0 when none waits. Set by the leader after each scheduling round",
            registry=self.registry,
        )
        self.bind_errors = Counter("gangsched_bind_errors_total", "Bindings that failed", registry=self.registry)
        self.bound_pods = Counter("gangsched_bound_pods_total", "Pods bound by gangsched", registry=self.registry)
        self.preemptions = Counter(
            "gangsched_evictions_total", "Victim pods evicted for preemptors", registry=self.registry
        )
        self.deadlocks = Counter(
            "gangsched_deadlocks_resolved_total",
            "NonStrict deadlocks (wait-for cycles among gangs holding reservations) resolved (core/gang/deadlock.py)",
            registry=self.registry,
        )
        self.deadlock_releases = Counter(
            "gangsched_deadlock_released_reservations_total",
            "Reservations released to resolve NonStrict deadlocks",
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)

    def attach(self, op: Scraped) -> None:
        def read() -> list[tuple[str, str, str, float]]:
            reflector = op.pod_reflector
            return [
                (
                    "gauge",
                    "gangsched_leader",
                    "1 while this replica holds the Lease (what /readyz says)",
                    float(op.holds_lease()),
                ),
                (
                    "gauge",
                    "gangsched_seconds_since_last_cycle",
                    "Seconds since the scheduling loop last completed a round",
                    max(0.0, time.monotonic() - op.last_cycle_at),
                ),
                (
                    "counter",
                    "gangsched_watch_restarts",
                    "Watch requests resumed after one ended",
                    float(reflector.watch_restarts),
                ),
                (
                    "counter",
                    "gangsched_relists",
                    "Full relists after a watch expired or failed",
                    float(reflector.relists),
                ),
                (
                    "counter",
                    "gangsched_dropped_events",
                    "Kubernetes events dropped (recorder backlog full)",
                    float(op.dropped_events),
                ),
                (
                    "counter",
                    "gangsched_cache_errors",
                    "Watch events the cache could not take",
                    float(reflector.sink_errors),
                ),
                (
                    "counter",
                    "gangsched_task_restarts",
                    "Supervised tasks restarted after an unexpected end",
                    float(op.supervisor.restarts),
                ),
                (
                    "counter",
                    "gangsched_fenced_writes",
                    "Writes not sent because the Lease was not fresh",
                    float(op.fence.refused),
                ),
                ("counter", "gangsched_rebuilds", "State rebuilds after losing leadership", float(op.rebuilds)),
                *_api_health(op),
            ]

        self.registry.register(_Live(read))

    def record_deadlocks(self, deadlocks: Sequence[Deadlock]) -> None:
        """Count the NonStrict deadlocks a plan resolved (core/gang/deadlock.py)."""
        if deadlocks:
            self.deadlocks.inc(len(deadlocks))
            self.deadlock_releases.inc(sum(d.released for d in deadlocks))

    def export_requests(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Export a KubeClient's request counter (k8s/client.py `KubeClient.requests`)."""
        self.registry.register(_RequestCounts(counts))

    def serve(self, port: int, host: str = "0.0.0.0") -> None:
        start_http_server(port, addr=host, registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
