"""Every query of the Grafana dashboard and every alert of the PrometheusRule (deploy/components/monitoring/) reads
series a running operator exports, the "gangs waiting longer than N" gauge shows a gang that waits, and docs/metrics.md
lists exactly the series exported.

Oracle: the operator's own /metrics exposition (`Operator.metrics.render()`, what its metrics server answers),
parsed with prometheus-client's exposition parser, while a gang is bound and another waits (so every family has
samples). A query naming a series nobody exports draws an empty panel or an alert that never fires, silently.
The metric names of a PromQL expression are its identifiers that are not functions, keywords, label names (in
`{...}` or `by/on/...(...)`), ranges or Grafana variables (`metric_names`, itself checked below).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.integration.harness import bound, create, eventually, pod, podgroup, pods, replica

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "components" / "monitoring"
NODE = NODE_8_GPUS
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}
_MODIFIERS = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"


def metric_names(expr: str) -> set[str]:
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)  # string literals
    text = re.sub(r"\{[^{}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range selectors
    text = re.sub(r"\$\{?\w+\}?", " ", text)  # Grafana variables ($__rate_interval, $namespace)
    text = re.sub(_MODIFIERS, " ", text)  # label lists of aggregations and vector matching
    names = set()
    for match in re.finditer(r"(?<![\w.])[A-Za-z_:][A-Za-z0-9_:]*", text):
        if text[match.end() :].lstrip().startswith("(") or match.group().lower() in _KEYWORDS:
            continue  # a function call (or an aggregation written `sum(...)`), a keyword
        names.add(match.group())
    return names


def test_metric_names_finds_the_series_and_only_them() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le) (rate(a_bucket{namespace="$namespace", x=~"y|z"}[$__rate_interval])))'
        ' > 3 and on(pod) b{n="q"} == 1 or absent(c) unless sum without (pod) (d) * 1e3'
    )
    assert metric_names(expr) == {"a_bucket", "b", "c", "d"}


def _queries() -> dict[str, str]:
    """Every expression the monitoring component ships: the dashboard's targets and the rule's alerts."""
    out: dict[str, str] = {}
    dashboard = json.loads((MONITORING / "gangsched-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            out[f"dashboard {panel['title']!r} {target['refId']}"] = target["expr"]
    (rule,) = yaml.safe_load_all((MONITORING / "prometheusrule.yaml").read_text())
    for group in rule["spec"]["groups"]:
        for r in group["rules"]:
            out[f"alert {r.get('alert') or r.get('record')}"] = r["expr"]
    return out


def _exported_series(text: str) -> set[str]:
    """The gangsched_ series as a user queries them: a counter with `_total`, a histogram by its own name."""
    out = set()
    for family in text_string_to_metric_families(text):
        if family.name.startswith("gangsched_") and not family.name.endswith("_created"):
            out.add(f"{family.name}_total" if family.type == "counter" else family.name)
    return out


def _samples(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, sample.value)
    return out


@pytest.fixture
async def cluster4() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


async def test_every_query_reads_exported_series_and_a_waiting_gang_shows(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig) as op:
        # 5 x 8 GPUs: more than the 4 nodes hold, it waits; then a gang that fits is bound (every family gets data)
        await create(k, podgroup("huge", min_member=5), *(pod(f"huge-{i}", group="huge", gpu=8) for i in range(5)))
        await asyncio.sleep(1.1)  # creation times have a resolution of one second: the waiting gang is >= 1 s old
        await create(k, podgroup("small", min_member=2), *(pod(f"small-{i}", group="small", cpu="2") for i in range(2)))

        async def small_bound() -> bool:
            return sorted(n for n in bound(await pods(k)) if n.startswith("small-")) == ["small-0", "small-1"]

        await eventually(small_bound, what="the small gang bound")

        async def waiting_shows() -> dict[str, float] | None:
            samples = _samples(op.metrics.render().decode())
            return samples if samples.get("gangsched_oldest_waiting_gang_seconds", 0.0) >= 1.0 else None

        samples = await eventually(waiting_shows, what="gangsched_oldest_waiting_gang_seconds of the huge gang")
        exported = _exported_series(op.metrics.render().decode())
        assert samples["gangsched_oldest_waiting_gang_seconds"] < 120  # its age, not an epoch or a sentinel
        assert samples["gangsched_pending_gangs"] == 1.0
        assert samples["gangsched_leader"] == 1.0

    queries = _queries()
    assert {"alert GangschedNoLeader", "alert GangschedGangWaitingTooLong"} <= set(queries)
    unknown = {where: sorted(metric_names(expr) - set(samples)) for where, expr in queries.items()}
    assert not {where: names for where, names in unknown.items() if names}, sorted(samples)
    assert all(metric_names(expr) for expr in queries.values())
    # the reference page lists every series the operator exports, and nothing else
    documented = set(re.findall(r"^\| `(gangsched_\w+)` \|", (ROOT / "docs" / "metrics.md").read_text(), re.M))
    assert documented == exported, (sorted(documented - exported), sorted(exported - documented))
