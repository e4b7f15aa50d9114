"""Reading a configuration file (YAML, or JSON): the document, or every problem of its text at once.

Contract:
- `read_document(text, *, json_syntax) -> (data, problems)`: strict JSON for `.json` files, else YAML. `problems`
  lists every key given twice in one mapping (never "last one wins"), named by its path and lines in YAML, by the
  key in JSON; YAML merge keys (`<<`) may still be overridden.
- A document deeper than MAX_DEPTH raises `InvalidField` for the whole file, without recursing that deep.
- Text that is not YAML (or JSON) raises `InvalidField` naming the parser's message (line and column).
The caller (models/config.py) validates `data` and reports these problems with its own.
More: docs/modules.md#modelsconfig_filepy.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from gangsched.core import InvalidField

MAX_DEPTH = 32  # the deepest setting today is 2 levels; 32 leaves room and stops hostile files cold


class _TooDeep(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def _too_deep(source: str, line: int) -> InvalidField:
    where = f" (line {line})" if line else ""
    return InvalidField(source, f"nesting deeper than {MAX_DEPTH}{where}", f"must nest at most {MAX_DEPTH} levels")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that bounds nesting while composing and records keys given twice while constructing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.duplicates: list[InvalidField] = []
        self.paths: dict[int, str] = {}  # id(mapping node) -> its key path, for naming duplicates

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark.line + 1)  # type: ignore[no-untyped-call]
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            self._check_repeats(node)
        return super().construct_mapping(node, deep=deep)

    def _check_repeats(self, node: yaml.MappingNode) -> None:
        prefix = self.paths.get(id(node), "")
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # SafeConstructor reports an unhashable key itself
            path = f"{prefix}.{key}" if prefix else str(key)
            self._name_children(value_node, path)
            line = key_node.start_mark.line + 1
            if key in seen:
                allowed = f"must be given once (line {seen[key]} and line {line})"
                self.duplicates.append(InvalidField(path, "given twice", allowed))
            else:
                seen[key] = line

    def _name_children(self, node: yaml.Node, path: str) -> None:
        """Remember the key path of the mappings in `node` (itself, or the items of a list: `path[i]`)."""
        if isinstance(node, yaml.MappingNode):
            self.paths[id(node)] = path
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._name_children(item, f"{path}[{i}]")


def _read_yaml(text: str, source: str) -> tuple[Any, list[InvalidField]]:
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data(), loader.duplicates
    except _TooDeep as deep:
        raise _too_deep(source, deep.line) from None
    except yaml.YAMLError as err:
        raise InvalidField(source, _short(str(err)), "must be valid YAML") from None
    finally:
        loader.dispose()


def _json_depth_line(text: str) -> int:
    """The line where JSON text first nests deeper than MAX_DEPTH, or 0 (strings skipped, escapes honoured)."""
    depth, line, in_string, escaped = 0, 1, False, False
    for char in text:
        if char == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif char in "]}":
            depth -= 1
    return 0


def _read_json(text: str, source: str) -> tuple[Any, list[InvalidField]]:
    deep = _json_depth_line(text)
    if deep:
        raise _too_deep(source, deep)
    duplicates: list[InvalidField] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:  # JSON has no path while parsing bottom-up: the key is named as it is
                duplicates.append(InvalidField(key, "given twice", "must be given once in its object"))
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=pairs), duplicates
    except json.JSONDecodeError as err:
        raise InvalidField(source, str(err), "must be valid JSON") from None


def _short(message: str) -> str:
    return " ".join(message.split())


def read_document(text: str, *, source: str, json_syntax: bool = False) -> tuple[Any, list[InvalidField]]:
    """The parsed document and the problems of its text (keys given twice); see the module docstring."""
    return _read_json(text, source) if json_syntax else _read_yaml(text, source)
