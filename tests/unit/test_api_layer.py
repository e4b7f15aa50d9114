"""One API layer: runtime/ and handlers/ build no API paths or bodies; they call k8s/api.py and k8s/writes.py.

Checked on the source (AST), in every module of runtime/ and handlers/:
- no string literal (f-string parts included) that looks like an API path ("/api/", "/apis/", "/namespaces/", or
  a literal starting "/api");
- no path helper: nothing named `*_path` or `resource_path` defined or imported from gangsched.k8s;
- no patch content type (MERGE_PATCH, STRATEGIC_MERGE_PATCH, JSON_PATCH) imported: the typed calls choose them;
- no raw client verb called (`.request(`, `.list_all(`, `.create(`, `.replace(`, `.patch(`, `.delete(`, `.watch(`):
  the KubeClient and the PatchWriter are driven from k8s/ only.
The checker is tested on a sample that breaks each rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "gangsched"
LAYERS = ("runtime", "handlers")
PATH_MARKERS = ("/api/", "/apis/", "/namespaces/")
CONTENT_TYPES = {"MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "JSON_PATCH"}
RAW_VERBS = {"request", "list_all", "create", "replace", "patch", "delete", "watch"}


def _is_path_helper(name: str) -> bool:
    return name == "resource_path" or name.endswith("_path")


def _offences(source: str, filename: str) -> list[str]:
    tree = ast.parse(source, filename=filename)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            if any(marker in text for marker in PATH_MARKERS) or text.startswith("/api"):
                found.append(f"{where}: API path literal {text!r}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_path_helper(node.name):
            found.append(f"{where}: path helper {node.name}()")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gangsched.k8s"):
            for alias in node.names:
                if _is_path_helper(alias.name) or alias.name in CONTENT_TYPES:
                    found.append(f"{where}: imports {alias.name} from {node.module}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RAW_VERBS:
            found.append(f"{where}: raw client call .{node.func.attr}()")
    return found


def test_runtime_and_handlers_build_no_paths_or_bodies() -> None:
    offences: list[str] = []
    for layer in LAYERS:
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            offences += _offences(path.read_text(), str(path.relative_to(PACKAGE)))
    assert not offences, "\n".join(offences)


def test_the_checker_sees_each_kind_of_offence() -> None:
    sample = '''
"""A docstring may say /api/v1/pods."""
from gangsched.k8s.client import STRATEGIC_MERGE_PATCH, resource_path
from gangsched.k8s.api import pod_path

def podgroup_path(ns):
    return f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"

async def run(client, writer):
    await client.list_all("/api/v1/nodes")
    writer.patch("x", {}, content_type=STRATEGIC_MERGE_PATCH)
'''
    offences = _offences(sample, "sample.py")
    kinds = sorted(offence.split(": ", 1)[1].split(" ")[0] for offence in offences)
    assert kinds == ["API", "API", "imports", "imports", "imports", "path", "raw", "raw"], offences
    assert not any("docstring" in offence for offence in offences)
