"""One home for how a statistic reads: bands at their edges, and "undefined" for no value."""

import math
import random

import numpy as np
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


def test_a_remembered_text_is_the_text_two_rounds_give() -> None:
    """fmt formats each distinct float once; every call reads as the two rounds read."""
    rng = random.Random(5)
    values = [rng.uniform(-2, 2) for _ in range(2000)]
    values += [k / 2000 for k in range(-40, 40)]  # halves of the last digit
    values += [0.13749999999999998, 0.13750000000000004, -0.0, 0.0, -0.0001, 1e-10, 12345.6785]
    for value in values * 2:  # the second pass reads the remembered texts
        for digits, signed in ((3, False), (2, True), (1, False)):
            text = f"{round(round(value, 9), digits) + 0.0:{'+' if signed else ''}.{digits}f}"
            assert fmt(value, digits, signed=signed) == text
    assert fmt(np.float64(0.0005)) == f"{np.round(np.round(np.float64(0.0005), 9), 3):.3f}"
