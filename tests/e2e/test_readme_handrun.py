"""The README's "Try it by hand" commands, run as a user runs them: `gangsched sim serve`, `gangsched run`, and the
real kubectl applying an example gang, which must end bound.

The commands are read from README.md (the sh block of "## Try it by hand"), so the README cannot drift from what
works; its `source .venv/bin/activate` line is what the test's PATH (the virtualenv's bin first) does. Two
substitutions only: the kubeconfig path goes to the test's temporary directory, and `gangsched run`
gets a config file with free metrics and probe ports (parallel test runs would clash on the defaults 8080/8081).
The emulated cluster enforces RBAC (plugin/pkg/auth/authorizer/rbac/rbac.go) and the kubeconfig is an admin's
(kubectl only sends credentials over https: client-go's clientcmd), so this also checks that kubectl works
against the https emulator with a token.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.e2e.processes import free_port, stop_processes, wait_until
from tests.tools import need_tool

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_PHASES = {
    "default/train-small": "Running",
    "gang-group-a/trainer": "Running",
    "gang-group-b/evaluator": "Running",
    "default/train-huge": "Timeout",
    "default/koord-small": "Running",
    "default/topo-train": "Running",
}


def readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Try it by hand", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README.md: no sh block under 'Try it by hand'"
    commands = [shlex.split(line, comments=True) for line in block.group(1).splitlines()]
    return [c for c in commands if c and c[0] not in ("source", ".")]


def test_readme_hand_run_schedules_a_gang(tmp_path: Path) -> None:
    need_tool("kubectl")
    bin_dir = Path(sys.executable).parent
    commands = readme_commands()
    assert [c[:2] for c in commands[:2]] == [["gangsched", "sim"], ["gangsched", "run"]]
    kubeconfig = str(tmp_path / "sim.kubeconfig")

    def resolve(cmd: list[str]) -> list[str]:
        out = [kubeconfig if a == "sim.kubeconfig" else a for a in cmd]
        if out[0] == "gangsched":
            out[0] = str(bin_dir / "gangsched")
        elif out[0] == "kubectl":
            out[1:1] = [f"--cache-dir={tmp_path / 'kube-cache'}"]
        return out

    config = tmp_path / "operator.yaml"
    config.write_text(f"metricsPort: {free_port()}\nprobesPort: {free_port()}\n")
    env = {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
    serve_out = open(tmp_path / "serve.log", "w+")  # noqa: SIM115 (closed in the finally below)
    run_log = open(tmp_path / "run.log", "w+")  # noqa: SIM115 (closed in the finally below)
    serve = subprocess.Popen(
        resolve(commands[0]), cwd=ROOT, env=env, stdout=serve_out, stderr=subprocess.STDOUT, text=True
    )
    operator = None
    try:
        wait_until(
            lambda: "press Ctrl-C" in (tmp_path / "serve.log").read_text() or serve.poll() is not None,
            timeout=60,
            what="sim serve ready",
        )
        assert serve.poll() is None, (tmp_path / "serve.log").read_text()
        operator = subprocess.Popen(
            [*resolve(commands[1]), "--config", str(config)],
            cwd=ROOT,
            env=env,
            stdout=run_log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for cmd in commands[2:]:
            result = subprocess.run(
                resolve(cmd), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
            )
            assert result.returncode == 0, f"{shlex.join(cmd)}:\n{result.stdout}\n{result.stderr}"

        def phases() -> dict[str, str]:
            result = subprocess.run(
                resolve(
                    [
                        "kubectl",
                        "--kubeconfig",
                        "sim.kubeconfig",
                        "get",
                        "podgroups.scheduling.x-k8s.io",
                        "-A",
                        "-o",
                        "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.status.phase}{'\\n'}{end}",
                    ]
                ),
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            return dict(line.split("=", 1) for line in result.stdout.split() if "=" in line)

        def bound() -> bool:
            result = subprocess.run(
                resolve(
                    [
                        "kubectl",
                        "--kubeconfig",
                        "sim.kubeconfig",
                        "get",
                        "pods",
                        "-n",
                        "default",
                        "-o",
                        "jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{'\\n'}{end}",
                    ]
                ),
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            placed = dict(line.split("=", 1) for line in result.stdout.split() if "=" in line)
            return len([n for n, node in placed.items() if n.startswith("train-small-") and node]) == 4

        wait_until(lambda: bound() or operator.poll() is not None, timeout=90, what="the example gang bound")
        assert operator.poll() is None, (tmp_path / "run.log").read_text()
        if any("manifests/examples/" in cmd for cmd in commands[2:]):
            # the README's table for every example on these 4 nodes: train-huge reserves a node (its waiting
            # time starts only then) and times out after 20 s; the others run
            wait_until(lambda: phases() == EXPECTED_PHASES, timeout=75, what=f"the README's table: {phases()}")
        log = (tmp_path / "run.log").read_text()
        assert "acquired lease gangsched-system/gangsched" in log
        assert " ERROR " not in log and "WARNING gangsched.k8s.lease" not in log, log
    finally:
        stop_processes(operator, serve)
        serve_out.close()
        run_log.close()
