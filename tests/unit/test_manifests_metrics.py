"""The metrics Service (manifests/metrics-service.yaml) keeps scraping a replica that is not ready (issue 22, 12).

Oracle: the core/v1 ServiceSpec (k8s.io/api/core/v1/types.go): `publishNotReadyAddresses` "indicates that any
agent which deals with endpoints for this Service should disregard any indications of ready/not-ready"; without it
the EndpointSlice controller (pkg/controller/endpointslice) lists a pod that fails its readiness probe as not
ready, and a scraper discovering targets through the Service loses the series exactly while /readyz reports a
problem. A Service's `targetPort` may name a container port; its selector must match the Deployment's pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def test_the_metrics_service_selects_the_replicas_and_publishes_not_ready_ones() -> None:
    (svc,) = _docs("metrics-service.yaml")
    (dep,) = [d for d in _docs("deployment.yaml") if d["kind"] == "Deployment"]
    assert (svc["kind"], svc["metadata"]["namespace"]) == ("Service", dep["metadata"]["namespace"])
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= labels.items()
    assert svc["spec"]["publishNotReadyAddresses"] is True
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    (port,) = svc["spec"]["ports"]
    assert port["targetPort"] == "metrics" and port["port"] == ports["metrics"]


def test_the_readme_installs_it() -> None:
    """Listed in the README's `kubectl apply -f` command, or in the kustomize base it applies with `-k`."""
    readme = (MANIFESTS.parent / "README.md").read_text()
    if "-f manifests/metrics-service.yaml" in readme:
        return
    assert "kubectl apply -k manifests" in readme
    base = yaml.safe_load((MANIFESTS / "Kustomization").read_text())
    assert "metrics-service.yaml" in base["resources"]
