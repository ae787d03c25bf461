"""Kendall's coefficient of concordance W: how alike several rankings of the same objects are.

``m`` rankings (raters, or repeated runs) of ``n`` objects: with ``R_i`` the sum of object
``i``'s ranks and ``S = sum_i (R_i - mean R)^2``,

    W = 12 S / (m^2 (n^3 - n) - m sum_j T_j),   T_j = sum over tie groups of rater j (t^3 - t),

tied objects taking the mean of the ranks they span (Kendall and Babington Smith, 1939,
"The problem of m rankings", Ann. Math. Statist. 10:275-287; the tie correction as given
by Legendre, 2005, "Species associations: the Kendall coefficient of concordance
revisited", JABES 10:226-245, eq. 2). W is 1 when every ranking is the same and 0 when
the rank sums are all equal (no agreement beyond chance). Without ties it is tied to the
mean Spearman correlation over pairs of rankings: ``mean r_s = (m W - 1) / (m - 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def midranks(values: Sequence[float]) -> FloatArray:
    """Ranks 1..n of ``values`` (smallest first), tied values sharing their mean rank."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(x.size)
    ranks[order] = np.arange(1, x.size + 1, dtype=np.float64)
    for value in np.unique(x):
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def kendall_w(rankings: Sequence[Sequence[float]]) -> float | None:
    """Kendall's W (tie-corrected) of ``m`` rankings of the same ``n`` objects.

    Args:
        rankings: ``m`` rows of ``n`` ranks (or scores: only their order counts; equal
            values are ties). Rank 1 or score, the direction must be the same in every row.

    Returns:
        W in [0, 1]; None with fewer than two rankings or two objects, or when every
        ranking ties every object (no order to agree on).
    """
    x = np.asarray(rankings, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError("rankings: give one row of ranks per ranking, all of one length")
    m, n = x.shape
    if m < 2 or n < 2:
        return None
    ranks = np.array([midranks(row) for row in x])
    sums = ranks.sum(axis=0)
    s = float(((sums - sums.mean()) ** 2).sum())
    ties = 0.0
    for row in x:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts**3 - counts).sum())
    denominator = m**2 * (n**3 - n) - m * ties
    if denominator <= 0:
        return None
    return float(round(12.0 * s / denominator, 12))
