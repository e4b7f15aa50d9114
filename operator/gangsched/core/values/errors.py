"""The one error type for bad input: it names the field, the value and what is allowed.

Contract: every parser of user input (quantities, annotations, PodGroup specs, topology) raises
`InvalidField`; its message is fit to show a user in an event or a condition, e.g.
`gang.scheduling.koordinator.sh/min-available: invalid value "abc": must be an integer >= 1`.
"""

from __future__ import annotations

from typing import Any


class InvalidField(ValueError):
    """A field of some input holds a value that is not allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        super().__init__(f"{field}: invalid value {shown}: {allowed}")


class CoreError(Exception):
    """A broken invariant of the scheduling core (a bug in the caller, never bad user input)."""
