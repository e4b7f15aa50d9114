"""The shipped manifests and image recipe are deployable on a real cluster.

Oracles, none of them ours:
- every built-in object validates against Kubernetes 1.32's own OpenAPI schemas (as JSON Schema, shipped by the
  `kubernetes-validate` package), strictly (no unknown fields); PodGroups against the CRD's structural schema;
- the Deployment's pod meets the Pod Security Standards' "restricted" profile, rule by rule as the
  PodSecurity admission checks them (staging/src/k8s.io/pod-security-admission/policy/check_*.go:
  runAsNonRoot, allowPrivilegeEscalation, capabilities drop ALL, seccompProfile, volume types, host namespaces,
  privileged, hostPorts, runAsUser != 0);
- a user PriorityClass may not exceed HighestUserDefinablePriority (pkg/apis/scheduling/types.go: 1e9) nor use
  the reserved `system-` prefix;
- the image recipe is multi-stage, runs a numeric non-root user and `gangsched` as its entrypoint.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim import schema as crd_schema

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="the sim extra (kubernetes-validate) is not installed"
)

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "manifests").rglob("*.yaml"))
CRDS = sorted((ROOT / "crds").glob("*.yaml"))
K8S_VERSION = "1.32.0"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
RESTRICTED_VOLUME_TYPES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in CRDS:
        for crd in _docs(path):
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                out[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return out


def _objects() -> list[Any]:
    return [
        pytest.param(obj, id=f"{path.relative_to(ROOT).as_posix()}:{obj['kind']}/{obj['metadata']['name']}")
        for path in [*CRDS, *MANIFESTS]
        for obj in _docs(path)
    ]


@pytest.mark.parametrize("obj", _objects())
def test_every_manifest_object_validates_against_the_real_schema(obj: dict[str, Any]) -> None:
    custom = _crd_schemas().get((obj["apiVersion"], obj["kind"]))
    if custom is not None:
        errors = crd_schema.validate(obj, custom, strict=True)
        assert not errors, [str(e) for e in errors]
        return
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_real_schema_check_catches_what_it_must() -> None:
    """The validator is not a no-op: a mistyped Lease and an unknown field are refused."""
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "x"},
                "spec": {"leaseDurationSeconds": "15"},
            },
            K8S_VERSION,
            strict=True,
        )
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "bogus": 1}, K8S_VERSION, strict=True
        )


def _deployment() -> dict[str, Any]:
    (dep,) = [d for d in _docs(ROOT / "manifests" / "deployment.yaml") if d["kind"] == "Deployment"]
    return dep


def _restricted_violations(pod_spec: dict[str, Any]) -> list[str]:
    """The Pod Security Standards' restricted profile (baseline included), as PodSecurity admission checks it."""
    problems: list[str] = []
    pod_sc = pod_spec.get("securityContext") or {}
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(host):
            problems.append(f"spec.{host}")
    for volume in pod_spec.get("volumes") or []:
        types = set(volume) - {"name"}
        if not types <= RESTRICTED_VOLUME_TYPES:
            problems.append(f"volume {volume['name']}: {sorted(types)}")
    if (pod_sc.get("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost"):
        containers_ok = all(
            ((c.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
            in ("RuntimeDefault", "Localhost")
            for c in pod_spec["containers"]
        )
        if not containers_ok:
            problems.append("seccompProfile")
    if pod_sc.get("runAsUser") == 0:
        problems.append("pod runAsUser 0")
    for c in [*(pod_spec.get("initContainers") or []), *pod_spec["containers"]]:
        sc = c.get("securityContext") or {}
        name = c["name"]
        if sc.get("privileged"):
            problems.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation must be false")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            problems.append(f"{name}: capabilities must drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: capabilities added {caps['add']}")
        if not (
            sc.get("runAsNonRoot") is True
            or (pod_sc.get("runAsNonRoot") is True and sc.get("runAsNonRoot") is not False)
        ):
            problems.append(f"{name}: runAsNonRoot")
        if sc.get("runAsUser") == 0:
            problems.append(f"{name}: runAsUser 0")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            problems.append(f"{name}: hostPort")
    return problems


def test_deployment_meets_the_restricted_pod_security_profile() -> None:
    pod_spec = _deployment()["spec"]["template"]["spec"]
    assert _restricted_violations(pod_spec) == []
    (container,) = pod_spec["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert isinstance(pod_spec["securityContext"]["runAsUser"], int) and pod_spec["securityContext"]["runAsUser"] > 0


def test_the_profile_check_catches_a_root_container() -> None:
    bad = {
        "containers": [{"name": "c", "image": "x", "securityContext": {"privileged": True}}],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
    }
    assert len(_restricted_violations(bad)) >= 5


def test_deployment_is_highly_available_with_probes_resources_and_its_own_priority_class() -> None:
    dep = _deployment()
    assert dep["spec"]["replicas"] >= 2
    pod_spec = dep["spec"]["template"]["spec"]
    (container,) = pod_spec["containers"]
    assert container["startupProbe"]["httpGet"]["path"] == "/readyz/synced"  # caches only: API problems restart nothing
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind])
    (pc,) = _docs(ROOT / "manifests" / "priorityclass.yaml")
    assert pod_spec["priorityClassName"] == pc["metadata"]["name"]
    assert not pc["metadata"]["name"].startswith("system-")
    assert pc["value"] <= HIGHEST_USER_DEFINABLE_PRIORITY
    (pdb,) = [d for d in _docs(ROOT / "manifests" / "deployment.yaml") if d["kind"] == "PodDisruptionBudget"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    assert pdb["spec"]["minAvailable"] == 1


def test_flowschema_routes_the_service_account_to_its_own_priority_level() -> None:
    docs = {d["kind"]: d for d in _docs(ROOT / "manifests" / "flowcontrol.yaml")}
    fs, plc = docs["FlowSchema"], docs["PriorityLevelConfiguration"]
    assert fs["spec"]["priorityLevelConfiguration"]["name"] == plc["metadata"]["name"]
    (rule,) = fs["spec"]["rules"]
    (subject,) = rule["subjects"]
    assert subject["serviceAccount"] == {"name": "gangsched", "namespace": "gangsched-system"}
    assert plc["spec"]["type"] == "Limited"


DOCKERFILE = ROOT / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    lines = DOCKERFILE.read_text().replace("\\\n", " ").splitlines()
    out = []
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_is_multi_stage_pinned_non_root_with_gangsched_as_entrypoint() -> None:
    steps = _instructions()
    args = {rest.split("=", 1)[0]: rest.split("=", 1)[1] for word, rest in steps if word == "ARG" and "=" in rest}
    froms = [rest for word, rest in steps if word == "FROM"]
    assert len(froms) >= 2, "multi-stage"
    for image in args.values():
        assert ":" in image and not image.endswith(":latest"), f"base image {image} must be pinned"
    (user,) = [rest for word, rest in steps if word == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root user (runAsNonRoot can check it)"
    (entrypoint,) = [rest for word, rest in steps if word == "ENTRYPOINT"]
    assert entrypoint.startswith("["), "exec form: no shell needed at run time"
    assert "gangsched" in entrypoint
    (cmd,) = [rest for word, rest in steps if word == "CMD"]
    assert cmd.startswith('["run"')
    assert re.search(r"pip install .*\s\.(\s|$)", DOCKERFILE.read_text()), (
        "the package is installed from the repository"
    )
    assert int(_deployment()["spec"]["template"]["spec"]["securityContext"]["runAsUser"]) == int(uid)


def _docker_daemon() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, timeout=20, check=False).returncode == 0


@pytest.mark.skipif(not _docker_daemon(), reason="no container engine can run on this machine (docker info fails)")
def test_the_image_builds() -> None:  # pragma: no cover - needs a container engine
    subprocess.run(["docker", "build", "-t", "gangsched:test", str(ROOT)], check=True, timeout=1800)
