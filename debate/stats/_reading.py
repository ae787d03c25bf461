"""How a statistic reads: Krippendorff's interpretation bands, and ``undefined`` for none.

Stated once here so that the decision's reasons, the reports and the CLI name the same band
for the same coefficient and write a missing statistic the same way.
"""

from __future__ import annotations

import math

ALPHA_BANDS: tuple[tuple[str, float, float], ...] = (
    ("unacceptable", -math.inf, 0.50),
    ("low", 0.50, 0.67),
    ("moderate", 0.67, 0.80),
    ("high", 0.80, math.inf),
)
"""Krippendorff's interpretation bands: name, lower bound (inclusive), upper bound."""

HIGH_AGREEMENT = ALPHA_BANDS[-1][1]
"""Where high agreement begins: below it a winning panel is asked to review disputes."""

BAND_BOUNDS: tuple[float, ...] = tuple(lo for _, lo, _ in ALPHA_BANDS[1:])
"""The finite band edges, lowest first (tick marks on a scale)."""

BAND_TEXT = ", ".join(
    f"≥ {lo:.2f} {name}"
    if math.isinf(hi)
    else f"< {hi:.2f} {name}"
    if math.isinf(lo)
    else f"{lo:.2f}–{hi:.2f} {name}"
    for name, lo, hi in reversed(ALPHA_BANDS)
)
"""The bands in words, highest first, for a report's legend."""

UNDEFINED = "undefined"
"""How a statistic without a value is written (never a made-up number)."""


def band(value: float | None) -> str:
    """The interpretation band of an agreement coefficient, or ``undefined``."""
    if value is None or not math.isfinite(value):
        return UNDEFINED
    return next(name for name, lo, hi in ALPHA_BANDS if lo <= value < hi)


def fmt(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """A statistic as text: fixed digits (a sign with ``signed``), or ``undefined``."""
    if value is None or not math.isfinite(value):
        return UNDEFINED
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def fmt_interval(
    interval: tuple[float, float] | None, template: str = "{low} to {high}", digits: int = 3
) -> str:
    """An interval as text (signed bounds put into ``template``), or ``undefined``."""
    if interval is None:
        return UNDEFINED
    low, high = (fmt(bound, digits, signed=True) for bound in interval)
    return template.format(low=low, high=high)
