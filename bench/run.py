"""Runs benchmark groups: `python bench/run.py [GROUP...]`.

Each group is a module `bench/bench_<group>.py` with a `main()` that prints figures through
bench.common.figure. With no names, every group runs, in alphabetical order.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def available() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def main(names: list[str]) -> int:
    sys.path.insert(0, str(HERE.parent))
    groups = names or available()
    unknown = [n for n in groups if n not in available()]
    if unknown:
        print(f"unknown benchmark group(s) {unknown}; available: {available()}", file=sys.stderr)
        return 2
    for name in groups:
        importlib.import_module(f"bench.bench_{name}").main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
