"""`gangsched run` failing as a user meets it (issue 27 item 1): each failure is one or two lines on stderr naming
the problem and the fix, with the exit code of docs/cli.md's table (gangsched/exits.py), and no traceback.

The real command in its own process: a kubeconfig that does not exist or is not YAML (exit 2, bad input), a server
that does not answer (a closed loopback port) and credentials the emulator refuses (401) (exit 3), a metrics port
already taken (exit 5). Credentials for a plain-http server: tests/e2e/test_cli_run_security.py.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from gangsched.exits import ExitCode
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.processes import free_port
from tests.integration.harness import service_account_kubeconfig

pytestmark = pytest.mark.e2e


def gangsched_run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(home)  # no ~/.kube/config to fall back on
    command = [sys.executable, "-m", "gangsched", "run", *args]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=60, env=env)


def assert_reported(result: subprocess.CompletedProcess[str], code: ExitCode, *needles: str) -> list[str]:
    """The exit code, the lines of stderr naming the problem (and a fix line), no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith(("gangsched run:", "  fix:"))]
    assert lines and lines[0].startswith("gangsched run: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)
    return lines


def test_missing_kubeconfig_names_the_file_and_the_fix(tmp_path: Path) -> None:
    result = gangsched_run("--kubeconfig", str(tmp_path / "nope.kubeconfig"), home=tmp_path)
    lines = assert_reported(result, ExitCode.USAGE, "nope.kubeconfig: no such file", "fix: pass --kubeconfig PATH")
    assert len(lines) == 2


def test_no_kubeconfig_at_all_and_not_in_a_cluster(tmp_path: Path) -> None:
    result = gangsched_run(home=tmp_path)
    assert_reported(result, ExitCode.USAGE, "no kubeconfig was found", "KUBECONFIG")


def test_a_kubeconfig_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.kubeconfig"
    bad.write_text("clusters: [\n")
    result = gangsched_run("--kubeconfig", str(bad), home=tmp_path)
    lines = assert_reported(result, ExitCode.USAGE, "cannot be read as YAML")
    assert len(lines) == 2 and len(result.stderr.splitlines()) == 2, result.stderr


def test_a_server_that_does_not_answer_fails_in_seconds(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    kubeconfig = tmp_path / "down.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = gangsched_run("--kubeconfig", str(kubeconfig), home=tmp_path)
    assert_reported(
        result, ExitCode.API, f"cannot reach the API server at https://127.0.0.1:{port}: connection refused"
    )
    assert "kubectl cluster-info" in result.stderr


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=1, node_resources="cpu=8,memory=32Gi,pods=110") as c:
        yield c


async def test_credentials_the_server_refuses(cluster: Cluster, tmp_path: Path) -> None:
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    for user in config["users"]:
        user["user"] = {"token": "not-a-token"}
    kubeconfig = tmp_path / "wrong-token.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = await asyncio.to_thread(gangsched_run, "--kubeconfig", str(kubeconfig), home=tmp_path)
    assert_reported(result, ExitCode.API, "refused the credentials (401 Unauthorized)", "fix: renew the token")


async def test_a_metrics_port_already_taken(cluster: Cluster, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "config.yaml"
        config.write_text(f"namespace: default\nmetricsPort: {port}\nprobesPort: {free_port()}\n")
        result = await asyncio.to_thread(
            gangsched_run, "--kubeconfig", cluster.kubeconfig, "--config", str(config), home=tmp_path
        )
    lines = assert_reported(result, ExitCode.LISTEN, f"metricsPort {port} is already in use")
    assert lines[1].startswith("  fix: stop what listens on port"), lines
    assert "Unclosed client session" not in result.stderr, result.stderr


async def test_an_identity_without_rbac_is_told_which_manifest_grants_it(cluster: Cluster, tmp_path: Path) -> None:
    await cluster.client.create(
        "/api/v1/namespaces/default/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}},
    )
    kubeconfig = await service_account_kubeconfig(cluster.kubeconfig, namespace="default", name="nobody")
    result = await asyncio.to_thread(gangsched_run, "--kubeconfig", kubeconfig, home=tmp_path)
    lines = assert_reported(result, ExitCode.API, f"forbidden by the API server at {cluster.url}")
    assert "nodes" in lines[0] and "manifests/rbac.yaml" in lines[1], lines
