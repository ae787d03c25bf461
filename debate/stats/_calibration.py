"""Per-judge score calibration: z-score and min-max, with every degenerate case defined.

Judges differ in habit (one scores 6 on average, another 8) while agreeing on order;
calibration puts each judge on a common scale before votes are weighted and compared.
Each judge (row) is calibrated on its own finite scores; a missing score (NaN) stays
missing and never takes part in another score's calibration.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Method = Literal["minmax", "zscore"]
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


def zscore(row: ArrayLike) -> FloatArray:
    r"""Standardise one judge's scores: :math:`z = (x - \bar x) / s` with :math:`s` the sample std.

    :math:`\bar x` and :math:`s` (``ddof=1``) are taken over the finite entries. When the
    scores are all equal, or fewer than two are finite, there is no spread to divide by:
    every finite entry becomes 0.0 (the judge expressed no preference). NaN stays NaN.

    Args:
        row: One judge's scores; NaN marks a missing score.

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
    out[finite] = (values - values.mean()) / values.std(ddof=1)
    return out


def minmax(row: ArrayLike) -> FloatArray:
    r"""Rescale one judge's scores to [0, 1]: :math:`(x - \min) / (\max - \min)`.

    Min and max are taken over the finite entries. All-equal scores (including a single
    finite score) become 0.5, the middle of the scale: no preference either way. NaN stays
    NaN.

    Args:
        row: One judge's scores; NaN marks a missing score.

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
    out[finite] = (values - low) / (high - low) if high > low else 0.5
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


def calibrate(scores: ArrayLike, method: Method) -> FloatArray:
    """Calibrate a judges x arguments matrix row by row, each judge on its own scores.

    Args:
        scores: Judges x arguments (2-D); NaN marks a missing score.
        method: ``"minmax"`` or ``"zscore"`` (see :func:`minmax` and :func:`zscore`).

    Returns:
        A new matrix of the same shape with calibrated scores; NaN where the input had NaN.

    Raises:
        ValueError: A matrix that is not 2-D, an unknown method, or a score that is
            infinite or not a number.
    """
    if method not in ("minmax", "zscore"):
        raise ValueError(f"method must be 'minmax' or 'zscore'; got {method!r}")
    matrix = _floats(scores, "scores", 2)
    if method == "zscore":
        fn = zscore
    elif method == "minmax":
        fn = minmax
    else:
        raise ValueError(f"method must be 'minmax' or 'zscore'; got {method!r}")
    out = np.empty_like(matrix)
    for i, row in enumerate(matrix):
        out[i] = fn(row)
    return out
