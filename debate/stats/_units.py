"""Per-unit arrays of confidences and outcomes: checks, item codes, item resampling.

Shared by the selective-verdict statistics and the reliability ones, so both refuse the
same malformed input in the same words, and by the validity metrics' item bootstrap.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from debate.stats._calibration import kind_of

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.intp]
CHUNK_CELLS = 4_000_000
"""Replicates x draws per block of bootstrap counts (32 MB of int64), to bound memory."""


def is_real(value: object) -> bool:
    """A finite real number (a bool is not one)."""
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def whole(value: object, name: str, low: int = 1) -> int:
    """``value`` as an int, or a ValueError naming ``name`` and the least allowed."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be a whole number, at least {low}; got {value!r}")
    return int(value)


def numbers(values: ArrayLike, name: str) -> FloatArray:
    """``values`` as floats, or a ValueError naming ``name`` and what it held instead."""
    given = np.asarray(values)
    if given.dtype.kind not in "iuf" and given.size:
        raise ValueError(f"{name} must hold numbers (NaN where missing), not {kind_of(given)}")
    return given.astype(np.float64)


def confidences(p: ArrayLike) -> FloatArray:
    """Per unit, a confidence in [0, 1] or NaN (no confidence).

    Raises:
        ValueError: not 1-D, not numbers, or a value outside [0, 1].
    """
    x = numbers(p, "p")
    if x.ndim != 1:
        raise ValueError(f"p must be one confidence per unit (1-D); got {x.ndim}-D")
    outside = ~np.isnan(x) & ((x < 0) | (x > 1))
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        raise ValueError(f"p must lie in [0, 1] (NaN: no confidence); unit {first} is {x[first]}")
    return x


def outcomes(correct: ArrayLike, size: int) -> BoolArray:
    """Per unit, right or wrong: booleans or 0/1 (a unit without a label is not passed).

    Raises:
        ValueError: other values, or not one per unit.
    """
    given = np.asarray(correct)
    if given.dtype.kind != "b" and (
        given.dtype.kind not in "iuf" or not np.isin(given, (0, 1)).all()
    ):
        raise ValueError("correct must be booleans (or 0/1) per unit; leave unlabelled units out")
    if given.ndim != 1 or given.size != size:
        raise ValueError(
            f"correct must be 1-D with one value per unit ({size}); got shape {given.shape}"
        )
    return given.astype(bool)


def group_codes(groups: ArrayLike, size: int) -> IntArray:
    """Item ids as codes ``0..G-1`` (any ids numpy can sort).

    Raises:
        ValueError: not one id per unit.
    """
    ids = np.asarray(groups)
    if ids.ndim != 1 or ids.size != size:
        raise ValueError(f"groups must give one item id per unit ({size}); got shape {ids.shape}")
    _, codes = np.unique(ids, return_inverse=True)
    return np.asarray(codes.ravel(), dtype=np.intp)


def draw_counts(rng: np.random.Generator, n_items: int, draws: int, replicates: int) -> FloatArray:
    """``replicates`` rows of how often each of ``n_items`` is drawn in ``draws`` draws."""
    counts = np.zeros((replicates, n_items))
    step = max(1, CHUNK_CELLS // max(1, draws))
    for start in range(0, replicates, step):  # blocks of replicates, to bound memory
        size = min(step, replicates - start)
        picks = rng.integers(0, n_items, size=(size, draws))
        picks += (np.arange(size) * n_items)[:, None]
        block = np.bincount(picks.ravel(), minlength=size * n_items)
        counts[start : start + size] = block.reshape(size, n_items)
    return counts
