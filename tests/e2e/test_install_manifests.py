"""Installing gangsched as the README says works against an API server that enforces RBAC, and the operator,
started as the Deployment starts it and with only its ServiceAccount's permissions, schedules a gang.

What is checked, with the real kubectl against `gangsched sim serve` (https, tokens, RBAC as
plugin/pkg/auth/authorizer/rbac/rbac.go; typed built-in kinds checked against the v1.32 schemas):
- the README's install command (`kubectl apply -f crds/ -f manifests/...`) succeeds: CRD, namespace,
  PriorityClass, ServiceAccount/ClusterRole/Role/bindings, FlowSchema + PriorityLevelConfiguration, Deployment and
  its PodDisruptionBudget are all valid objects of a 1.32 apiserver;
- `kubectl create token gangsched -n gangsched-system` (TokenRequest) gives the ServiceAccount's token, and the
  operator runs with it: the container's `args` from manifests/deployment.yaml behind the image's entrypoint
  (`python3 -m gangsched`, i.e. `gangsched`), POD_NAME as its identity;
- a gang applied by the admin is bound by that operator.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.processes import free_port, stop_processes, wait_until
from tests.tools import need_tool

ROOT = Path(__file__).resolve().parents[2]


def _install_command() -> list[str]:
    text = (ROOT / "README.md").read_text().split("## Install on a cluster", 1)[1]
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md: no sh block under 'Install on a cluster'"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    (apply,) = [shlex.split(line.split("#", 1)[0]) for line in lines if line.strip().startswith("kubectl apply")]
    return apply


def _deployment_container() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((ROOT / "manifests" / "deployment.yaml").read_text()) if d]
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_readme_install_then_the_deployments_command_schedules_as_its_service_account(tmp_path: Path) -> None:
    need_tool("kubectl")
    bin_dir = Path(sys.executable).parent
    admin = str(tmp_path / "admin.kubeconfig")
    env = {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}

    def kubectl(*args: str, kubeconfig: str = admin, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert not check or result.returncode == 0, f"kubectl {shlex.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result

    serve_log = open(tmp_path / "serve.log", "w+")  # noqa: SIM115 (closed in the finally below)
    run_log = open(tmp_path / "run.log", "w+")  # noqa: SIM115 (closed in the finally below)
    serve = subprocess.Popen(
        [str(bin_dir / "gangsched"), "sim", "serve", "--nodes", "4", "--kubeconfig", admin],
        cwd=ROOT,
        env=env,
        stdout=serve_log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    operator = None
    try:
        wait_until(
            lambda: "press Ctrl-C" in (tmp_path / "serve.log").read_text() or serve.poll() is not None,
            timeout=60,
            what="sim serve ready",
        )
        assert serve.poll() is None, (tmp_path / "serve.log").read_text()

        install = _install_command()
        assert install[:2] == ["kubectl", "apply"]
        out = kubectl(*install[1:]).stdout
        for created in (
            "customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.x-k8s.io",
            "priorityclass.scheduling.k8s.io/gangsched-critical",
            "flowschema.flowcontrol.apiserver.k8s.io/gangsched",
            "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/gangsched",
            "deployment.apps/gangsched",
            "poddisruptionbudget.policy/gangsched",
        ):
            assert created in out, out

        token = kubectl("create", "token", "gangsched", "-n", "gangsched-system").stdout.strip()
        assert token
        service_account = str(tmp_path / "sa.kubeconfig")
        shutil.copy(admin, service_account)
        kubectl("config", "set-credentials", "gangsched", f"--token={token}", kubeconfig=service_account)
        kubectl("config", "set-context", "--current", "--user=gangsched", kubeconfig=service_account)
        assert (
            kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=service_account).stdout
            == "system:serviceaccount:gangsched-system:gangsched"
        )

        container = _deployment_container()
        args = [str(a) for a in container["args"]]
        assert args[0] == "run"
        config = tmp_path / "operator.yaml"  # free ports: parallel runs would clash on the defaults 8080/8081
        config.write_text(f"metricsPort: {free_port()}\nprobesPort: {free_port()}\n")
        operator_env = {**env, "POD_NAME": "gangsched-test-0", "POD_NAMESPACE": "gangsched-system"}
        operator = subprocess.Popen(
            [str(bin_dir / "gangsched"), *args, "--kubeconfig", service_account, "--config", str(config)],
            cwd=ROOT,
            env=operator_env,
            stdout=run_log,
            stderr=subprocess.STDOUT,
            text=True,
        )

        kubectl("apply", "-f", "manifests/examples/gang-fits.yaml")

        def bound() -> bool:
            result = kubectl(
                "get",
                "pods",
                "-n",
                "default",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{'\\n'}{end}",
                check=False,
            )
            placed = dict(line.split("=", 1) for line in result.stdout.split() if "=" in line)
            return len([n for n, node in placed.items() if n.startswith("train-small-") and node]) == 4

        wait_until(lambda: bound() or operator.poll() is not None, timeout=90, what="the example gang bound")
        assert operator.poll() is None, (tmp_path / "run.log").read_text()
        log = (tmp_path / "run.log").read_text()
        assert "forbidden" not in log.lower(), log
    finally:
        stop_processes(operator, serve)
        serve_log.close()
        run_log.close()
