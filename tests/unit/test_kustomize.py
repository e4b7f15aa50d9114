"""The kustomize install (`kubectl apply -k manifests/` and the overlays under deploy/overlays/), rendered by the real
kubectl's built-in kustomize, installs valid, consistent objects.

Oracles, none of them ours:
- kubectl's built-in kustomize (`kubectl kustomize DIR`, what `kubectl apply -k DIR` applies) renders the base and
  every overlay;
- every rendered built-in object validates against Kubernetes 1.37's own OpenAPI schemas (`kubernetes-validate`),
  strictly (no unknown fields); the PodGroup CRD's objects against its structural schema; the ServiceMonitor and
  PrometheusRule against the Prometheus Operator's CRD schemas, vendored in tests/data/prometheus-operator/ (source
  repository, path and commit in its README.md), strictly, with the structural-schema validator the emulator uses
  (gangsched.sim.schema: what a real API server answers for a custom object);
- the Dockerfile's text: its OCI version label (no container engine here to build and inspect the image).
Consistency checked on the rendered objects: the base installs exactly what `kubectl apply -f crds/ -f manifests/...`
installs; the image and the replica count are set in one place (an overlay's `images:`/`replicas:` change them and
nothing else); each Deployment keeps the shutdown grace period and its NetworkPolicy; no PodDisruptionBudget blocks
every drain (minAvailable below the replica count); the ServiceMonitor scrapes the metrics Service's named port; the
PrometheusRule has the four alerts; the dashboard ConfigMap holds the dashboard file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

import gangsched
from gangsched.sim import schema as crd_schema
from tests.tools import need_tool

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="the sim extra (kubernetes-validate) is not installed"
)

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "manifests"
OVERLAYS = sorted(p.parent for p in (ROOT / "deploy" / "overlays").glob("*/kustomization.yaml"))
KUSTOMIZATIONS = [BASE, *OVERLAYS]
MONITORING = ROOT / "deploy" / "components" / "monitoring"
PROMETHEUS_OPERATOR = ROOT / "tests" / "data" / "prometheus-operator"
K8S_VERSION = "1.37.0"
# what `kubectl apply -f` installs besides the base: optional files, applied on their own
NOT_IN_BASE = {"topology-configmap.yaml", "rbac-infer-gangs.yaml"}
ALERTS = {
    "GangschedNoLeader": "gangsched_leader",
    "GangschedBindsFailing": "gangsched_binds_failing_seconds",
    "GangschedCacheStale": "gangsched_cache_stale_seconds",
    "GangschedGangWaitingTooLong": "gangsched_oldest_waiting_gang_seconds",
}


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


def _render(directory: Path) -> list[dict[str, Any]]:
    need_tool("kubectl")
    result = subprocess.run(
        ["kubectl", "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "HOME": str(directory)},  # no user config read (kustomize reads none; belt and braces)
    )
    assert result.returncode == 0, f"kubectl kustomize {directory}:\n{result.stderr}"
    return [d for d in yaml.safe_load_all(result.stdout) if d]


_RENDERED: dict[Path, list[dict[str, Any]]] = {}


def rendered(directory: Path) -> list[dict[str, Any]]:
    if directory not in _RENDERED:
        _RENDERED[directory] = _render(directory)
    return _RENDERED[directory]


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind]
    return found


def _custom_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for crd in _docs(ROOT / "crds" / "podgroups.yaml"):
        for version in crd["spec"]["versions"]:
            out[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = version["schema"][
                "openAPIV3Schema"
            ]
    for path in sorted(PROMETHEUS_OPERATOR.glob("*.schema.json")):
        vendored = json.loads(path.read_text())
        for version, schema in vendored["versions"].items():
            out[(f"{vendored['group']}/{version}", vendored["kind"])] = schema
    return out


def _errors(obj: dict[str, Any]) -> list[str]:
    custom = _custom_schemas().get((obj["apiVersion"], obj["kind"]))
    if custom is not None:
        return [e.message for e in crd_schema.validate(obj, custom, strict=True)]
    if obj["apiVersion"].startswith("monitoring.coreos.com/"):
        return [f"no vendored schema for {obj['apiVersion']} {obj['kind']}"]
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [str(exc).splitlines()[0]]
    return []


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=_ids(KUSTOMIZATIONS))
def test_every_rendered_object_validates_against_the_real_schemas(directory: Path) -> None:
    objs = rendered(directory)
    assert objs
    duplicates = [k for k, n in Counter(_key(o) for o in objs).items() if n > 1]
    assert not duplicates
    problems = {"/".join(_key(o)): errs for o in objs if (errs := _errors(o))}
    assert not problems


def test_the_schema_checks_catch_what_they_must() -> None:
    """Not vacuous: a ServiceMonitor with an unknown field, a PrometheusRule with a mistyped `for` and a Deployment
    with a string for replicas are refused."""
    sm = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "x"},
        "spec": {"selector": {}, "endpoints": [{"port": "metrics", "bogus": 1}]},
    }
    assert any("bogus" in e for e in _errors(sm))
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "x"},
        "spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "up", "for": "five minutes"}]}]},
    }
    assert _errors(rule)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {"replicas": "2"}}
    assert _errors(deployment)


def test_the_vendored_schemas_cite_their_source() -> None:
    readme = (PROMETHEUS_OPERATOR / "README.md").read_text()
    for path in sorted(PROMETHEUS_OPERATOR.glob("*.schema.json")):
        source = json.loads(path.read_text())["source"]
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
        assert source["repository"] == "github.com/prometheus-operator/prometheus-operator"
        assert source["commit"] in readme and source["path"] in readme


def test_the_base_installs_exactly_what_the_file_install_installs() -> None:
    """`kubectl apply -k manifests/` and `kubectl apply -f crds/ -f manifests/<each required file>`: the same objects,
    field for field (the base's image and replicas are the Deployment file's)."""
    files = [ROOT / "crds" / "podgroups.yaml", *(p for p in sorted(BASE.glob("*.yaml")) if p.name not in NOT_IN_BASE)]
    from_files = {_key(o): o for path in files for o in _docs(path)}
    from_base = {_key(o): o for o in rendered(BASE)}
    assert sorted(from_base) == sorted(from_files)
    for key, obj in from_files.items():
        assert from_base[key] == obj, key


def _kustomization(directory: Path) -> dict[str, Any]:
    (path,) = [p for p in (directory / "kustomization.yaml", directory / "Kustomization") if p.exists()]
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict)
    return doc


def _set_image_and_replicas(directory: Path) -> tuple[str, int]:
    """The image and the replica count a kustomization sets (an overlay's own, else its base's)."""
    base = _kustomization(BASE)
    (image,) = _kustomization(directory).get("images") or base["images"]
    (replicas,) = _kustomization(directory).get("replicas") or base["replicas"]
    assert image["name"] == "gangsched" and replicas["name"] == "gangsched"
    return f"{image.get('newName', 'gangsched')}:{image['newTag']}", int(replicas["count"])


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=_ids(KUSTOMIZATIONS))
def test_image_and_replicas_are_the_ones_the_kustomization_sets(directory: Path) -> None:
    image, replicas = _set_image_and_replicas(directory)
    deployment = _one(rendered(directory), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert (container["image"], deployment["spec"]["replicas"]) == (image, replicas)


def test_an_overlay_of_your_own_sets_image_and_replicas_in_one_place_and_changes_nothing_else(tmp_path: Path) -> None:
    overlay = tmp_path / "mine"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [os.path.relpath(BASE, overlay)],
                "images": [{"name": "gangsched", "newName": "registry.example.org/team/gangsched", "newTag": "9.9.9"}],
                "replicas": [{"name": "gangsched", "count": 3}],
            }
        )
    )
    mine = {_key(o): o for o in _render(overlay)}
    base = {_key(o): o for o in rendered(BASE)}
    assert sorted(mine) == sorted(base)
    key = ("Deployment", "gangsched-system", "gangsched")
    deployment = mine.pop(key)
    assert deployment["spec"]["replicas"] == 3
    assert (
        deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.org/team/gangsched:9.9.9"
    )
    assert all(obj == base[k] for k, obj in mine.items())
    deployment["spec"]["replicas"] = base[key]["spec"]["replicas"]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "gangsched:0.1.0"
    assert deployment == base[key]


def _pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    return dict(deployment["spec"]["template"]["metadata"]["labels"])


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=_ids(KUSTOMIZATIONS))
def test_every_install_keeps_the_grace_period_the_network_policy_and_a_drainable_pdb(directory: Path) -> None:
    objs = rendered(directory)
    deployment = _one(objs, "Deployment")
    (file_deployment,) = [d for d in _docs(BASE / "deployment.yaml") if d["kind"] == "Deployment"]
    grace = file_deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= 15  # the worst case of a stop during an API stall, with a margin (manifests/deployment.yaml)
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == grace
    labels = _pod_labels(deployment)
    policy = _one(objs, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    for pdb in (o for o in objs if o["kind"] == "PodDisruptionBudget"):
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
        # minAvailable >= replicas: no voluntary eviction ever allowed, every node drain blocked
        assert pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    if deployment["spec"]["replicas"] >= 2:
        assert [o for o in objs if o["kind"] == "PodDisruptionBudget"], "two replicas need a PDB to stay one up"
    service = _one(objs, "Service")
    assert service["spec"]["selector"].items() <= labels.items()


def test_the_versions_agree_package_base_image_tag_and_dockerfile_label() -> None:
    pyproject = re.search(r'(?m)^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pyproject and pyproject.group(1) == gangsched.__version__
    (image,) = _kustomization(BASE)["images"]
    assert image["newTag"] == gangsched.__version__
    dockerfile = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]  # labels of an earlier stage are not in the image
    labels = dict(re.findall(r'(org\.opencontainers\.image\.[a-z]+)="([^"]*)"', final_stage))
    assert labels["org.opencontainers.image.version"] == gangsched.__version__
    assert labels["org.opencontainers.image.title"] == "gangsched"


OVERLAYS_WITH_MONITORING = [d for d in OVERLAYS if "monitoring" in json.dumps(_kustomization(d).get("components"))]


def test_an_overlay_ships_the_monitoring_component() -> None:
    assert OVERLAYS_WITH_MONITORING


@pytest.mark.parametrize("directory", OVERLAYS_WITH_MONITORING, ids=_ids(OVERLAYS_WITH_MONITORING))
def test_the_service_monitor_scrapes_the_metrics_service_and_the_rule_has_the_alerts(directory: Path) -> None:
    objs = rendered(directory)
    service = _one(objs, "Service")
    monitor = _one(objs, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    port_names = {p["name"] for p in service["spec"]["ports"]}
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= port_names
    rule = _one(objs, "PrometheusRule")
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r}
    assert set(ALERTS) <= set(alerts)
    for name, metric in ALERTS.items():
        assert re.search(rf"\b{metric}\b", alerts[name]["expr"]), (name, alerts[name]["expr"])
        assert alerts[name]["labels"]["severity"] in {"critical", "warning"}
        assert alerts[name]["annotations"]["summary"]
    dashboard = _one([o for o in objs if o["kind"] == "ConfigMap"], "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["gangsched-dashboard.json"]) == json.loads(
        (MONITORING / "gangsched-dashboard.json").read_text()
    )


def test_the_production_overlay_raises_the_waiting_threshold() -> None:
    """N of "gangs waiting longer than N" is changed by a patch (the overlay shows how)."""
    component = {r["alert"]: r for r in _docs(MONITORING / "prometheusrule.yaml")[0]["spec"]["groups"][0]["rules"]}
    rule = _one(rendered(ROOT / "deploy" / "overlays" / "production"), "PrometheusRule")
    overlay = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    assert "> 3600 " in component["GangschedGangWaitingTooLong"]["expr"]
    assert "> 7200 " in overlay["GangschedGangWaitingTooLong"]["expr"]
    assert {k: v for k, v in overlay.items() if k != "GangschedGangWaitingTooLong"} == {
        k: v for k, v in component.items() if k != "GangschedGangWaitingTooLong"
    }


INSTALL_DOC = ROOT / "docs" / "install.md"


def _doc_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", INSTALL_DOC.read_text(), re.S)


def test_the_install_docs_overlay_and_patches_render_as_documented(tmp_path: Path) -> None:
    """docs/install.md's own overlay (image, replicas), with its NetworkPolicy patch and the monitoring component
    added, renders: the snippets a user copies work, and do what the page says."""
    (overlay_text,) = [b for b in _doc_blocks("yaml") if "kind: Kustomization" in b]
    overlay = yaml.safe_load(overlay_text)
    assert overlay["resources"] == ["../gangsched/manifests"]  # a clone next to the overlay, as the page says
    (patch_text,) = [b for b in _doc_blocks("yaml") if b.startswith("patches:")]
    (component_text,) = [b for b in _doc_blocks("yaml") if b.startswith("components:")]
    clone = tmp_path / "gangsched"
    clone.symlink_to(ROOT)
    mine = tmp_path / "my-gangsched"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(overlay_text + patch_text + component_text)
    objs = _render(mine)
    deployment = _one(objs, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/gangsched:0.1.0"
    policy = _one(objs, "NetworkPolicy")
    assert policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "observability"
    }
    assert {"ServiceMonitor", "PrometheusRule"} <= {o["kind"] for o in objs}
    assert not {"/".join(_key(o)): e for o in objs if (e := _errors(o))}


def test_the_install_docs_file_list_is_the_base() -> None:
    """'Without kustomize': the `kubectl apply -f` list applies what the base lists."""
    (command,) = [
        line
        for b in _doc_blocks("sh")
        for line in [b.replace("\\\n", " ")]
        if line.startswith("kubectl apply -f crds/")
    ]
    files = set(re.findall(r"-f (\S+)", command))
    base = _kustomization(BASE)["resources"]
    assert files == {"crds/", *(f"manifests/{r}" for r in base if r != "../crds")}
