"""`gangsched run --config FILE` with a bad file, as a user starts it: every problem printed, no traceback, exit 2
(issue 22 item 14).

Oracle: kube-scheduler's `--config` handling (cmd/kube-scheduler/app/options: Options.Validate collects every
error of the file and ValidateKubeSchedulerConfiguration returns them as one utilerrors.NewAggregate list, printed
without a stack trace, before the process exits with status 1); kubectl's strict YAML decoding refuses a key
given twice (sigs.k8s.io/yaml: `mapping key "x" already defined`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def run(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gangsched", "run", "--kubeconfig", "/nonexistent", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_problem_of_the_file_is_printed_without_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        "namespace: a\n"
        "scoreStrategy: random\n"
        "leaderElection:\n"
        "  enabled: true\n"
        "  enabled: false\n"
        "  leaseDurationSeconds: -1\n"
        "metricsPort: 70000\n"
        "namespace: b\n"
    )
    done = run(config)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == f"gangsched run: invalid --config {config}: 5 problems:"
    assert sorted(line.strip() for line in lines[1:]) == sorted(
        [
            'namespace: invalid value "given twice": must be given once (line 1 and line 8)',
            'leaderElection.enabled: invalid value "given twice": must be given once (line 4 and line 5)',
            'scoreStrategy: invalid value "random": one of binpack, spread',
            "leaderElection.leaseDurationSeconds: invalid value -1: must be a number > 0",
            "metricsPort: invalid value 70000: must be an integer >= 1 and <= 65535",
        ]
    )


def test_a_deeply_nested_file_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text("namespace: " + "[" * 20_000 + "]" * 20_000 + "\n")
    done = run(config)
    assert done.returncode == 2
    assert "RecursionError" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"gangsched run: invalid --config {config}: 1 problem:",
        '  --config: invalid value "nesting deeper than 32 (line 1)": must nest at most 32 levels',
    ]


def test_a_json_file_with_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "dup.json"
    config.write_text('{"namespace": "a", "namespace": "b"}')
    done = run(config)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert 'namespace: invalid value "given twice": must be given once in its object' in done.stderr


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    done = run(tmp_path / "nope.yaml")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--config: invalid value" in done.stderr and "must be a readable YAML file" in done.stderr
