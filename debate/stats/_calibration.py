"""Per-judge score calibration: z-score and min-max, with every degenerate case defined.

Judges differ in habit (one scores 6 on average, another 8) while agreeing on order;
calibration puts each judge on a common scale before votes are weighted and compared.
Each judge (row) is calibrated on its own finite scores; a missing score (NaN) stays
missing and never takes part in another score's calibration.

Calibration must not amplify. Without a floor, a judge who gives every PRO argument 6 and
every CON argument 5 is stretched to 1 and 0, exactly like one who gives 9 and 4. An optional
floor on each judge's spread (``min_spread``, in points of the judge's own scale) keeps a
small uniform gap small: the judge's scores are divided by ``max(spread, floor)`` instead of
by its spread. Without a floor (the default here) the functions are the reference formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from debate.stats._plain import Method

FloatArray = NDArray[np.float64]


def kind_of(array: NDArray[Any]) -> str:
    """What an array holds, in words, for an error message."""
    kinds = {"U": "text", "S": "text", "b": "booleans", "O": "mixed values"}
    return kinds.get(array.dtype.kind, array.dtype.name)


def _floats(values: ArrayLike, name: str, ndim: int) -> FloatArray:
    """``values`` as floats of ``ndim`` dimensions, or a ValueError naming ``name``."""
    given = np.asarray(values)
    if given.dtype.kind not in "iuf" and given.size:
        what = kind_of(given)
        raise ValueError(f"{name} must hold numbers (NaN for a missing score), not {what}")
    x = given.astype(np.float64)
    if x.ndim != ndim:
        shape = "one judge's scores (1-D)" if ndim == 1 else "judges x arguments (2-D)"
        raise ValueError(f"{name} must be {shape}; got {x.ndim}-D")
    if np.isinf(x).any():
        raise ValueError(f"{name}: scores must be finite numbers, or NaN for a missing score")
    return x


def _scores(row: ArrayLike) -> tuple[FloatArray, NDArray[np.bool_]]:
    x = _floats(row, "row", 1)
    return x, ~np.isnan(x)


def _floor(min_spread: float | None) -> float:
    if min_spread is None:
        return 0.0
    if not np.isfinite(min_spread) or min_spread < 0:
        raise ValueError(f"min_spread must be a finite number >= 0 or None; got {min_spread!r}")
    return float(min_spread)


def zscore(row: ArrayLike, min_sd: float | None = None) -> FloatArray:
    r"""Standardise one judge's scores: :math:`z = (x - \bar x) / s` with :math:`s` the sample std.

    :math:`\bar x` and :math:`s` (``ddof=1``) are taken over the finite entries. When the
    scores are all equal, or fewer than two are finite, there is no spread to divide by:
    every finite entry becomes 0.0 (the judge expressed no preference). NaN stays NaN.
    With ``min_sd`` the divisor is :math:`\max(s, \text{min\_sd})`: a judge whose scores
    barely vary is not blown up to unit spread.

    Args:
        row: One judge's scores; NaN marks a missing score.
        min_sd: Floor on the standard deviation, in the scores' units; None for no floor.

    Returns:
        The z-scores, same shape as ``row``.

    Raises:
        ValueError: A row that is not 1-D, or a score that is infinite or not a number.
    """
    x, finite = _scores(row)
    out = np.full(x.shape, np.nan)
    values = x[finite]
    # Compare the extremes, not the std: the std of equal values can come out as 1e-17,
    # and dividing by it would invent a strong preference.
    if values.size < 2 or values.max() == values.min():
        out[finite] = 0.0
        return out
    out[finite] = (values - values.mean()) / max(float(values.std(ddof=1)), _floor(min_sd))
    return out


def minmax(row: ArrayLike, min_range: float | None = None) -> FloatArray:
    r"""Rescale one judge's scores to [0, 1]: :math:`(x - \min) / (\max - \min)`.

    Min and max are taken over the finite entries. All-equal scores (including a single
    finite score) become 0.5, the middle of the scale: no preference either way. NaN stays
    NaN. With ``min_range`` the scores are centred on the midpoint of min and max and divided
    by :math:`\max(\max - \min, \text{min\_range})`: a judge using at least that range still
    spans [0, 1], a narrower one spans less, around 0.5.

    Args:
        row: One judge's scores; NaN marks a missing score.
        min_range: Floor on the range, in the scores' units; None for no floor.

    Returns:
        The rescaled scores, same shape as ``row``.

    Raises:
        ValueError: A row that is not 1-D, or a score that is infinite or not a number.
    """
    x, finite = _scores(row)
    out = np.full(x.shape, np.nan)
    values = x[finite]
    if values.size == 0:
        return out
    low, high = float(values.min()), float(values.max())
    floor = _floor(min_range)
    if high > low and high - low >= floor:
        out[finite] = (values - low) / (high - low)  # the reference formula, bit for bit
    elif floor > 0:
        out[finite] = (values - (low + high) / 2) / floor + 0.5
    else:
        out[finite] = 0.5
    return out


def choose_calibration(arguments_per_side: int) -> Method:
    """The short/long debate rule: min-max up to 3 arguments a side, z-score above.

    The reference figures say min-max for at most 3 arguments per side (too few scores for
    a stable standard deviation) and z-score for at least 5; they leave 4 open. With 4 a
    side each judge scores 8 arguments, enough for a usable sample standard deviation, so 4
    takes z-score.

    Args:
        arguments_per_side: Arguments each side made (the larger side if they differ).

    Returns:
        ``"minmax"`` or ``"zscore"``.

    Raises:
        ValueError: Fewer than one argument per side, or not a whole number.
    """
    if isinstance(arguments_per_side, bool) or not isinstance(arguments_per_side, int | np.integer):
        raise ValueError(f"arguments_per_side must be a whole number; got {arguments_per_side!r}")
    if arguments_per_side < 1:
        raise ValueError(f"arguments_per_side must be at least 1; got {arguments_per_side}")
    return "minmax" if arguments_per_side <= 3 else "zscore"


def calibrate(scores: ArrayLike, method: Method, min_spread: float | None = None) -> FloatArray:
    """Calibrate a judges x arguments matrix row by row, each judge on its own scores.

    Args:
        scores: Judges x arguments (2-D); NaN marks a missing score.
        method: ``"minmax"`` or ``"zscore"`` (see :func:`minmax` and :func:`zscore`).
        min_spread: Floor on each judge's spread as a *range* in the scores' units, or None
            for the reference formulas. Min-max uses it as the floor on the range; z-score
            uses half of it as the floor on the standard deviation, which is the standard
            deviation of scores split evenly between two values ``min_spread`` apart, so one
            floor means the same gap under both methods.

    Returns:
        A new matrix of the same shape with calibrated scores; NaN where the input had NaN.

    Raises:
        ValueError: A matrix that is not 2-D, an unknown method, or a score that is
            infinite or not a number.
    """
    if method not in ("zscore", "minmax"):
        raise ValueError(f"method must be 'minmax' or 'zscore'; got {method!r}")
    matrix = _floats(scores, "scores", 2)
    floor = _floor(min_spread)
    out = np.empty_like(matrix)
    for i, row in enumerate(matrix):
        out[i] = zscore(row, floor / 2) if method == "zscore" else minmax(row, floor)
    return out
