"""One home for how a statistic reads: bands at their edges, and "undefined" for no value."""

import math

import pytest

from debate.stats import BAND_TEXT, HIGH_AGREEMENT, band, fmt, fmt_interval


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.80, "high"),
        (0.7999, "moderate"),
        (0.67, "moderate"),
        (0.50, "low"),
        (0.4999, "unacceptable"),
        (-0.3, "unacceptable"),
        (None, "undefined"),
        (math.nan, "undefined"),
    ],
)
def test_band_edges_are_inclusive_below(value: float | None, expected: str) -> None:
    assert band(value) == expected


def test_legend_and_high_agreement_follow_the_bands() -> None:
    assert BAND_TEXT == "≥ 0.80 high, 0.67–0.80 moderate, 0.50–0.67 low, < 0.50 unacceptable"
    assert band(HIGH_AGREEMENT) == "high"


def test_missing_statistics_read_undefined() -> None:
    assert fmt(None) == fmt(math.inf) == fmt_interval(None) == "undefined"
    assert fmt(0.1234, signed=True) == "+0.123"
    assert fmt_interval((-0.05, 0.2)) == "-0.050 to +0.200"
    assert fmt_interval((-0.05, 0.2), "[{low}, {high}]") == "[-0.050, +0.200]"
