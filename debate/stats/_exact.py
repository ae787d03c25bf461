"""The small batch's bootstrap margins, bit for bit the scalar ``bootstrap_margin``'s.

Up to ``EXACT_ITEMS`` items, :func:`debate.stats.bootstrap_margin_batch` resamples as the
scalar function does: each replicate's mean of the drawn units of a side, per drawn judge,
and the weighted mean of the drawn judges' differences. The same sums in the same order
give the same bits. numpy adds fewer than :data:`PAIRWISE_FROM` values one after another
whatever their layout, so with fewer judges and fewer units a side than that (a live
debate's four judges and three arguments a side) every sum is written out as a chain of
additions of small arrays, one per judge or unit (:func:`_chained_intervals`): several
times faster than gathering every drawn cell. From it on, numpy's own reductions, over
arrays laid out as the scalar function's are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from debate.stats._quantiles import defined_percentiles

if TYPE_CHECKING:
    from debate.stats._batched import Draws

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

SWAPPED_SIGN = (1.0, -1.0)
"""Per orientation of :func:`margin_draws`, the sign that turns its margins into PRO - CON
(the swapped orientation's are CON - PRO: negated back)."""


PAIRWISE_FROM = 8
"""numpy adds fewer values than this one after another, whatever their layout; from it on a
contiguous row is added in pairwise blocks, a strided one in sequence."""


def _side_means(x: FloatArray, judges: IntArray, units: IntArray) -> FloatArray:
    """Per item, replicate and drawn judge: the mean of the side's drawn units.

    Below :data:`PAIRWISE_FROM` units the cells are taken by one flat index and their
    values added slice by slice, one vectorised pass per unit: several times faster than
    reducing thousands of short rows, and the same sums in the same order. From it on, the
    original gather and reduction, whose order depends on the layout numpy gives it.
    """
    k = units.shape[1]
    if k >= PAIRWISE_FROM:
        means: FloatArray = x[:, judges[:, :, None], units[:, None, :]].mean(axis=-1)
        return means
    cells = x.reshape(x.shape[0], -1).take(judges[:, :, None] * x.shape[2] + units[:, None, :], 1)
    total: FloatArray = cells[..., 0]
    for i in range(1, k):
        total = total + cells[..., i]
    mean: FloatArray = total / k
    return mean


def _judge_differences(x: FloatArray, d: Draws, every: IntArray) -> FloatArray:
    """Items x replicates x judges: every judge's drawn PRO mean minus its drawn CON mean.

    Every judge's, not every drawn judge's: a judge drawn twice reads the same cells
    twice, so gathering these by the drawn judges gives, bit for bit, the differences of
    the gathered scores, and the bootstrap that holds the judges fixed reuses them.
    """
    differences: FloatArray = _side_means(x, every, d.pro) - _side_means(x, every, d.con)
    return differences


def _drawn(differences: FloatArray, judges: IntArray, fixed: bool) -> FloatArray:
    """A fresh C-ordered items x replicates x judges array of the drawn judges' differences."""
    if fixed:
        return differences.copy()
    items, n_boot, size = differences.shape
    drawn: FloatArray = differences.reshape(items, -1).take(
        np.arange(n_boot)[:, None] * size + judges, axis=1
    )
    return drawn


def _exact_margins(
    differences: FloatArray, w: FloatArray, judges: IntArray, fixed: bool
) -> tuple[FloatArray, FloatArray]:
    """Replicate margins summed as the scalar function sums them, and their weights.

    ``fixed``: ``judges`` is every judge once in every replicate (the judges held fixed).
    From eight judges on, the sum over them is pairwise along a contiguous row only, so
    the product must be laid out as the scalar function's is: its difference of side
    means was a fresh temporary, which numpy reuses in place when large; ``_drawn``'s
    array is one too.
    """
    wj = w[:, judges]
    total = wj.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        margins: FloatArray = (_drawn(differences, judges, fixed) * wj).sum(axis=-1) / total
    return margins, total


def exact_intervals(
    x: FloatArray, w: FloatArray, orientations: list[Draws], ci: float, held: tuple[bool, ...]
) -> list[FloatArray]:
    """Items x 2 per entry of ``held``: the exact path's interval, judges resampled or not.

    Every entry (False: judges resampled, True: held fixed) from one set of draws and one
    gather of the units.
    """
    short = max(max(d.pro.shape[1], d.con.shape[1]) for d in orientations)
    if max(x.shape[1], short) < PAIRWISE_FROM:
        return _chained_intervals(x, w, orientations, ci, held)
    every = np.broadcast_to(np.arange(x.shape[1]), orientations[0].judges.shape).copy()
    differences = [_judge_differences(x, d, every) for d in orientations]
    found = [
        [
            _exact_margins(diff, w, every if fixed else d.judges, fixed)
            for d, diff in zip(orientations, differences, strict=True)
        ]
        for fixed in held
    ]
    return [_interval(pairs, ci) for pairs in found]


def _interval(pairs: list[tuple[FloatArray, FloatArray]], ci: float) -> FloatArray:
    """Items x 2: the interval of the orientations' (margins, weights), PRO - CON."""
    margins = np.concatenate([s * m for s, (m, _) in zip(SWAPPED_SIGN, pairs, strict=False)], 1)
    return defined_percentiles(margins, np.concatenate([t for _, t in pairs], 1), ci)


def _chained_intervals(
    x: FloatArray, w: FloatArray, orientations: list[Draws], ci: float, held: tuple[bool, ...]
) -> list[FloatArray]:
    """:func:`exact_intervals` when every sum is of fewer than :data:`PAIRWISE_FROM` values.

    Both orientations' replicates side by side in one array (the swapped one's PRO units
    are its second draws): each chain runs once over twice the replicates.
    """
    n_boot = orientations[0].judges.shape[0]
    sides = [(d.pro, d.con) if i == 0 else (d.con, d.pro) for i, d in enumerate(orientations)]
    pro = _chained_mean(x, np.concatenate([p for p, _ in sides]))
    con = _chained_mean(x, np.concatenate([c for _, c in sides]))
    parts = [pro[..., :n_boot] - con[..., :n_boot]]  # the swapped: its own "PRO - CON"
    parts += [con[..., n_boot:] - pro[..., n_boot:]] if len(orientations) > 1 else []
    differences = np.concatenate(parts, axis=2)
    judges = np.concatenate([d.judges for d in orientations])
    out = []
    for fixed in held:
        margins, total = _chained_margins(differences, w, None if fixed else judges)
        margins[:, n_boot:] *= SWAPPED_SIGN[1]
        out.append(defined_percentiles(margins, total, ci))
    return out


def _chained_mean(x: FloatArray, units: IntArray) -> FloatArray:
    """Items x judges x replicates: each judge's mean of the side's drawn units, in order."""
    total: FloatArray = x.take(units[:, 0], axis=2)
    for i in range(1, units.shape[1]):
        total = total + x.take(units[:, i], axis=2)
    mean: FloatArray = total / units.shape[1]
    return mean


def _chained_margins(
    differences: FloatArray, w: FloatArray, judges: IntArray | None
) -> tuple[FloatArray, FloatArray]:
    """Items x replicates: the weighted mean of the drawn judges' differences, and its weight.

    ``differences`` is items x judges x replicates; ``judges`` None holds every judge once.
    """
    items, size, n_boot = differences.shape
    if judges is None:
        weight, total = differences[:, 0] * w[:, :1], w[:, 0]
        for j in range(1, size):
            weight, total = weight + differences[:, j] * w[:, j : j + 1], total + w[:, j]
        totals = np.broadcast_to(total[:, None], (items, n_boot))
    else:
        flat, reps = differences.reshape(items, -1), np.arange(n_boot)
        wj = w.take(judges[:, 0], axis=1)
        weight, totals = flat.take(judges[:, 0] * n_boot + reps, axis=1) * wj, wj
        for p in range(1, judges.shape[1]):
            wj = w.take(judges[:, p], axis=1)
            weight = weight + flat.take(judges[:, p] * n_boot + reps, axis=1) * wj
            totals = totals + wj
    with np.errstate(invalid="ignore", divide="ignore"):
        margins: FloatArray = weight / totals
    return margins, totals
