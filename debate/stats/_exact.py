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

from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from debate.stats._quantiles import defined_percentiles

if TYPE_CHECKING:
    from debate.stats._batched import Draws

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

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
    x: FloatArray,
    w: FloatArray,
    orientations: list[Draws],
    ci: float,
    held: tuple[bool, ...],
    is_pro: BoolArray,
) -> list[FloatArray]:
    """Items x 2 per entry of ``held``: the exact path's interval, judges resampled or not.

    Every entry (False: judges resampled, True: held fixed) from one set of draws and one
    gather of the units; ``is_pro`` the sides the draws were made from.
    """
    short = max(max(d.pro.shape[1], d.con.shape[1]) for d in orientations)
    if max(x.shape[1], short) < PAIRWISE_FROM:
        return _chained_intervals(x, w, orientations, is_pro, ci, held)
    # From eight judges or units a side on, numpy sums a gathered batch's cells pairwise, in
    # an order that depends on how many items the batch holds: together, an item's interval
    # could differ in its last bit from the one it gets alone (the scalar bootstrap_margin's,
    # a batch of one). Such batches are small (EXACT_ITEMS) and rare in a live panel: each
    # item is taken alone.
    out = [np.full((x.shape[0], 2), np.nan) for _ in held]
    for i in range(x.shape[0]):
        found = _summed(x[i : i + 1], w[i : i + 1], orientations, ci, held)
        for whole, part in zip(out, found, strict=True):
            whole[i] = part[0]
    return out


def _summed(
    x: FloatArray, w: FloatArray, orientations: list[Draws], ci: float, held: tuple[bool, ...]
) -> list[FloatArray]:
    """:func:`exact_intervals` of one item by numpy's own reductions.

    Over arrays laid out as the scalar function's are, so its sums are the scalar's.
    """
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
    x: FloatArray,
    w: FloatArray,
    orientations: list[Draws],
    is_pro: BoolArray,
    ci: float,
    held: tuple[bool, ...],
) -> list[FloatArray]:
    """:func:`exact_intervals` when every sum is of fewer than :data:`PAIRWISE_FROM` values.

    Both orientations' replicates side by side (the swapped one's PRO units are its second
    draws), every drawn judge's difference read from :func:`_differences`' table.
    """
    n_boot = orientations[0].judges.shape[0]
    sides = [(d.pro, d.con) if i == 0 else (d.con, d.pro) for i, d in enumerate(orientations)]
    table, at, step = _differences(x, sides, n_boot, is_pro)
    items, judges = w.shape
    weighted = table.reshape(items, -1, judges, step)
    weighted *= w[:, None, :, None]  # each cell times its judge's weight: a view, in place
    drawn = np.empty((judges, at.size), dtype=np.intp)  # places x replicates
    for i, d in enumerate(orientations):
        drawn[:, i * n_boot : (i + 1) * n_boot] = d.judges.T
    out = []
    for fixed in held:
        margins, total = _chained_margins(table, at, step, w, None if fixed else drawn)
        margins[:, n_boot:] *= SWAPPED_SIGN[1]
        out.append(defined_percentiles(margins, total, ci))
    return out


