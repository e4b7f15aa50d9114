"""`kubectl gang` shows Kubernetes 1.37's Workloads and the native PodGroups made from them (issue 25), run by the
real kubectl (plugin mechanism, as tests/e2e/test_kubectl_gang_plugin.py) against the emulator with a replica.

Objects as a true workload controller builds them (KEP-5832 "Decouple PodGroup from Workload API", section
"Ownership and Object Relationship": the controller creates (1) the Workload with its podGroupTemplates, (2) one
PodGroup per template replica referencing it, (3) the pods naming their PodGroup; k8s.io/api scheduling/v1beta1
types.go at kubernetes/api 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2: PodGroupSpec.workloadRef {workloadName,
templateName}, and "schedulingPolicy ... Controllers are expected to fill this field by copying it from a
PodGroupTemplate"; pods name the PodGroup in spec.schedulingGroup.podGroupName). The owner (the true workload) is
left out: none exists here and the garbage collector removes objects whose owner is missing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.test_kubectl_gang_plugin import cluster, kubectl  # noqa: F401 (the fixture)
from tests.integration.harness import bound, eventually, pods, replica

pytestmark = pytest.mark.e2e

DRIVER: dict[str, Any] = {"basic": {}}
WORKERS: dict[str, Any] = {"gang": {"minCount": 3}}


def workload_objects() -> str:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "podGroupTemplates": [
                {"name": "driver", "schedulingPolicy": DRIVER},
                {"name": "workers", "schedulingPolicy": WORKERS},
            ]
        },
    }
    podgroups = [
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": f"train-{template}", "namespace": "default"},
            "spec": {
                "workloadRef": {"workloadName": "train", "templateName": template},
                "schedulingPolicy": policy,  # copied from the template
            },
        }
        for template, policy in (("driver", DRIVER), ("workers", WORKERS))
    ]
    members = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "schedulerName": "gangsched",
                "schedulingGroup": {"podGroupName": group},
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
        for name, group in (
            ("train-driver-0", "train-driver"),
            *((f"train-workers-{i}", "train-workers") for i in range(3)),
        )
    ]
    return yaml.safe_dump_all([workload, *podgroups, *members])


async def test_workload_with_two_templates_and_its_podgroups(cluster: Any) -> None:  # noqa: F811
    """Both PodGroups are scheduled (the basic driver alone, the workers as a gang of 3); `kubectl gang` lists the
    Workload with each template and the PodGroup made from it, and each gang with its Workload; `kubectl gang train`
    (the Workload's name) shows it and its gangs; -o json gives the same facts."""
    async with replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=workload_objects())

        async def all_bound() -> bool:
            if len([n for n in bound(await pods(cluster.client)) if n.startswith("train-")]) != 4:
                return False
            pg = await cluster.client.get("/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/train-workers")
            conditions = (pg.get("status") or {}).get("conditions") or []
            return any(c.get("type") == "PodGroupInitiallyScheduled" and c.get("status") == "True" for c in conditions)

        await eventually(all_bound, what="the driver and the three workers bound, the workers' PodGroup scheduled")
        text = await kubectl(cluster, "gang")
        assert "workload default/train  templates 2" in text, text
        assert "  template driver  basic  podGroups: train-driver" in text, text
        assert "  template workers  gang minCount 3  podGroups: train-workers" in text, text
        line = next(ln for ln in text.splitlines() if ln.startswith("gang default/train-workers"))
        # the PodGroupInitiallyScheduled condition True (written once the quorum is bound) and the bound members
        assert line.startswith("gang default/train-workers  Scheduled  members 3/3 bound"), line
        assert line.endswith("native PodGroup (workload train template workers)"), line

        driver = next(ln for ln in text.splitlines() if ln.startswith("gang default/train-driver"))
        assert driver.startswith("gang default/train-driver  Basic  members 1/? bound"), driver

        only = await kubectl(cluster, "gang", "train")
        assert "workload default/train" in only and "gang default/train-driver" in only, only

        record = json.loads(await kubectl(cluster, "gang", "-o", "json"))
        assert record["workloads"] == [
            {
                "namespace": "default",
                "name": "train",
                "templates": [
                    {"name": "driver", "policy": "basic", "podGroups": ["train-driver"], "missing": False},
                    {"name": "workers", "policy": "gang minCount 3", "podGroups": ["train-workers"], "missing": False},
                ],
            }
        ]
        workers = next(g for g in record["gangs"] if g["name"] == "train-workers")
        assert workers["nativePodGroup"] and workers["workload"] == {"name": "train", "template": "workers"}
        assert (workers["minMember"], workers["scheduled"], workers["phase"]) == (3, 3, "Scheduled")
