"""Benchmarks of the boundary parsers on the per-pod hot path: parse_pod_gang per pod event.

Figures: `models.parse_pod_gang_us` (label-only member, microseconds per pod), `models.parse_pod_gang_annotated_us`
(Koordinator-annotated member), `models.parse_pod_gang_plain_us` (pod without a gang), and
`models.podgroup_spec_us` (a PodGroup object through pydantic, for comparison; not on the pod path);
`models.infer_member_plain_us` and `models.infer_member_job_us`: what gangs inferred from workloads (config
inferGangs) add per event of a pod declaring no gang (a lone pod; a pod of an Indexed Job).
"""

from __future__ import annotations

from bench.common import figure, summary, timed_runs
from gangsched.models.gang import parse_pod_gang
from gangsched.models.inferred import infer_member
from gangsched.models.podgroup import podgroup_spec_from_api

N = 20_000
RUNS = 5
K = "gang.scheduling.koordinator.sh/"


def _pods(labels: dict[str, str], annotations: dict[str, str]) -> list[dict]:
    return [
        {
            "metadata": {
                "name": f"p-{i}",
                "namespace": "team-a",
                "uid": f"u-{i}",
                "labels": dict(labels),
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", **annotations},
            },
            "spec": {
                "schedulerName": "gangsched",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
        for i in range(N)
    ]


def _per_item_us(fn, items: list) -> dict[str, float]:  # type: ignore[no-untyped-def]
    samples = timed_runs(lambda: [fn(x) for x in items], runs=RUNS)
    return summary([s / len(items) for s in samples], scale=1e6)


def main() -> None:
    cases = {
        "models.parse_pod_gang_us": _pods({"scheduling.x-k8s.io/pod-group": "train", "app": "x"}, {}),
        "models.parse_pod_gang_annotated_us": _pods(
            {"app": "x"},
            {
                K + "name": "train",
                K + "min-available": "8",
                K + "total-number": "8",
                K + "waiting-time": "10m",
                K + "mode": "Strict",
                K + "groups": '["team-a/train", "team-b/eval"]',
            },
        ),
        "models.parse_pod_gang_plain_us": _pods({"app": "x"}, {}),
    }
    for name, pods in cases.items():
        stats = _per_item_us(parse_pod_gang, pods)
        figure(name, stats["median"], unit="us", target=5.0, better="lower", pods=N, **stats)
    job_pods = _pods({"batch.kubernetes.io/job-completion-index": "3", "job-name": "train"}, {})
    for pod in job_pods:
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j", "controller": True}
        ]
    for name, pods in (
        ("models.infer_member_plain_us", cases["models.parse_pod_gang_plain_us"]),
        ("models.infer_member_job_us", job_pods),
    ):
        stats = _per_item_us(infer_member, pods)
        figure(name, stats["median"], unit="us", target=5.0, better="lower", pods=N, **stats)
    podgroups = [
        {
            "metadata": {"name": f"g-{i}", "namespace": "team-a"},
            "spec": {"minMember": 8, "scheduleTimeoutSeconds": 60, "minResources": {"cpu": "8", "nvidia.com/gpu": 64}},
        }
        for i in range(2000)
    ]
    stats = _per_item_us(podgroup_spec_from_api, podgroups)
    figure("models.podgroup_spec_us", stats["median"], unit="us", target=None, better="lower", podgroups=2000, **stats)


if __name__ == "__main__":
    main()
