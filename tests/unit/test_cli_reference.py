"""docs/cli.md stays the reference of the command line: its exit-code table is gangsched/exits.py's, and the
defaults it states for `gangsched sim serve` are the parser's."""

from __future__ import annotations

import re
from pathlib import Path

from gangsched.cli import DEFAULT_NODE_RESOURCES, _build_parser
from gangsched.exits import ExitCode

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_the_exit_code_table_is_the_one_every_command_uses() -> None:
    rows = re.findall(r"^\| (\d+) \| ", _section("Exit codes"), flags=re.MULTILINE)
    assert [int(code) for code in rows] == [int(code) for code in ExitCode]


def test_the_help_names_every_exit_code() -> None:
    epilog = " ".join((_build_parser().epilog or "").split())
    for code in ExitCode:
        assert f"{int(code)} " in epilog, (code, epilog)


def test_sim_serve_defaults_are_the_parsers() -> None:
    section = _section("`gangsched sim serve`")
    assert f"| `--node-resources LIST` | `{DEFAULT_NODE_RESOURCES}` |" in section
    assert "| `--nodes N` | 8 |" in section and "| `--kubeconfig PATH` | `gangsched-sim.kubeconfig` |" in section
