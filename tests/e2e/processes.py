"""Helpers of the e2e tests that drive real processes: a free loopback port, and waiting on a real condition."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll predicate() (a subprocess's output, the API) until it holds; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        time.sleep(0.2)  # polling a real condition with a deadline


def stop_processes(*procs: subprocess.Popen[str] | None) -> None:
    """SIGINT each process still running (as Ctrl-C), then kill it if it has not ended within 30 s."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.send_signal(2)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
