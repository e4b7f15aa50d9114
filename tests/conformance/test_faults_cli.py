"""`gangsched sim serve --fault ... --faults FILE --fault-seed N` as a user runs it: the cluster is set up without
faults, then the rules apply; bad rules are refused with exit code 2 naming the field. (What each kind imitates:
tests/conformance/test_faults_injection.py.)"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest


async def test_sim_serve_injects_the_faults_of_its_flags_and_file(tmp_path: Path) -> None:
    rules = tmp_path / "faults.json"
    rules.write_text('{"seed": 3, "rules": [{"kind": "http503", "verb": "get", "resource": "nodes", "next": 1}]}')
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gangsched",
        "sim",
        "serve",
        "--nodes",
        "2",
        "--kubeconfig",
        str(tmp_path / "kc"),
        "--no-auth",
        "--fault",
        "kind=http500,verb=list,resource=nodes,next=1",
        "--faults",
        str(rules),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        async with asyncio.timeout(30):
            while not lines or not lines[-1].startswith("try:"):
                line = (await proc.stdout.readline()).decode()
                assert line, (
                    f"sim serve exited early: {lines} {(await proc.stderr.read()).decode() if proc.stderr else ''}"
                )
                lines.append(line.strip())
        match = re.search(r"at (http://\S+) with 2 simulated nodes", lines[0])
        assert match, lines
        assert any("injecting 2 fault rule(s) (seed 3)" in line for line in lines), lines
        async with aiohttp.ClientSession(match.group(1)) as http:
            async with http.get("/api/v1/nodes") as r:  # the nodes were created before the faults started
                assert r.status == 500
            async with http.get("/api/v1/nodes") as r:
                assert r.status == 200 and len((await r.json())["items"]) == 2
            async with http.get("/api/v1/nodes/node-0") as r:
                assert r.status == 503 and "text/html" in r.headers["Content-Type"]
            async with http.get("/sim/faults") as r:
                state = await r.json()
        assert state["seed"] == 3 and state["injected"] == {"http500": 1, "http503": 1}
        assert [rule["kind"] for rule in state["rules"]] == ["http503", "http500"]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            await proc.wait()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--fault", "kind=http418"], "'kind': 'http418' is not allowed: allowed kinds are", id="bad-kind"),
        pytest.param(["--fault", "kind=http500,every=0"], "'every': 0 is not allowed: an integer >= 1", id="bad-every"),
        pytest.param(
            ["--faults", "/nonexistent/faults.yaml"],
            "--faults '/nonexistent/faults.yaml': cannot be read",
            id="missing-file",
        ),
    ],
)
def test_sim_serve_rejects_bad_fault_rules(args: list[str], message: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gangsched", "sim", "serve", "--kubeconfig", str(tmp_path / "kc"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert message in result.stderr
