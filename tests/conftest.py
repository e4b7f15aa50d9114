"""Shared fixtures: an emulator API server per test, its kubeconfig, clients, and a real-kubectl runner.

- `apiserver`: a started `gangsched.sim.apiserver.ApiServer` on a free loopback port, stopped afterwards.
- `kubeconfig`: the path of a kubeconfig written for it (plain http, context "gangsched-sim").
- `kube_env`: a copy of os.environ with KUBECONFIG pointing at it, for subprocesses (os.environ is not touched).
- `kube`: the project's `KubeClient` connected through that kubeconfig.
- `kubectl(*args, input=None, check=False, timeout=60) -> CompletedProcess[str]`: the real kubectl binary with
  `--kubeconfig`; when kubectl is not installed it skips the test, or fails it in CI (tests/tools.py).
- Every kubectl of the run caches its discovery in a directory of this run's own (KUBECACHEDIR): kubectl keys that
  cache by host and port only, so another run's emulator on a reused port, serving other API groups (e.g. the
  1.37 `scheduling.k8s.io` PodGroups, or not), would otherwise map `podgroups` to a group this one does not serve.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.apiserver import ApiServer
from tests.tools import need_tool

KubectlRunner = Callable[..., "subprocess.CompletedProcess[str]"]

os.environ["KUBECACHEDIR"] = tempfile.mkdtemp(prefix="gangsched-tests-kubecache-")


@pytest.fixture
async def apiserver() -> AsyncIterator[ApiServer]:
    server = ApiServer(history_limit=1000, bookmark_interval=0.5)
    await server.start(host="127.0.0.1", port=0)
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def kubeconfig(apiserver: ApiServer, tmp_path: Path) -> Path:
    return apiserver.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kube_env(kubeconfig: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["KUBECONFIG"] = str(kubeconfig)
    return env


@pytest.fixture
async def kube(kubeconfig: Path) -> AsyncIterator[KubeClient]:
    client = await KubeClient.connect(str(kubeconfig))
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def kubectl(kubeconfig: Path, kube_env: dict[str, str], tmp_path: Path) -> KubectlRunner:
    binary = need_tool("kubectl")
    cache = tmp_path / "kube-cache"

    def run(
        *args: str, input: str | None = None, check: bool = False, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        env = dict(kube_env)
        env["HOME"] = str(tmp_path)  # kubectl's discovery cache stays per test
        result = subprocess.run(
            [binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
            )
        return result

    return run
