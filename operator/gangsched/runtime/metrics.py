"""Prometheus metrics of one operator instance, in a registry of its own (two replicas may share a process in tests).

Exposed at /metrics by `serve_metrics()` (prometheus-client's WSGI app on a thread-free aiohttp handler is not
needed: the client's own tiny HTTP server runs in a daemon thread).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, Metric


class _RequestCounts:
    """`gangsched_api_requests_total{verb,code}` read from a KubeClient's `requests` dict when scraped."""

    def __init__(self, counts: Mapping[tuple[str, str], int]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily("gangsched_api_requests", "API requests sent, by verb and HTTP code (code 'error': no answer)", labels=["verb", "code"])
        for (verb, code), count in sorted(dict(self._counts).items()):  # a copy: scraped from another thread
            family.add_metric([verb, code], count)
        yield family


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
        self.pending_gangs = Gauge("gangsched_pending_gangs", "Gangs with members waiting to be scheduled", registry=self.registry)
        self.bind_errors = Counter("gangsched_bind_errors_total", "Bindings that failed", registry=self.registry)
        self.bound_pods = Counter("gangsched_bound_pods_total", "Pods bound by gangsched", registry=self.registry)
        self.preemptions = Counter("gangsched_evictions_total", "Victim pods evicted for preemptors", registry=self.registry)
        self.is_leader = Gauge("gangsched_leader", "1 while this replica is the leader", registry=self.registry)

    def export_requests(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Export a KubeClient's request counter (k8s/client.py `KubeClient.requests`)."""
        self.registry.register(_RequestCounts(counts))

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
