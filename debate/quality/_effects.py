"""Least squares with fixed effects and run-clustered intervals: the audit's estimator.

A bias is a within-item contrast: the same argument (or council candidate) read at
different positions by different judges, or by the same judge in its swap reading. Fixed
effects for the item remove its quality; fixed effects for the reading remove a judge's
offset in that reading; fixed effects for judge x side remove a judge's standing preference
for one side, which a counterbalanced panel otherwise confounds with position (a judge that
favours PRO and reads PRO first in half its readings looks like it favours what it reads
first in those). What varies after that is what the slope is estimated from.

The effects are absorbed by alternating projections (subtract each grouping's means in turn
until nothing changes), so no dummy matrix is built however many runs the store holds.
Scores within a run share the run's arguments, so intervals are cluster-robust by run
(CR1 sandwich, Student t with runs - 1 degrees of freedom).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

LEVEL = 0.95
TOLERANCE = 1e-10
MAX_SWEEPS = 10_000
IDENTIFIED = 1e-9
"""A regressor whose within-effects variation is below this share of its total variation
is treated as absorbed by the effects (not identifiable from these readings)."""


def codes(keys: Sequence[Hashable]) -> IntArray:
    """Dense integer codes 0..k-1 for the distinct keys, in order of first appearance."""
    seen: dict[Hashable, int] = {}
    return np.fromiter((seen.setdefault(k, len(seen)) for k in keys), np.int64, len(keys))


def absorb(columns: FloatArray, groupings: Sequence[IntArray]) -> FloatArray:
    """Each column minus its projection on the fixed effects of every grouping.

    Args:
        columns: n x m values.
        groupings: Integer group codes (length n) per grouping.

    Returns:
        The residuals (n x m): within every grouping's groups, what the effects leave.
    """
    out = np.array(columns, dtype=np.float64, copy=True)
    if not groupings or out.size == 0:
        return out
    counts = [np.bincount(g).astype(np.float64) for g in groupings]
    scale = max(float(np.abs(out).max()), 1.0)
    for _ in range(MAX_SWEEPS):
        before = out.copy()
        for group, count in zip(groupings, counts, strict=True):
            for col in range(out.shape[1]):
                out[:, col] -= (np.bincount(group, weights=out[:, col]) / count)[group]
        if float(np.abs(out - before).max()) < TOLERANCE * scale:
            break
    return out


@dataclass(frozen=True)
class Slope:
    """One regressor's coefficient, its interval, and why it may be missing."""

    value: float | None
    low: float | None
    high: float | None
    note: str | None = None


def fit(
    y: FloatArray,
    regressors: FloatArray,
    groupings: Sequence[IntArray],
    clusters: IntArray,
    *,
    level: float = LEVEL,
    absorbed: str = "not identifiable: every argument was read at the same position",
) -> list[Slope]:
    """Coefficients of ``y`` on ``regressors`` (n x k) with the given fixed effects absorbed.

    A regressor the effects absorb gets no value and the ``absorbed`` note, rather than a
    number the data cannot support; one that never varies gets "no variation".
    """
    demeaned = absorb(np.column_stack([y, regressors]), groupings)
    ry, rx = demeaned[:, 0], demeaned[:, 1:]
    total = ((regressors - regressors.mean(axis=0)) ** 2).sum(axis=0)
    keep = identified(rx, total)
    result = [Slope(None, None, None, absorbed if t > 0 else "no variation") for t in total]
    if not keep.any():
        return result
    x = rx[:, keep]
    bread = np.asarray(np.linalg.inv(x.T @ x), dtype=np.float64)
    beta = bread @ (x.T @ ry)
    se = _cluster_se(x, ry - x @ beta, clusters, bread)
    g = int(np.unique(clusters).size)
    t = float(stats.t.ppf(0.5 + level / 2, g - 1))
    for index, b, s in zip(np.flatnonzero(keep), beta, se, strict=True):
        result[int(index)] = Slope(float(b), float(b - t * s), float(b + t * s))
    return result


def identified(residual: FloatArray, total: FloatArray) -> NDArray[np.bool_]:
    """Which regressors the data pin down once the fixed effects are absorbed.

    A regressor is lost when the effects absorb it, or when it takes part in a linear
    combination that they absorb: a fixed order makes each judge's position regressor
    collinear with the others' (only their differences are seen), so none is reported.
    """
    norms = np.sqrt((residual**2).sum(axis=0))
    keep: NDArray[np.bool_] = (norms**2 > IDENTIFIED * np.maximum(total, 1e-300)) & (total > 0)
    if not keep.any():
        return keep
    scaled = residual[:, keep] / norms[keep]
    _, singular, vt = np.linalg.svd(scaled, full_matrices=False)
    null = vt[singular < np.sqrt(IDENTIFIED) * max(float(singular[0]), 1.0)]
    if null.size:
        lost = np.abs(null).max(axis=0) > 1e-6
        keep[np.flatnonzero(keep)[lost]] = False
    return keep


def _cluster_se(
    x: FloatArray, residual: FloatArray, clusters: IntArray, bread: FloatArray
) -> FloatArray:
    """CR1 cluster-robust standard errors (clusters = runs)."""
    g = int(clusters.max()) + 1
    scores = np.zeros((g, x.shape[1]))
    np.add.at(scores, clusters, x * residual[:, None])
    used = int(np.unique(clusters).size)
    meat = scores.T @ scores
    cov = bread @ meat @ bread * used / (used - 1)
    return np.sqrt(np.clip(np.diag(cov), 0.0, None))
