"""The panel's statistics over a leading item axis: one call for many items of one shape.

A live panel decides one debate; ``debate decide`` decides 100,000 recorded items, and one
item at a time costs milliseconds of interpreter overhead per item. These functions take
items of the same shape, ``items x judges x units`` with complete data (the caller leaves
an unscored judge out of the item, never fills it in), and compute per item exactly what
the scalar functions compute:

* :func:`calibrate_batch`: :func:`debate.stats.calibrate`, row by row;
* :func:`interval_alpha_batch`: ``krippendorff_alpha(..., "interval")``, NaN where that is;
* :func:`leave_one_out_alpha_batch`: the same alpha with each judge left out;
* :func:`fleiss_kappa_batch`: :func:`debate.stats.fleiss_kappa_from_labels`;
* :func:`argument_variance_batch`: :func:`debate.stats.argument_variance`;
* :func:`side_vote_batch`: :func:`debate.stats.side_vote`;
* :func:`bootstrap_margin_batch`: :func:`debate.stats.bootstrap_margin`, the same
  resampling indices shared by every item of the batch.

The reductions run over the same axes in the same order as the scalar functions, so a
batch of one item gives the scalar results bit for bit; larger batches agree to rounding
(1e-12), and exactly where a batch is small enough for the exact bootstrap.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from debate.stats._blas import one_blas_thread
from debate.stats._exact import SWAPPED_SIGN, exact_intervals
from debate.stats._parts import each_part
from debate.stats._plain import Method
from debate.stats._quantiles import percentile_interval as percentile_interval
from debate.stats._quantiles import sorted_percentiles

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.intp]

CHUNK_BYTES = 16_000_000
"""Bound on the temporaries of one bootstrap chunk: memory stays linear in the items, and
a chunk's replicate margins stay in cache between the product, the division and the sort
(chunks of 4-16 MB ran twice as fast as chunks of 200 MB on 100,000 items)."""
EXACT_ITEMS = 16
"""Up to this many items a bootstrap chunk resamples exactly as the scalar function does
(gathering every resampled score, bit for bit); larger chunks count how often each judge
and unit was drawn and multiply, which is hundreds of times faster and agrees to 1e-12."""
KAPPA_UNDEFINED = 1.0 - 1e-15
"""Chance agreement at or above this leaves kappa undefined (every rating the same)."""


def _items(scores: FloatArray, name: str = "scores") -> FloatArray:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"{name} must be items x judges x units (3-D); got {x.ndim}-D")
    if np.isnan(x).any():
        raise ValueError(f"{name} must be complete; leave an unscored judge out of the item")
    return x


def _judged(
    scores: FloatArray, least: int, *, per_unit: bool
) -> tuple[FloatArray, FloatArray | None]:
    """The checked scores, and the answer where fewer than ``least`` judges leave none.

    That answer is NaN for every item and judge (or unit, ``per_unit``), so a statistic
    undefined for the whole batch says so in the shape it would have had.
    """
    x = _items(scores)
    items, judges, units = x.shape
    if judges >= least:
        return x, None
    return x, np.full((items, units if per_unit else judges), np.nan)


def calibrate_batch(scores: FloatArray, method: Method, min_spread: float | None) -> FloatArray:
    """Each judge (row) of each item calibrated on its own scores (see ``calibrate``)."""
    x = _items(scores)
    floor = 0.0 if min_spread is None else float(min_spread)
    if floor < 0 or not math.isfinite(floor):
        raise ValueError(f"min_spread must be a finite number >= 0 or None; got {min_spread!r}")
    if x.size == 0:
        return x.copy()
    low, high = x.min(axis=-1, keepdims=True), x.max(axis=-1, keepdims=True)
    flat = high == low
    if method == "zscore":
        if x.shape[-1] < 2:
            return np.zeros_like(x)
        mean = x.mean(axis=-1, keepdims=True)
        sd = np.maximum(x.std(axis=-1, ddof=1, keepdims=True), floor / 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            z: FloatArray = np.where(flat, 0.0, (x - mean) / np.where(flat, 1.0, sd))
        return z
    if method != "minmax":
        raise ValueError(f"method must be 'minmax' or 'zscore'; got {method!r}")
    span = high - low
    wide = (high > low) & (span >= floor)
    with np.errstate(invalid="ignore", divide="ignore"):
        reference = (x - low) / np.where(wide, span, 1.0)
        floored = (x - (low + high) / 2) / (floor if floor > 0 else 1.0) + 0.5
    out: FloatArray = np.where(wide, reference, floored if floor > 0 else 0.5)
    return out


def interval_alpha_batch(scores: FloatArray) -> FloatArray:
    """Interval Krippendorff alpha per item (raters x units, complete); NaN where undefined.

    The closed form of :mod:`debate.stats._alpha` (unit moments, shifted by the item's
    first value so that equal data stay exactly equal): NaN with fewer than two raters or
    when every value of the item is the same.
    """
    x = _items(scores)
    return _alpha_raters_last(np.ascontiguousarray(x.transpose(0, 2, 1)))


def _alpha_raters_last(x: FloatArray) -> FloatArray:
    """Alpha of items x units x raters: sums over raters run along the contiguous axis.

    With the raters in the middle, every sum over them loops over a handful of units at a
    time, several times slower than the same sums along the last axis. The operations are
    the scalar engine's; the order of a sum of eight or more raters differs, so the two
    agree to rounding.
    """
    items, units, raters = x.shape
    out = np.full(items, np.nan)
    if raters < 2 or units == 0:
        return out
    shifted = x - x[:, :1, :1]
    m = float(raters)
    mean = shifted.sum(axis=2) / m
    dev = shifted - mean[:, :, None]
    ss = (dev * dev).sum(axis=2)
    n = m * units
    observed = (2.0 * m * ss / (m - 1.0)).sum(axis=1)
    grand = (m * mean).sum(axis=1) / n
    pooled = ss.sum(axis=1) + (m * (mean - grand[:, None]) ** 2).sum(axis=1)
    expected = 2.0 * n * pooled
    defined = expected > 0
    out[defined] = 1.0 - (n - 1.0) * observed[defined] / expected[defined]
    return out


def leave_one_out_alpha_batch(scores: FloatArray) -> FloatArray:
    """Items x judges: interval alpha of each item without that judge (NaN under 2 left)."""
    x, undefined = _judged(scores, 3, per_unit=False)
    if undefined is not None:
        return undefined
    items, judges, units = x.shape
    others = np.array([[k for k in range(judges) if k != j] for j in range(judges)])
    by_unit = x.transpose(0, 2, 1)[:, :, others]  # items x units x left out x the others
    rest = np.ascontiguousarray(by_unit.transpose(0, 2, 1, 3))
    return _alpha_raters_last(rest.reshape(items * judges, units, judges - 1)).reshape(
        items, judges
    )


def fleiss_kappa_batch(labels: NDArray[np.integer]) -> FloatArray:
    """Fleiss' kappa per item from items x units x raters integer labels (codes >= 0).

    Kappa does not depend on how the labels are coded, so any codes do; NaN where every
    rating of the item is the same, as ``fleiss_kappa_from_labels``.
    """
    codes = np.asarray(labels)
    if codes.ndim != 3 or codes.dtype.kind not in "iu":
        raise ValueError("labels must be items x units x raters integer codes (3-D)")
    items, units, raters = codes.shape
    if raters < 2:
        raise ValueError("Fleiss' kappa needs at least two raters")
    if codes.size and codes.min() < 0:
        raise ValueError("labels must be codes >= 0; a missing rating has no code")
    width = int(codes.max()) + 1 if codes.size else 1
    flat = codes.reshape(items * units, raters) + (np.arange(items * units) * width)[:, None]
    counts = np.bincount(flat.ravel(), minlength=items * units * width).astype(np.float64)
    counts = counts.reshape(items, units, width)
    total = float(units * raters)
    p_bar = ((counts * counts).sum(axis=(1, 2)) - total) / (total * (raters - 1))
    p = counts.sum(axis=1) / total
    p_e = (p * p).sum(axis=1)
    out = np.full(items, np.nan)
    defined = p_e < KAPPA_UNDEFINED
    out[defined] = (p_bar[defined] - p_e[defined]) / (1.0 - p_e[defined])
    return out


def argument_variance_batch(scores: FloatArray) -> FloatArray:
    """Items x units: variance (ddof=1) across judges; NaN with fewer than two judges."""
    x, undefined = _judged(scores, 2, per_unit=True)
    if undefined is not None:
        return undefined
    judges = x.shape[1]
    means = x.sum(axis=1) / judges
    squares = ((x - means[:, None, :]) ** 2).sum(axis=1)
    out: FloatArray = squares / (judges - 1)
    return out


def offset_corrected_batch(scores: FloatArray) -> FloatArray:
    """Each judge's own mean removed, the item's grand mean kept (the 1-10 scale)."""
    x = _items(scores)
    grand = x.reshape(x.shape[0], -1).mean(axis=1) if x.size else np.zeros(x.shape[0])
    out: FloatArray = x - x.mean(axis=2, keepdims=True) + grand[:, None, None]
    return out


class SideVotes(NamedTuple):
    """Per item: weighted per-side means and their difference (NaN where no weight)."""

    pro: FloatArray
    con: FloatArray
    margin: FloatArray


def _sides(is_pro: BoolArray, units: int) -> BoolArray:
    mask = np.asarray(is_pro, dtype=bool)
    if mask.shape != (units,):
        raise ValueError(f"is_pro must give the side of each of the {units} units")
    if not mask.any() or mask.all():
        raise ValueError("side_vote needs at least one PRO and one CON argument")
    return mask


def _weights(weights: FloatArray, items: int, judges: int) -> FloatArray:
    w = np.asarray(weights, dtype=np.float64)
    if w.shape == (judges,):
        w = np.broadcast_to(w, (items, judges))
    if w.shape != (items, judges):
        raise ValueError("weights must be per judge, or per item and judge")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights must be finite numbers >= 0")
    return w


def side_means(scores: FloatArray, is_pro: BoolArray) -> tuple[FloatArray, FloatArray]:
    """Items x judges: each judge's mean per side (the sum over the side's units / count)."""
    x = _items(scores)
    mask = _sides(is_pro, x.shape[2])
    pro = np.where(mask, x, 0.0).sum(axis=-1) / mask.sum()
    con = np.where(~mask, x, 0.0).sum(axis=-1) / (~mask).sum()
    return pro, con


def side_vote_batch(scores: FloatArray, is_pro: BoolArray, weights: FloatArray) -> SideVotes:
    """Each judge's mean per side, then the weighted mean over judges, per item.

    NaN for an item whose judges carry no positive weight (``side_vote`` refuses it).
    """
    x = _items(scores)
    w = _weights(weights, x.shape[0], x.shape[1])
    pro, con = side_means(x, is_pro)
    total = w.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        wu = np.where(total > 0, w / np.where(total > 0, total, 1.0), np.nan)
    p, c = (pro * wu).sum(axis=-1), (con * wu).sum(axis=-1)
    return SideVotes(p, c, p - c)


class Draws(NamedTuple):
    """One bootstrap's resampling indices, drawn exactly as ``bootstrap_margin`` draws."""

    judges: IntArray
    """Replicates x judges: the judge drawn in each place."""
    pro: IntArray
    """Replicates x PRO units: the column drawn in each place."""
    con: IntArray


