"""models/duration.py: Go durations as Koordinator's waiting-time uses them; and the pod path stays pydantic-free."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangsched.core.values.errors import InvalidField
from gangsched.models.duration import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30s", 30.0, id="seconds"),
        pytest.param("10m", 600.0, id="minutes"),
        pytest.param("1h30m", 5400.0, id="compound"),
        pytest.param("1.5h", 5400.0, id="fraction"),
        pytest.param("3600s", 3600.0, id="seed-003-example"),
        pytest.param("250ms", 0.25, id="milliseconds"),
        pytest.param("1m0.5s", 60.5, id="compound-fraction"),
        pytest.param(" 30s ", 30.0, id="surrounding-space"),
    ],
)
def test_valid_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, field="f") == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("forever", id="word"),
        pytest.param("30", id="no-unit"),
        pytest.param("", id="empty"),
        pytest.param("-30s", id="negative"),
        pytest.param("0s", id="zero"),
        pytest.param("1d", id="days-unknown-to-go"),
        pytest.param("1h 30m", id="inner-space"),
        pytest.param(30, id="not-a-string"),
    ],
)
def test_invalid_durations_name_the_field(value: object) -> None:
    with pytest.raises(InvalidField) as caught:
        parse_duration(value, field="gang.scheduling.koordinator.sh/waiting-time")
    assert (caught.value.field, caught.value.value) == ("gang.scheduling.koordinator.sh/waiting-time", value)
    assert "like 30s, 10m or 1h30m" in caught.value.allowed


@given(h=st.integers(0, 99), m=st.integers(0, 59), s=st.integers(0, 59))
def test_compound_durations_add_up(h: int, m: int, s: int) -> None:
    total = h * 3600 + m * 60 + s
    text = f"{h}h{m}m{s}s"
    if total == 0:
        with pytest.raises(InvalidField):
            parse_duration(text, field="f")
    else:
        assert parse_duration(text, field="f") == total


def test_the_pod_parser_does_not_import_pydantic() -> None:
    code = "import sys, gangsched.models.gang; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
