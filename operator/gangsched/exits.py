"""The exit codes of every command (`gangsched run | demo | sim serve | sim replay | sim record | bench`, `kubectl
gang`) and the one way they report a failure. docs/cli.md documents the table; it is a contract (scripts test it).

Contract:
- `ExitCode`: OK 0; FAILURE 1 (the work failed once started, or an unexpected error); USAGE 2 (a bad option, value
  or input file: a kubeconfig missing or unreadable, credentials for a plain-http server, an output path that
  cannot be written; argparse's own code); API 3 (the API server cannot be reached, or refuses the credentials or
  the permissions: connection refused, DNS, TLS, 401, 403); NOT_FOUND 4 (an object named on the command line
  does not exist); LISTEN 5 (a port to serve on is taken or not allowed).
- `CommandError(code, problem, fix=None)`: what a command's parts raise; the command's entry point catches it once
  and calls `report`.
- `report(command, error) -> int` prints `<command>: <problem>` and, when there is a fix, `  fix: <fix>` to stderr
  (each on one line: whitespace, newlines included, collapsed), never a traceback, and returns the exit code.
This module imports nothing of the project: every layer may use it.
"""

from __future__ import annotations

import enum
import sys
from typing import TextIO

MAX_LINE = 300  # characters of a problem or fix line: a YAML parser's message can be a page long


class ExitCode(enum.IntEnum):
    OK = 0
    FAILURE = 1
    USAGE = 2
    API = 3
    NOT_FOUND = 4
    LISTEN = 5


class CommandError(Exception):
    """A failure a user can act on: what went wrong (`problem`) and what to do (`fix`), with its exit code."""

    def __init__(self, code: ExitCode, problem: str, fix: str | None = None) -> None:
        super().__init__(problem)
        self.code = code
        self.problem = problem
        self.fix = fix


def one_line(text: str) -> str:
    """`text` on one line (runs of whitespace become one space), at most MAX_LINE characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_LINE else flat[: MAX_LINE - 3] + "..."


def report(command: str, error: CommandError, stream: TextIO | None = None) -> int:
    """Print the error as one or two lines on stderr; return its exit code."""
    out = stream if stream is not None else sys.stderr
    print(f"{command}: {one_line(error.problem)}", file=out)
    if error.fix:
        print(f"  fix: {one_line(error.fix)}", file=out)
    return int(error.code)
