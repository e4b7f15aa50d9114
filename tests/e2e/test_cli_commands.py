"""The `gangsched` command line as a user meets it (issue 27 item 7), each the real command in its own process:
`--help` says what each command does and where the reference is, `--version` is the package's, `sim serve` documents
its defaults, and failures are one or two lines with the exit code of docs/cli.md (gangsched/exits.py), no
traceback: an output path checked before any work (`sim replay --out`, `sim serve --kubeconfig`), a port in use,
a trace with the wrong columns (named once each).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from gangsched.exits import ExitCode
from tests.e2e.processes import free_port

pytestmark = pytest.mark.e2e


def gangsched(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "gangsched", *args]
    env = dict(os.environ, COLUMNS="200")  # argparse wraps help at $COLUMNS (and breaks words at hyphens)
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def assert_failed(result: subprocess.CompletedProcess[str], code: ExitCode, prefix: str, problem: str) -> list[str]:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith(f"{prefix}: "), result.stderr
    assert problem in lines[0], (problem, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return lines


def test_help_is_for_users_and_names_the_exit_codes_and_the_reference() -> None:
    result = gangsched("--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "gangsched schedules gangs of pods on Kubernetes" in text, text
    for command, words in {
        "run": "run the scheduler",
        "demo": "try it without a cluster",
        "sim": "emulated cluster",
        "bench": "benchmarks",
    }.items():
        assert any(line.split()[:1] == [command] and words in line for line in text.splitlines()), (command, text)
    assert "docs/cli.md" in text and "3 API server unreachable" in text, text
    assert "Contract" not in text and "lazily" not in text, text  # no developer text


def test_version_is_the_package_metadata() -> None:
    result = gangsched("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"gangsched {version('gangsched')}", result


def test_sim_serve_help_documents_nodes_and_node_resources_with_defaults() -> None:
    text = " ".join(gangsched("sim", "serve", "--help").stdout.split())
    assert "--nodes N simulated nodes (default 8" in text, text
    assert "allocatable resources" in text and "(default cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110)" in text, text
    assert "(default gangsched-sim.kubeconfig)" in text, text


def test_replay_checks_out_before_any_replay_runs(tmp_path: Path) -> None:
    result = gangsched("sim", "replay", "--demo", "--no-plots", "--out", "/proc/no-such-dir/out")
    lines = assert_failed(result, ExitCode.USAGE, "gangsched sim replay", "--out /proc/no-such-dir/out: cannot write")
    assert lines[1].startswith("  fix: "), lines
    assert result.stdout == "", result.stdout  # no table: nothing was replayed
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    result = gangsched("sim", "replay", "--demo", "--no-plots", "--out", str(a_file))
    assert_failed(result, ExitCode.USAGE, "gangsched sim replay", f"--out {a_file}: cannot write")


def test_a_trace_with_the_wrong_columns_names_each_column_once(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("id,when\n1,2\n")
    result = gangsched("sim", "replay", "--nodes", "alibaba-2026", "--trace", str(trace), "--out", str(tmp_path))
    (line,) = assert_failed(result, ExitCode.USAGE, "gangsched sim replay", "must be one of the columns")
    columns = line.split("must be one of the columns ", 1)[1].split(", ")
    assert len(columns) == len(set(columns)) and "job_id" in columns and "role_min" in columns, columns


def test_sim_serve_checks_its_kubeconfig_path_first(tmp_path: Path) -> None:
    result = gangsched("sim", "serve", "--nodes", "1", "--kubeconfig", "/proc/no-such-dir/sim.kubeconfig")
    assert_failed(result, ExitCode.USAGE, "gangsched sim serve", "/proc/no-such-dir does not exist")
    assert "Kubernetes API emulator at" not in result.stdout, result.stdout


def test_sim_serve_on_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = gangsched("sim", "serve", "--nodes", "1", "--port", str(port), "--kubeconfig", "k", cwd=tmp_path)
    assert_failed(result, ExitCode.LISTEN, "gangsched sim serve", f"--port {port} is already in use")


def test_replay_from_a_live_cluster_that_cannot_be_reached(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    kubeconfig = tmp_path / "down.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    args = ("sim", "replay", "--kubeconfig", str(kubeconfig), "--synthetic", "--out", str(tmp_path / "out"))
    result = gangsched(*args)
    lines = assert_failed(
        result, ExitCode.API, "gangsched sim replay", "cannot reach the API server: connection refused"
    )
    assert lines[1].startswith("  fix: "), lines