def _differences(
    x: FloatArray, sides: list[tuple[IntArray, IntArray]], n_boot: int, is_pro: BoolArray
) -> tuple[FloatArray, IntArray, int]:
    """Every judge's PRO - CON difference of means, where each replicate finds it.

    Items x cells, each replicate's cell for the first judge, the step to the next judge's.
    A side of ``k`` units has ``k**k`` ordered draws: when both sides' together are fewer
    than the replicates, each judge's difference is computed once per pair of draws
    (the same chain of additions, so the same bits) and read by the replicate's pair.
    Otherwise a difference per judge and replicate. ``sides``: each orientation's PRO and
    CON draws; the replicates past ``n_boot`` are the swapped one's, whose difference is
    CON - PRO.
    """
    items, judges, _ = x.shape
    k_pro, k_con = sides[0][0].shape[1], sides[0][1].shape[1]
    kinds = k_pro**k_pro, k_con**k_con
    if max(kinds) > 4096 or kinds[0] * kinds[1] > n_boot:
        pro, con = (np.concatenate([pair[s] for pair in sides]) for s in (0, 1))
        means = [_chained_mean(x, units) for units in (pro, con)]
        parts = [means[0][..., :n_boot] - means[1][..., :n_boot]]
        parts += [means[1][..., n_boot:] - means[0][..., n_boot:]] if pro.shape[0] > n_boot else []
        return (
            np.concatenate(parts, axis=2).reshape(items, -1),
            np.arange(pro.shape[0]),
            pro.shape[0],
        )
    p_cols, c_cols = np.flatnonzero(is_pro), np.flatnonzero(~is_pro)
    p_code = np.concatenate([_code(p, p_cols) for p, _ in sides])
    c_code = np.concatenate([_code(c, c_cols) for _, c in sides])
    p_draws, c_draws = p_cols[_every_draw(k_pro)], c_cols[_every_draw(k_con)]
    p_mean, c_mean = (
        _chained_mean(x, p_draws)[..., :, None],
        _chained_mean(x, c_draws)[..., None, :],
    )
    table = np.stack([p_mean - c_mean, c_mean - p_mean], axis=1).reshape(items, -1)
    step = p_draws.shape[0] * c_draws.shape[0]
    swapped = (np.arange(p_code.size) >= n_boot) * (judges * step)
    return table, swapped + p_code * c_draws.shape[0] + c_code, step


def _code(units: IntArray, columns: IntArray) -> IntArray:
    """Each replicate's draw of a side's ``k`` columns as a number in base ``k``.

    A column counts by its place among the side's ``columns``; the draws are numbered as
    the rows of :func:`_every_draw`, so the side's draw ``r`` is ``columns[that row]``.
    """
    k = units.shape[1]
    place = np.zeros(int(columns[-1]) + 1, dtype=np.intp)
    place[columns] = np.arange(k)
    drawn = place[units]
    code = drawn[:, 0]
    for t in range(1, k):
        code = code * k + drawn[:, t]
    return code


@cache
def _every_draw(k: int) -> IntArray:
    """All ``k**k`` ordered draws of ``k`` places, in base-``k`` order (read-only)."""
    found: IntArray = np.indices((k,) * k).reshape(k, -1).T
    found.flags.writeable = False
    return found


def _chained_mean(x: FloatArray, units: IntArray) -> FloatArray:
    """Items x judges x rows of ``units``: each judge's mean of those units, in order."""
    total: FloatArray = x.take(units[:, 0], axis=2)
    for i in range(1, units.shape[1]):
        total = total + x.take(units[:, i], axis=2)
    mean: FloatArray = total / units.shape[1]
    return mean


def _chained_margins(
    weighted: FloatArray, at: IntArray, step: int, w: FloatArray, drawn: IntArray | None
) -> tuple[FloatArray, FloatArray]:
    """Items x replicates: the weighted mean of the drawn judges' differences, and its weight.

    Judge ``j``'s difference in replicate ``r``, times its weight, is ``weighted[:, at[r] +
    j * step]`` (the product a replicate's term is, made once per cell of the table);
    ``drawn`` is places x replicates, the judge drawn in each place, or None to hold every
    judge once. The sums over the places stay a chain, in the places' order, a place at a
    time: temporaries of a few replicates' rows stay small enough to be reused, where one
    gather of every place's cells had the allocator map fresh pages on every call.
    """
    if drawn is None:
        drawn = np.arange(w.shape[1])[:, None]
    shared = w[:1] if (w == w[:1]).all() else w  # every item's weights alike: drawn once
    weight = weighted.take(at + drawn[0] * step, axis=1)
    total = shared.take(drawn[0], axis=1)
    for p in range(1, drawn.shape[0]):
        weight += weighted.take(at + drawn[p] * step, axis=1)
        total = total + shared.take(drawn[p], axis=1)
    totals = np.broadcast_to(total, weight.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        margins: FloatArray = weight / totals
    return margins, totals
