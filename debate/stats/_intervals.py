"""Small-sample 95 % intervals for a council's bias checks: a mean and a correlation.

A council has a handful of candidates and reviewers, so the intervals must be honest at
n = 3: Student's t for a mean (not 1.96) and Fisher's z for a correlation. The t table
keeps scipy out of the council's import path (the CLI imports scipy only for the audit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
T95 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
"""Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom."""
MIN_CORRELATION_N = 4
"""Fisher's interval needs n - 3 > 0."""


@dataclass(frozen=True)
class Interval:
    """A figure with its 95 % interval, or why there is none."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    note: str | None = None


def t95(df: int) -> float:
    """The two-sided 95 % quantile of Student's t (Cornish-Fisher beyond the table)."""
    if df < 1:
        raise ValueError(f"df is {df}; Student's t needs at least 1 degree of freedom")
    if df <= len(T95):
        return T95[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_interval(values: Sequence[float]) -> Interval:
    """The mean with its t interval (needs two values)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return Interval(
            float(x.mean()) if x.size else None, None, None, int(x.size), "fewer than 2 values"
        )
    mean = float(x.mean())
    half = t95(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return Interval(mean, mean - half, mean + half, int(x.size))


def correlation_interval(x: Sequence[float], y: Sequence[float]) -> Interval:
    """Pearson's r with Fisher's z interval (needs four pairs and variation in both)."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"x has {a.size} values and y {b.size}; give one y per x")
    n = int(a.size)
    if n < MIN_CORRELATION_N:
        return Interval(None, None, None, n, f"fewer than {MIN_CORRELATION_N} pairs")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return Interval(None, None, None, n, "no variation")
    r = float(np.corrcoef(a, b)[0, 1])
    r = max(-1.0, min(1.0, r))
    if abs(r) == 1.0:
        return Interval(r, r, r, n)
    z, half = math.atanh(r), Z95 / math.sqrt(n - 3)
    return Interval(r, math.tanh(z - half), math.tanh(z + half), n)