def draw(
    judges: int, is_pro: BoolArray, n_boot: int, seed: int | None, *, resample_judges: bool = True
) -> Draws:
    """The scalar function's draws: judges, then PRO columns, then CON columns.

    ``resample_judges`` False keeps every judge once in every replicate (the units are
    drawn as they would be): the interval's share that comes from the units alone, which
    :func:`debate.stats._effective.design_scale` separates from the judges' share.
    """
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, judges, size=(n_boot, judges))
    if not resample_judges:
        picked = np.broadcast_to(np.arange(judges), (n_boot, judges)).copy()
    pro_cols, con_cols = np.flatnonzero(is_pro), np.flatnonzero(~is_pro)
    pro = pro_cols[rng.integers(0, pro_cols.size, size=(n_boot, pro_cols.size))]
    con = con_cols[rng.integers(0, con_cols.size, size=(n_boot, con_cols.size))]
    return Draws(picked, pro, con)


def _counts(d: Draws, units: int) -> tuple[FloatArray, FloatArray]:
    """Per replicate: how often each judge was drawn, and the kernel of its margin.

    A replicate's margin is ``sum over judges j and units u of times[j] * share[u] *
    w[j] * x[j, u]`` over ``sum of times[j] * w[j]``, with ``share[u]`` the unit's
    draws over its side's size (negative for CON): one product with the outer product
    ``times x share`` of every replicate gives every item's margins at once. With one
    unit a side the share is the same in every replicate, and the kernel is that share.
    """
    n_boot, judges = d.judges.shape
    reps = np.arange(n_boot)[:, None]
    times = np.zeros((n_boot, judges))
    np.add.at(times, (reps, d.judges), 1.0)
    share = np.zeros((n_boot, units))
    np.add.at(share, (reps, d.pro), 1.0 / d.pro.shape[1])
    np.add.at(share, (reps, d.con), -1.0 / d.con.shape[1])
    if units == 2:
        return times, share[0]
    return times, (times[:, :, None] * share[:, None, :]).reshape(n_boot, judges * units)


