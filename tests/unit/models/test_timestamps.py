"""Kubernetes timestamps read and written by models/timestamps.py with the standard library's datetime.

The accepted forms are what Go's time.Parse reads with the layouts Kubernetes uses: metav1.Time marshals with
time.RFC3339 (staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/time.go: `2006-01-02T15:04:05Z07:00`, UTC, whole
seconds) and metav1.MicroTime with RFC3339Micro (micro_time.go: `2006-01-02T15:04:05.000000Z07:00`); both
unmarshal through time.Parse(time.RFC3339, ...), which also reads fractional seconds and numeric offsets and rejects
dates that do not exist (`day out of range`).
"""

from __future__ import annotations

import datetime as dt

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.timestamps import format_micro_time, format_time, parse_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("1970-01-01T00:00:00Z", 0.0, id="epoch"),
        pytest.param("2024-02-29T00:00:00Z", 1709164800.0, id="leap-day"),
        pytest.param("2024-03-01T00:00:00Z", 1709251200.0, id="metav1-time"),
        pytest.param("2024-03-01T02:00:00+02:00", 1709251200.0, id="positive-offset"),
        pytest.param("2024-02-29T18:30:00-05:30", 1709251200.0, id="negative-offset"),
        pytest.param("2024-03-01T00:00:00.5Z", 1709251200.5, id="fraction"),
        pytest.param("2024-03-01T00:00:00.250000Z", 1709251200.25, id="metav1-microtime"),
        pytest.param("2024-03-01T00:00:00.250000000Z", 1709251200.25, id="nanoseconds"),
        pytest.param("2024-03-01t00:00:00z", 1709251200.0, id="lowercase"),
        pytest.param("1969-12-31T23:59:59Z", -1.0, id="before-epoch"),
    ],
)
def test_the_forms_kubernetes_writes_are_read(text: str, expected: float) -> None:
    assert parse_time(text, field="t") == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("2023-02-29T00:00:00Z", id="not-a-leap-year"),
        pytest.param("2024-04-31T00:00:00Z", id="april-31"),
        pytest.param("2024-13-01T00:00:00Z", id="month-13"),
        pytest.param("2024-01-01T24:00:00Z", id="hour-24"),
        pytest.param("2024-01-01T00:00:60Z", id="second-60"),
        pytest.param("2024-01-01", id="date-only"),
        pytest.param("2024-01-01T00:00:00", id="no-zone"),
        pytest.param("2024-01-01 00:00:00Z", id="space"),
        pytest.param("20240101T000000Z", id="iso-basic"),
        pytest.param("2024-01-01T00:00:00+0530", id="offset-without-colon"),
        pytest.param("yesterday", id="words"),
        pytest.param(1709251200, id="a-number"),
    ],
)
def test_anything_else_is_rejected_naming_the_field(text: object) -> None:
    with pytest.raises(InvalidField, match=r"metadata\.creationTimestamp") as err:
        parse_time(text, field="metadata.creationTimestamp")
    assert "RFC 3339" in str(err.value)


def test_formats_are_metav1_time_and_microtime() -> None:
    moment = dt.datetime(2024, 3, 1, 2, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert format_time(moment) == "2024-03-01T00:00:00Z"
    assert format_micro_time(moment) == "2024-03-01T00:00:00.123456Z"
    assert format_time(1709251200.9) == "2024-03-01T00:00:00Z"  # truncated, as metav1.Time marshals
    assert parse_time(format_micro_time(moment), field="t") == moment.timestamp()
