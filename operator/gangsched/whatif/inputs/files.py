"""Bounded reading of input files and the one error every whatif input reader raises.

Contract:
- `InputError(path, line, column, value, allowed)`: a ValueError naming the file, the line (0: the whole file), the
  column (CSV column, JSON key path, or ""), the value (cut to 60 characters) and what is allowed.
- `read_text(path, *, max_bytes=MAX_INPUT_BYTES)`: UTF-8 text; InputError when missing, too large or not UTF-8.
- `csv_rows(path, *, required, optional=(), max_rows=MAX_ROWS)`: (line, {column: text}) pairs; InputError on a
  missing or unknown column, a row of the wrong width, or too many rows.
- `structured_items(path, *, key)`: the (line, entry) pairs of a YAML or JSON list (or a mapping holding it under
  `key`); InputError with the parser's line and column, or on any other shape.
- `number(text, *, path, line, column, kind, minimum, maximum)`: a finite number within bounds, else InputError.
More: docs/modules.md#whatifinputsfilespy.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import yaml

MAX_INPUT_BYTES: Final = 256 * 1024 * 1024
MAX_ROWS: Final = 5_000_000
MAX_FIELD_CHARS: Final = 4096


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class InputError(ValueError):
    """A bad input file: names the file, line, column, value and what is allowed."""

    def __init__(self, path: str | Path, line: int, column: str, value: object, allowed: str) -> None:
        self.path = str(path)
        self.line = line
        self.column = column
        self.value = value
        self.allowed = allowed
        where = f"{self.path}:{line}" if line else self.path
        col = f", column {column}" if column else ""
        super().__init__(f"{where}{col}: {_shown(value)}: {allowed}")


def read_text(path: str | Path, *, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The whole file as text, bounded (see the module docstring)."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(p, 0, "", f"{size} bytes", f"must be at most {max_bytes} bytes")
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(p, 0, "", str(p), f"must be a readable file ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(p, line, "", raw[exc.start : exc.start + 8], "must be UTF-8 text") from None


def csv_rows(
    path: str | Path,
    *,
    required: Sequence[str],
    optional: Sequence[str] = (),
    max_rows: int = MAX_ROWS,
    text: str | None = None,
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row) pairs of a CSV file with a header (see the module docstring); `text` skips reading `path`."""
    body = read_text(path) if text is None else text
    reader = csv.reader(io.StringIO(body))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError(
            path, 1, "", "", f"must start with a header naming the columns {', '.join(required)}"
        ) from None
    allowed = tuple(dict.fromkeys((*required, *optional)))  # each column named once, the required ones first
    for i, name in enumerate(header):
        if name not in allowed:
            raise InputError(path, 1, f"{i + 1}", name, f"must be one of the columns {', '.join(allowed)}")
    missing = [name for name in required if name not in header]
    if missing:
        raise InputError(path, 1, "", ",".join(header), f"must name the column(s) {', '.join(missing)}")
    rows = 0
    try:
        for fields in reader:
            line = reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            rows += 1
            if rows > max_rows:
                raise InputError(path, line, "", f"{rows} rows", f"must have at most {max_rows} rows")
            if len(fields) != len(header):
                raise InputError(
                    path, line, "", ",".join(fields), f"must have {len(header)} fields ({','.join(header)})"
                )
            yield line, {name: value.strip() for name, value in zip(header, fields, strict=True)}
    except csv.Error as exc:
        raise InputError(path, reader.line_num, "", "", f"must be valid CSV ({exc})") from None


def number(
    text: str,
    *,
    path: str | Path,
    line: int,
    column: str,
    kind: Literal["int", "float"],
    minimum: float,
    maximum: float,
) -> float:
    """A finite number within [minimum, maximum] parsed from `text` (see the module docstring)."""
    what = "an integer" if kind == "int" else "a number"
    allowed = f"must be {what} from {minimum:g} to {maximum:g}"
    if len(text) > 40:
        raise InputError(path, line, column, text, allowed)
    try:
        value: float = int(text) if kind == "int" else float(text)
    except ValueError:
        raise InputError(path, line, column, text, allowed) from None
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise InputError(path, line, column, text, allowed)
    return value


def _item_lines(text: str, key: str) -> list[int]:
    """The 1-based line of each entry of the document's list (YAML's composer; JSON is read as YAML here)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if isinstance(root, yaml.MappingNode):
        root = next((v for k, v in root.value if getattr(k, "value", None) == key), None)
    if not isinstance(root, yaml.SequenceNode):
        return []
    return [item.start_mark.line + 1 for item in root.value]


def structured_items(path: str | Path, *, key: str) -> list[tuple[int, Any]]:
    """(line, entry) pairs of a YAML or JSON list (see the module docstring)."""
    text = read_text(path)
    allowed = f"must be a list of objects, or an object with the list under {key!r}"
    try:
        doc = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            path, exc.lineno, f"{exc.colno}", exc.doc[exc.pos : exc.pos + 20], f"must be JSON: {exc.msg}"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, f"{mark.column + 1}") if mark is not None else (0, "")
        raise InputError(path, line, col, getattr(exc, "problem", "") or "", "must be YAML") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError(path, 0, "", str(exc)[:60], "must be a YAML or JSON document") from None
    if isinstance(doc, dict) and key in doc:
        doc = doc[key]
    if not isinstance(doc, list):
        raise InputError(path, 1, "", type(doc).__name__, allowed)
    if len(doc) > MAX_ROWS:
        raise InputError(path, 0, "", f"{len(doc)} entries", f"must have at most {MAX_ROWS} entries")
    lines = _item_lines(text, key) if len(text) <= 20 * 1024 * 1024 else []
    if len(lines) != len(doc):
        lines = [0] * len(doc)
    return list(zip(lines, doc, strict=True))
