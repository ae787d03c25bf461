"""Per-judge score calibration: z-score and min-max, with every degenerate case defined.

Judges differ in habit (one scores 6 on average, another 8) while agreeing on order;
calibration compares them on a common scale. Each judge (row) is calibrated on its own
finite scores; missing scores (NaN) stay missing.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Method = Literal["minmax", "zscore"]
FloatArray = NDArray[np.float64]


def zscore(row: ArrayLike) -> FloatArray:
    """``(x - mean) / std`` with the sample std (ddof=1) over the finite entries.

    Degenerate cases: all-equal scores, or fewer than two finite scores, give 0.0 (the
    judge expressed no preference); NaN stays NaN.
    """
    x = np.asarray(row, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    finite = ~np.isnan(x)
    values = x[finite]
    if values.size < 2:
        out[finite] = 0.0
        return out
    std = float(values.std(ddof=1))
    out[finite] = 0.0 if std == 0 else (values - values.mean()) / std
    return out


def minmax(row: ArrayLike) -> FloatArray:
    """``(x - min) / (max - min)`` over the finite entries; all-equal gives 0.5; NaN stays."""
    x = np.asarray(row, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    finite = ~np.isnan(x)
    values = x[finite]
    if values.size == 0:
        return out
    low, high = float(values.min()), float(values.max())
    out[finite] = 0.5 if high == low else (values - low) / (high - low)
    return out


def choose_calibration(arguments_per_side: int) -> Method:
    """The short/long debate rule: min-max up to 3 arguments a side, z-score above.

    The reference figures say min-max for at most 3 and z-score for at least 5; with 4 the
    sample (8 scores per judge) is large enough for a usable standard deviation, so 4 takes
    z-score.
    """
    if arguments_per_side < 1:
        raise ValueError("arguments_per_side must be at least 1")
    return "minmax" if arguments_per_side <= 3 else "zscore"


def calibrate(scores: ArrayLike, method: Method) -> FloatArray:
    """Calibrate a judges x arguments matrix row by row (each judge on its own scores)."""
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError("scores must be 2-D: judges x arguments")
    if method == "zscore":
        fn = zscore
    elif method == "minmax":
        fn = minmax
    else:
        raise ValueError(f"method must be 'minmax' or 'zscore'; got {method!r}")
    if matrix.shape[0] == 0:
        return matrix.copy()
    return np.vstack([fn(row) for row in matrix])
