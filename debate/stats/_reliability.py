r"""Is a confidence a probability? Reliability bins and the expected calibration error.

Bins are equal-width on [0, 1], not on [0.5, 1]: the confidence here is the probability
that people's majority agrees with the declared answer, and that can fall below 0.5 (a tie
majority makes every declared answer wrong, and a calibrated probability of a poorly
supported answer is low), so half the scale would otherwise be cut off. Bin ``b`` of ``B``
holds :math:`b/B \le p < (b+1)/B`; the last one includes 1.

.. math::

    \mathrm{ECE} = \sum_b \frac{n_b}{N} \left| \mathrm{acc}_b - \mathrm{conf}_b \right|
    = \frac{1}{N} \sum_b \Big| \sum_{i \in b} (y_i - p_i) \Big| .

Its interval is a cluster bootstrap: items are resampled with replacement, every unit of a
drawn item goes with it (the units of one item share its difficulty). Plug-in ECE is biased
upward when bins hold few units (noise never cancels inside an absolute value), so the
interval describes the figure as computed, not a bias-corrected one.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from debate.stats._agreement import BootstrapResult
from debate.stats._plain import Bin
from debate.stats._units import (
    BoolArray,
    FloatArray,
    IntArray,
    confidences,
    draw_counts,
    group_codes,
    outcomes,
    whole,
)

DEFAULT_BINS = 10
BLOCK_CELLS = 4_000_000
"""Replicates x items of bootstrap counts held at once (32 MB of float64), to bound memory."""


def reliability_bins(p: ArrayLike, correct: ArrayLike, bins: int = DEFAULT_BINS) -> list[Bin]:
    """The reliability diagram: per equal-width bin of confidence, confidence vs accuracy.

    Args:
        p: Per unit, the confidence in [0, 1]; NaN (no confidence) is left out.
        correct: Per unit, whether the declared answer was right.
        bins: Number of equal-width bins on [0, 1].

    Returns:
        Every bin, empty ones included (their figures None), lowest first.

    Raises:
        ValueError: malformed arrays or a ``bins`` below 1.
    """
    count = whole(bins, "bins")
    probs, right, index = _binned(p, correct, count)
    n = np.bincount(index, minlength=count)
    conf = np.bincount(index, weights=probs, minlength=count)
    hits = np.bincount(index, weights=right.astype(float), minlength=count)
    return [
        Bin(
            low=b / count,
            high=(b + 1) / count,
            n=int(n[b]),
            confidence=float(conf[b] / n[b]) if n[b] else None,
            accuracy=float(hits[b] / n[b]) if n[b] else None,
        )
        for b in range(count)
    ]


def expected_calibration_error(
    p: ArrayLike,
    correct: ArrayLike,
    *,
    groups: ArrayLike | None = None,
    bins: int = DEFAULT_BINS,
    n_boot: int = 1000,
    seed: int = 0,
) -> BootstrapResult:
    """ECE over equal-width bins, with a 95 % cluster-bootstrap interval over items.

    Args:
        p: Per unit, the confidence in [0, 1]; NaN (no confidence) is left out.
        correct: Per unit, whether the declared answer was right.
        groups: Per unit, its item id; None: every unit its own item.
        bins: Number of equal-width bins on [0, 1].
        n_boot: Bootstrap replicates (0: the estimate alone).
        seed: Seed of the resampling; the same seed gives the same interval.

    Returns:
        The estimate and the 2.5 and 97.5 percentiles of the replicates; ``nan`` for the
        estimate when no unit has a confidence, for the bounds when ``n_boot`` is 0.

    Raises:
        ValueError: malformed arrays, ``bins`` below 1, ``n_boot`` below 0.
    """
    count = whole(bins, "bins")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 0:
        raise ValueError(f"n_boot must be a whole number, 0 or more; got {n_boot!r}")
    size = np.asarray(p).size
    codes = np.arange(size) if groups is None else group_codes(groups, size)
    probs, right, index = _binned(p, correct, count)
    scored = ~np.isnan(confidences(p))
    if probs.size == 0:
        return BootstrapResult(math.nan, math.nan, math.nan, int(n_boot))
    gap = right.astype(float) - probs
    estimate = float(np.abs(np.bincount(index, weights=gap, minlength=count)).sum() / probs.size)
    if n_boot == 0:
        return BootstrapResult(estimate, math.nan, math.nan, 0)
    _, item = np.unique(codes[scored], return_inverse=True)
    items = int(item.max()) + 1
    # Per item and bin, the summed gap; per item, its units: a replicate is then a product.
    per_item = np.zeros((items, count))
    np.add.at(per_item, (item, index), gap)
    units = np.bincount(item, minlength=items).astype(float)
    replicates = np.empty(int(n_boot))
    rng = np.random.default_rng(seed)
    step = max(1, BLOCK_CELLS // items)
    for start in range(0, int(n_boot), step):
        size_block = min(step, int(n_boot) - start)
        counts = draw_counts(rng, items, items, size_block)
        replicates[start : start + size_block] = np.abs(counts @ per_item).sum(1) / (counts @ units)
    low, high = np.quantile(replicates, [0.025, 0.975])
    return BootstrapResult(estimate, float(low), float(high), int(n_boot))


def _binned(p: ArrayLike, correct: ArrayLike, count: int) -> tuple[FloatArray, BoolArray, IntArray]:
    """The scored units' confidences and outcomes, and the bin of each."""
    probs = confidences(p)
    right = outcomes(correct, probs.size)
    scored = ~np.isnan(probs)
    probs, right = probs[scored], right[scored]
    index = np.minimum(np.floor(probs * count), count - 1).astype(np.intp)
    return probs, right, index
