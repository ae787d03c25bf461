"""How the judges' margins become the panel's: weighted mean, median, trimmed mean, majority.

``weighted_mean`` is the panel's rule from the start (:func:`debate.stats._batched
.side_vote_batch` and its bootstrap, kept bit for bit); the others answer other worries:

* ``median``: the weighted median of the judges' PRO-CON margins; one judge far off
  cannot move it past the middle judge.
* ``trimmed_mean``: the weighted mean after dropping the highest and the lowest
  :data:`TRIM` of the judges (at least one each end once three judges count), as a
  trimmed mean drops the tails of a sample.
* ``majority``: each judge votes for the side it scored higher (a tie is no vote); the
  margin is the PRO share of the weight minus the CON share, in [-1, 1], so the gap
  threshold reads as a share of the panel's weight.

Every function takes items x judges x units (complete, as :mod:`debate.stats._batched`)
and a weight per judge; the bootstrap resamples judges and units exactly as
``bootstrap_margin_batch`` does (the same draws, from :func:`debate.stats._batched.draw`).
"""

from __future__ import annotations

import math
from typing import get_args

import numpy as np
from numpy.typing import NDArray

from debate.stats._batched import (
    CHUNK_BYTES,
    Draws,
    SideVotes,
    _items,
    _weights,
    margin_draws,
    side_means,
)
from debate.stats._exact import SWAPPED_SIGN
from debate.stats._plain import Aggregate
from debate.stats._quantiles import percentile_interval

FloatArray = NDArray[np.float64]
AGGREGATES: tuple[str, ...] = get_args(Aggregate)
TRIM = 0.2
"""Share of the judges dropped at each end by ``trimmed_mean`` (at least one from three)."""
_EPS = 1e-12


def aggregate(values: FloatArray, weights: FloatArray, method: Aggregate) -> FloatArray:
    """Aggregate ``values`` over the last axis (the judges) with ``weights`` of the same shape.

    NaN where no judge carries a positive weight.
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.broadcast_to(np.asarray(weights, dtype=np.float64), v.shape)
    total = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "weighted_mean":
            out = (v * w).sum(axis=-1) / total
        elif method == "majority":
            out = ((w * (v > 0)).sum(axis=-1) - (w * (v < 0)).sum(axis=-1)) / total
        elif method == "median":
            out = _weighted_median(v, w, total)
        elif method == "trimmed_mean":
            out = _trimmed_mean(v, w)
        else:
            raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}; got {method!r}")
    result: FloatArray = np.where(total > 0, out, np.nan)
    return result


def _weighted_median(v: FloatArray, w: FloatArray, total: FloatArray) -> FloatArray:
    """The value where the cumulative weight reaches half; the mean of two when it is exact."""
    order = np.argsort(v, axis=-1, kind="stable")
    sv = np.take_along_axis(v, order, axis=-1)
    sw = np.take_along_axis(w, order, axis=-1)
    cum = np.cumsum(sw, axis=-1)
    half = (total / 2)[..., None]
    tol = _EPS * np.maximum(1.0, half)
    lower = np.argmax(cum >= half - tol, axis=-1)
    upper = np.argmax(cum > half + tol, axis=-1)
    lo = np.take_along_axis(sv, lower[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(sv, upper[..., None], axis=-1)[..., 0]
    out: FloatArray = (lo + hi) / 2
    return out


def trimmed(judges: int) -> int:
    """Judges dropped at each end by ``trimmed_mean`` out of ``judges``."""
    if judges < 3:
        return 0
    return max(1, math.floor(TRIM * judges))


def _trimmed_mean(v: FloatArray, w: FloatArray) -> FloatArray:
    k = trimmed(v.shape[-1])
    order = np.argsort(v, axis=-1, kind="stable")
    sv = np.take_along_axis(v, order, axis=-1)
    sw = np.take_along_axis(w, order, axis=-1)
    if k:
        sv, sw = sv[..., k:-k], sw[..., k:-k]
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = (sv * sw).sum(axis=-1) / sw.sum(axis=-1)
    return out


def aggregate_vote_batch(
    scores: FloatArray, is_pro: NDArray[np.bool_], weights: FloatArray, method: Aggregate
) -> SideVotes:
    """Per item: the panel's PRO and CON and margin under ``method``.

    The margin aggregates each judge's PRO-CON margin. PRO and CON aggregate each judge's
    side means (under ``majority``: the shares of the weight voting for each side), so for
    ``median`` and ``trimmed_mean`` the margin need not equal PRO - CON.
    """
    x = _items(scores)
    w = _weights(weights, x.shape[0], x.shape[1])
    pro, con = side_means(x, is_pro)
    margin = aggregate(pro - con, w, method)
    if method == "majority":
        total = w.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(total > 0, (w * (pro > con)).sum(axis=-1) / total, np.nan)
            c = np.where(total > 0, (w * (pro < con)).sum(axis=-1) / total, np.nan)
        return SideVotes(p, c, margin)
    return SideVotes(aggregate(pro, w, method), aggregate(con, w, method), margin)


def _replicates(x: FloatArray, w: FloatArray, d: Draws, method: Aggregate) -> FloatArray:
    """Items x replicates: the aggregated margin of each replicate's judges and units."""
    n_boot = d.judges.shape[0]
    units = x.shape[2]
    reps = np.arange(n_boot)[:, None]
    share = np.zeros((n_boot, units))
    np.add.at(share, (reps, d.pro), 1.0 / d.pro.shape[1])
    np.add.at(share, (reps, d.con), -1.0 / d.con.shape[1])
    margins = x @ share.T  # items x judges x replicates: each judge's margin on the draw
    drawn = margins[:, d.judges, reps]  # items x replicates x judges drawn
    return aggregate(drawn, w[:, d.judges], method)


def bootstrap_aggregate_batch(
    scores: FloatArray,
    is_pro: NDArray[np.bool_],
    weights: FloatArray,
    method: Aggregate,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int | None = 0,
    resample_judges: bool = True,
) -> FloatArray:
    """Items x 2: the percentile interval of each item's margin under ``method``.

    The resampling of ``bootstrap_margin_batch`` (both orientations when a side has more
    than one unit, so a swapped table gets the mirrored interval); ``resample_judges``
    False holds the judges fixed and resamples the units only.
    """
    x, w, orientations = margin_draws(scores, is_pro, weights, n_boot, ci, seed, resample_judges)
    items, judges, units = x.shape
    out = np.full((items, 2), np.nan)
    if not orientations:
        return out
    step = max(1, CHUNK_BYTES // (8 * n_boot * len(orientations) * max(judges, units) * 3))
    for start in range(0, items, step):
        part = slice(start, min(start + step, items))
        margins = np.concatenate(
            [
                s * _replicates(x[part], w[part], d, method)
                for s, d in zip(SWAPPED_SIGN, orientations, strict=False)
            ],
            axis=1,
        )
        for b, row in enumerate(margins):
            kept = row[np.isfinite(row)]
            if kept.size:
                out[start + b] = percentile_interval(kept[None], ci)[0]
    return out