def _counted_margins(
    x: FloatArray, w: FloatArray, times: FloatArray, kernel: FloatArray
) -> tuple[FloatArray, FloatArray | None]:
    """The exact path's replicate margins (:mod:`debate.stats._exact`) by matrix products.

    The same draws summed in another order: equal to rounding, not bit for bit. With equal
    positive weights every replicate's weight is positive, so it is not computed (None): a
    product as large as the margins' own, used only to find undefined replicates.
    """
    if kernel.ndim == 1:  # one unit a side: each judge's weighted difference, times drawn
        weighted = (x @ kernel) * w
    else:
        weighted = (x * w[:, :, None]).reshape(x.shape[0], -1)
    equal = (w == w[:, :1]).all() and (w[:, 0] > 0).all()
    if equal:  # every replicate weighs the same: divide once per item, not per replicate
        weighted = weighted / (w[:, :1] * times.shape[1])
    margins: FloatArray = weighted @ (times if kernel.ndim == 1 else kernel).T
    if equal:
        return margins, None
    total = w @ times.T
    with np.errstate(invalid="ignore", divide="ignore"):
        margins /= total
    return margins, total


def margin_draws(
    scores: FloatArray,
    is_pro: BoolArray,
    weights: FloatArray,
    n_boot: int,
    ci: float,
    seed: int | None,
    resample_judges: bool,
) -> tuple[FloatArray, FloatArray, list[Draws]]:
    """A batched bootstrap's checked inputs and its draws: ``(scores, weights, draws)``.

    The scores as items x judges x units, the weights as items x judges, and one set of
    draws per orientation (the sides as they stand; swapped too when a side has more than
    one unit, see :func:`bootstrap_margin_batch`); no draws for an empty batch. Every
    aggregator's interval resamples the same way.

    Raises:
        ValueError: ``ci`` outside (0, 1), or malformed arrays.
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be a level strictly between 0 and 1, such as 0.95; got {ci!r}")
    x = _items(scores)
    items, judges, units = x.shape
    w = _weights(weights, items, judges)
    mask = _sides(is_pro, units)
    if judges == 0 or items == 0:
        return x, w, []
    # With one unit a side there is nothing to draw among the units: every replicate is
    # negated exactly when the sides swap, and one orientation is all there is.
    orientations = [draw(judges, mask, n_boot, seed, resample_judges=resample_judges)]
    if units > 2 and 2 * int(mask.sum()) == units and seed is not None:
        orientations.append(_swapped(orientations[0], mask))
    elif units > 2:
        orientations.append(draw(judges, ~mask, n_boot, seed, resample_judges=resample_judges))
    return x, w, orientations


def _swapped(first: Draws, mask: BoolArray) -> Draws:
    """``draw`` of the swapped sides when both sides have as many units: no second draw.

    The swapped draw starts its generator from the same (given) seed and asks for the same
    numbers (judges, then as many units as before, twice), so it draws the same places:
    each side's drawn units are the other side's in the same places.
    """
    pro_cols, con_cols = np.flatnonzero(mask), np.flatnonzero(~mask)
    place = np.zeros(mask.size, dtype=np.intp)
    place[pro_cols] = np.arange(pro_cols.size)
    place[con_cols] = np.arange(con_cols.size)
    return Draws(first.judges, con_cols[place[first.pro]], pro_cols[place[first.con]])


def bootstrap_margin_batch(
    scores: FloatArray,
    is_pro: BoolArray,
    weights: FloatArray,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int | None = 0,
    resample_judges: bool = True,
) -> FloatArray:
    """Items x 2: the percentile interval of each item's PRO-CON margin.

    The semantics of ``bootstrap_margin``: judges resampled with their weights, units
    within each side; one set of draws serves every item of the batch. When a side has
    more than one unit, ``n_boot`` replicates draw the units as the sides stand (PRO's
    draws first) and ``n_boot`` more as if the sides were swapped (CON's first, the margin
    negated back), pooled, so that swapping which option is PRO negates the pooled
    replicates and mirrors the interval exactly, whatever the sides' sizes (drawing PRO
    first only gave a swapped table other draws). With one unit a side the replicates
    already mirror and are not doubled. Items are taken in chunks whose temporaries stay
    under :data:`CHUNK_BYTES`, on the process's cores (:func:`~debate.stats._parts.each_part`:
    the same bits on any number of threads). NaN where no replicate is defined. ``resample_judges``
    False holds the judges fixed (see :func:`draw`).
    """
    x, w, orientations = margin_draws(scores, is_pro, weights, n_boot, ci, seed, resample_judges)
    items, judges, units = x.shape
    out = np.full((items, 2), np.nan)
    if not orientations:
        return out
    sign = SWAPPED_SIGN
    if items <= EXACT_ITEMS:
        [out] = exact_intervals(
            x, w, orientations, ci, (not resample_judges,), np.asarray(is_pro, dtype=bool)
        )
        return out
    counted = [_counts(d, units) for d in orientations]
    replicates = n_boot * len(orientations)

    def chunk(part: slice) -> None:  # its own rows of out only: see each_part
        pairs = [_counted_margins(x[part], w[part], *c) for c in counted]
        margins = (  # one orientation's sign is 1.0: its margins as they are, not copied
            pairs[0][0]
            if len(pairs) == 1
            else np.concatenate([s * m for s, (m, _) in zip(sign, pairs, strict=False)], 1)
        )
        totals = [t for _, t in pairs if t is not None]
        total = np.concatenate(totals, 1) if len(totals) == len(pairs) else None
        out[part] = sorted_percentiles(margins, total, ci)

    step = max(1, CHUNK_BYTES // (8 * replicates * 4))  # margins, weights, sorted copy, mask
    with one_blas_thread():  # products over a few judges: memory-bound (see _blas)
        each_part(chunk, items, step)
    return out


def bootstrap_margin_pair_batch(
    scores: FloatArray, is_pro: BoolArray, weights: FloatArray, ci: float, seed: int | None
) -> tuple[FloatArray, FloatArray]:
    """:func:`bootstrap_margin_batch` with the judges resampled, then held fixed (2,000 draws).

    Bit for bit the two calls' intervals; both draw the same units (one seed), so a batch
    on the exact path draws and gathers them once for both.
    """
    x, w, orientations = margin_draws(scores, is_pro, weights, 2000, ci, seed, True)
    if orientations and x.shape[0] <= EXACT_ITEMS:
        found, held = exact_intervals(
            x, w, orientations, ci, (False, True), np.asarray(is_pro, dtype=bool)
        )
        return found, held
    found = bootstrap_margin_batch(scores, is_pro, weights, ci=ci, seed=seed)
    kept = bootstrap_margin_batch(scores, is_pro, weights, ci=ci, seed=seed, resample_judges=False)
    return found, kept
