"""The exit codes of every command (`gangsched run | demo | sim serve | sim replay | sim record | bench`, `kubectl
gang`) and the one way they report a failure. docs/cli.md documents the table; it is a contract (scripts test it).

Contract:
- `ExitCode`: OK 0; FAILURE 1 (the work failed, or an unexpected error); USAGE 2 (a bad option, value or input
  file, argparse's code too); API 3 (the API server unreachable, or refusing credentials or permissions);
  NOT_FOUND 4 (an object named on the command line does not exist); LISTEN 5 (a port to serve on taken).
- `CommandError(code, problem, fix=None)`: raised by a command's parts, caught once by its entry point;
  `report(command, error) -> int` prints `<command>: <problem>` and `  fix: <fix>` to stderr, one line each, never
  a traceback, and returns the code. `writable_file(path, option)`, `writable_dir(...)`: output paths checked first.
This module imports nothing of the project: every layer may use it. More: docs/modules.md#exitspy.
"""

from __future__ import annotations

import enum
import os
import sys
import tempfile
from pathlib import Path
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


def writable_file(path: str, option: str) -> None:
    """CommandError(USAGE) unless `path` can be written (an existing writable file, or a new file in a writable
    directory); nothing is created. Commands call it before any long work."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise CommandError(ExitCode.USAGE, f"{option} {path}: is a directory", f"give {option} a file path")
    if not parent.is_dir():
        raise CommandError(
            ExitCode.USAGE,
            f"{option} {path}: directory {parent} does not exist",
            f"create it, or give {option} a path in a directory that exists",
        )
    if not os.access(target if target.exists() else parent, os.W_OK):
        raise CommandError(ExitCode.USAGE, f"{option} {path}: not writable", f"give {option} a path you may write")


def writable_dir(path: str, option: str) -> None:
    """CommandError(USAGE) unless directory `path` exists or can be created, and a file can be written in it (the
    directory is created; the probe file is removed). Commands call it before any long work."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise CommandError(
            ExitCode.USAGE,
            f"{option} {path}: cannot write there ({exc.strerror or exc})",
            f"give {option} a directory you may write (it is created if missing)",
        ) from None
