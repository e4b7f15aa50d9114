"""`kubectl apply -k` installs gangsched, an overlay's image and replicas land in the Deployment, and
`kubectl delete -k` uninstalls it: the real kubectl (its built-in kustomize) against `gangsched sim serve` (RBAC,
the v1.37 schemas of built-in kinds, CRD structural schemas enforced as a real API server does).

The production overlay includes the monitoring component, whose ServiceMonitor and PrometheusRule need the
Prometheus Operator's CRDs: the test installs them first, made from the schemas vendored in
tests/data/prometheus-operator/ (its README cites the source), so the API server checks those objects against them.
tests/unit/test_kustomize.py checks the rendered objects one by one; this test checks that a server takes them, in
the order kubectl sends them, and that the uninstall leaves nothing of ours behind.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from tests.e2e.processes import stop_processes, wait_until
from tests.tools import need_tool

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "tests" / "data" / "prometheus-operator"
NS = "gangsched-system"


def _prometheus_operator_crds() -> str:
    docs = []
    for path in sorted(VENDORED.glob("*.schema.json")):
        vendored = json.loads(path.read_text())
        kind = vendored["kind"]
        plural = path.name.split(".")[0]
        docs.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{vendored['group']}"},
                "spec": {
                    "group": vendored["group"],
                    "scope": "Namespaced",
                    "names": {
                        "kind": kind,
                        "listKind": f"{kind}List",
                        "plural": plural,
                        "singular": kind.lower(),
                    },
                    "versions": [
                        {"name": name, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
                        for name, schema in vendored["versions"].items()
                    ],
                },
            }
        )
    return yaml.safe_dump_all(docs)


def test_apply_k_installs_each_overlay_and_delete_k_uninstalls(tmp_path: Path) -> None:
    need_tool("kubectl")
    bin_dir = Path(sys.executable).parent
    admin = str(tmp_path / "admin.kubeconfig")
    env = {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}

    def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", f"--kubeconfig={admin}", f"--cache-dir={tmp_path / 'cache'}", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert not check or result.returncode == 0, f"kubectl {shlex.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result

    serve_log = open(tmp_path / "serve.log", "w+")  # noqa: SIM115 (closed in the finally below)
    serve = subprocess.Popen(
        [str(bin_dir / "gangsched"), "sim", "serve", "--nodes", "2", "--kubeconfig", admin],
        cwd=ROOT,
        env=env,
        stdout=serve_log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(
            lambda: "press Ctrl-C" in (tmp_path / "serve.log").read_text() or serve.poll() is not None,
            timeout=60,
            what="sim serve ready",
        )
        assert serve.poll() is None, (tmp_path / "serve.log").read_text()

        crds = tmp_path / "prometheus-operator-crds.yaml"
        crds.write_text(_prometheus_operator_crds())
        kubectl("apply", "-f", str(crds))

        out = kubectl("apply", "-k", "deploy/overlays/production").stdout
        applied = dict(line.rsplit(" ", 1) for line in out.splitlines() if line.strip())
        for name in (  # `sim serve` itself creates the CRD, the namespace and the RBAC objects: "configured" there
            "customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.x-k8s.io",
            "namespace/gangsched-system",
            "clusterrole.rbac.authorization.k8s.io/gangsched",
            "priorityclass.scheduling.k8s.io/gangsched-critical",
            "flowschema.flowcontrol.apiserver.k8s.io/gangsched",
            "deployment.apps/gangsched",
            "poddisruptionbudget.policy/gangsched",
            "service/gangsched-metrics",
            "networkpolicy.networking.k8s.io/gangsched",
            "configmap/gangsched-dashboard",
            "servicemonitor.monitoring.coreos.com/gangsched",
            "prometheusrule.monitoring.coreos.com/gangsched",
        ):
            assert applied.get(name) in {"created", "configured"}, out
        deployed = "{.spec.replicas} {.spec.template.spec.containers[0].image}"
        got = kubectl("get", "deployment", "gangsched", "-n", NS, "-o", f"jsonpath={deployed}").stdout
        assert got == "2 registry.example.com/gangsched:0.1.0"
        assert "unchanged" in kubectl("apply", "-k", "deploy/overlays/production").stdout  # idempotent

        # --ignore-not-found: kubectl deletes the namespace first, and the objects in it go with it
        out = kubectl("delete", "-k", "deploy/overlays/production", "--ignore-not-found", "--wait=false").stdout
        assert 'namespace "gangsched-system" deleted' in out, out
        for cluster_scoped in ("clusterrole/gangsched", "priorityclass/gangsched-critical", "flowschema/gangsched"):
            assert kubectl("get", cluster_scoped, check=False).returncode != 0, cluster_scoped

        def namespace_gone() -> bool:
            return kubectl("get", "namespace", NS, check=False).returncode != 0

        wait_until(namespace_gone, timeout=60, what="the namespace deleted")

        kubectl("apply", "-k", "deploy/overlays/dev")
        got = kubectl("get", "deployment", "gangsched", "-n", NS, "-o", f"jsonpath={deployed}").stdout
        assert got == "1 gangsched:dev"
        pdbs = kubectl("get", "pdb", "-n", NS, "-o", "name").stdout.split()
        assert pdbs == []  # one replica: a minAvailable 1 budget would block every drain
    finally:
        stop_processes(serve)
        serve_log.close()
