"""How a statistic reads: alpha's and kappa's interpretation bands, and ``undefined`` for none.

Stated once here so that the decision's reasons, the reports and the CLI name the same band
for the same coefficient and write a missing statistic the same way.
"""

from __future__ import annotations

import math
from functools import lru_cache

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


def _legend(bands: tuple[tuple[str, float, float], ...], top: str) -> str:
    """Bands in words, highest first; ``top`` is the sign of the open-ended top band."""
    return ", ".join(
        f"{top} {lo:.2f} {name}"
        if math.isinf(hi)
        else f"< {hi:.2f} {name}"
        if math.isinf(lo)
        else f"{lo:.2f}–{hi:.2f} {name}"
        for name, lo, hi in reversed(bands)
    )


BAND_TEXT = _legend(ALPHA_BANDS, "≥")
"""The bands in words, highest first, for a report's legend."""

KAPPA_BANDS: tuple[tuple[str, float, float], ...] = (
    ("poor", -math.inf, 0.0),
    ("slight", 0.0, 0.20),
    ("fair", 0.20, 0.40),
    ("moderate", 0.40, 0.60),
    ("substantial", 0.60, 0.80),
    ("almost perfect", 0.80, math.inf),
)
"""Landis and Koch's bands for kappa: name, lower bound, upper bound (inclusive above 0,
as they wrote them: 0.00-0.20 slight, 0.21-0.40 fair, ...). Kappa is not read on alpha's
bands: 0.45 is moderate agreement on standings, and 0.70 substantial."""

KAPPA_BAND_TEXT = _legend(KAPPA_BANDS, ">")
"""Kappa's bands in words, highest first, for a report's legend."""

UNDEFINED = "undefined"
"""How a statistic without a value is written (never a made-up number)."""


def band(value: float | None) -> str:
    """The interpretation band of an agreement coefficient, or ``undefined``."""
    if value is None or not math.isfinite(value):
        return UNDEFINED
    for name, lo, hi in ALPHA_BANDS:  # a loop, not next() of a generator: once per reason
        if lo <= value < hi:
            return name
    raise AssertionError("the bands cover every finite value")


def fmt(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """A statistic as text: fixed digits (a sign with ``signed``), or ``undefined``."""
    if value is None or not math.isfinite(value):
        return UNDEFINED
    if type(value) is float:  # the usual case: each distinct value formatted once
        return _fixed(value, digits, signed)
    return _fixed.__wrapped__(value, digits, signed)


@lru_cache(maxsize=16_384, typed=True)
def _fixed(value: float, digits: int, signed: bool) -> str:
    """:func:`fmt` of a finite value; cached, as decisions' reasons repeat the same values.

    Two rounds cost more than the rest of a reason text, and a table's statistics take few
    distinct values (equal floats, 0.0 and -0.0 among them, give the same text).
    """
    # Rounded to 9 decimals first: a statistic and its mirror image computed in another order
    # (0.13749999999999998 and 0.13750000000000004) read the same. Then -0.0001 reads
    # 0.000, as its mirror image +0.0001 does.
    value = round(round(value, 9), digits) + 0.0
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def fmt_interval(
    interval: tuple[float, float] | None, template: str = "{low} to {high}", digits: int = 3
) -> str:
    """An interval as text (signed bounds put into ``template``), or ``undefined``."""
    if interval is None:
        return UNDEFINED
    low, high = (fmt(bound, digits, signed=True) for bound in interval)
    return template.format(low=low, high=high)


def kappa_band(value: float | None) -> str:
    """Landis and Koch's band of a kappa, or ``undefined``."""
    if value is None or not math.isfinite(value):
        return UNDEFINED
    if value < 0:
        return KAPPA_BANDS[0][0]
    return next(name for name, _, hi in KAPPA_BANDS[1:] if value <= hi)
