"""How many independent votes a panel's judges are worth: correlation and effective votes.

Judges that share a model make the same mistakes, so four of them can be worth fewer than
two independent votes. The panel measures how its judges move together and turns that into
an effective number of votes:

* :func:`correlation_batch`: each pair of judges' Pearson correlation over the columns of
  an item (a debate's arguments, or a table's items): their agreement beyond chance
  without labels, their error correlation when the columns are errors against a label.
* :func:`effective_votes`: the design-effect number ``n / (1 + (n - 1) r)`` with ``r`` the
  mean pairwise correlation (Kish 1965, *Survey Sampling*; the "effective number of
  raters" of a mean of equicorrelated ratings), written ``n**2 / sum of R`` over the whole
  correlation matrix ``R``. Four copies of one judge count 1, four uncorrelated judges 4;
  it is the number whose inverse the variance of the panel's mean grows by, which is what
  the margin's interval needs. (The eigenvalue counts of Nyholt 2004 and Li & Ji 2005
  were weighed: Li & Ji's jumps from about 2 to 1 as four near-copies become exact copies,
  and neither is the variance of a mean.) Kept within [1, n].
* :func:`effective_votes_interval`: its percentile interval from the bootstrap over the
  columns.
* :func:`design_scale`: how much wider a margin's interval must be when the bootstrap
  treated ``n`` judges as independent but they are worth ``n_eff``: the judges' share of
  the variance grows by the design effect ``w'Rw / w'w`` (``n / n_eff`` for equal
  weights), the units' share stays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

ESTIMATOR = "design-effect (Kish 1965): n / (1 + (n - 1) * mean pairwise r)"
"""The estimator's name, recorded beside every effective number of votes."""
CLUSTER_CORRELATION = 0.9
"""Judges correlated at least this much move as one: they are named as a cluster."""
N_BOOT = 200
"""Bootstrap draws of the effective votes' interval: a judges x judges eigen-decomposition
per draw, and the interval is a description, not a gate."""
EXACT_INTERVAL_ITEMS = 16
"""Batches of up to this many items get the effective votes' interval (a live panel is
one item); a recorded table of 100,000 items would spend minutes on per-item bootstraps
of a figure that gates nothing, and gets the point value only."""
_SAME = 1e-12


def correlation_batch(x: FloatArray, groups: NDArray[np.bool_] | None = None) -> FloatArray:
    """Items x judges x judges: Pearson correlation of each pair of judges over the columns.

    ``groups`` (a boolean per column, e.g. "is PRO"): each judge's mean within each group is
    removed first, so the correlation is of the judges' patterns within the sides, not of
    the side difference itself: judges who agree on which side is better are not taken for
    copies, while copies (the same scores argument by argument) still correlate 1.

    A judge whose values do not vary shares no variation with anyone (0), except with a
    judge whose values are exactly its own (1: a copy is a copy). The diagonal is 1. NaN
    everywhere for an item with fewer than two degrees of freedom left (fewer than three
    columns, four with groups), where a correlation of two points is always +-1 and says
    nothing beyond chance.
    """
    values = np.asarray(x, dtype=np.float64)
    items, judges, columns = values.shape
    kinds = [] if groups is None else [g for g in (groups, ~groups) if g.any()]
    if columns - max(len(kinds), 1) < 2:
        return np.full((items, judges, judges), np.nan)
    if kinds:
        centred = values.copy()
        for g in kinds:
            centred[:, :, g] -= values[:, :, g].mean(axis=2, keepdims=True)
    else:
        centred = values - values.mean(axis=2, keepdims=True)
    norm = np.sqrt((centred * centred).sum(axis=2))
    flat = norm <= _SAME * np.maximum(1.0, _largest(np.abs(values)))
    safe = np.where(flat, 1.0, norm)
    unit = centred / safe[:, :, None]
    corr = unit @ unit.transpose(0, 2, 1)
    if flat.any():  # a pair touches a judge whose values do not vary
        touched = flat[:, :, None] | flat[:, None, :]
        corr = np.where(touched, 0.0, corr)
        # only the pairs of judges that do not vary: no items x judges^2 x units array
        b, j, k = np.nonzero(flat[:, :, None] & flat[:, None, :])
        same = np.abs(values[b, j] - values[b, k]).max(axis=1, initial=0.0) <= _SAME
        corr[b[same], j[same], k[same]] = 1.0
    corr = np.clip(corr, -1.0, 1.0)
    eye = np.eye(judges, dtype=bool)
    corr[:, eye] = 1.0
    out: FloatArray = corr
    return out


def _largest(values: FloatArray) -> FloatArray:
    """``values.max(axis=2, initial=0.0)``, column by column.

    A maximum is exact, so its order does not matter: a few passes over short rows cost
    less than a reduction of each row.
    """
    found = np.maximum(values[:, :, 0], 0.0)
    for c in range(1, values.shape[2]):
        found = np.maximum(found, values[:, :, c])
    return found


def effective_votes(corr: FloatArray) -> FloatArray:
    """``n**2 / sum(R)`` over the last two axes, within [1, n]; NaN where R has a NaN."""
    c = np.asarray(corr, dtype=np.float64)
    n = c.shape[-1]
    out = np.full(c.shape[:-2], np.nan)
    if n == 0:
        return out
    total = c.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        found = np.where(total > 0, n * n / np.where(total > 0, total, 1.0), float(n))
    found = np.clip(np.round(found, 9), 1.0, float(n))
    defined = ~np.isnan(c).any(axis=(-2, -1))
    out[defined] = found[defined]
    return out


def design_effect(corr: FloatArray, weights: FloatArray) -> FloatArray:
    """``w'Rw / w'w`` per item: the design effect of correlated judges on a weighted mean.

    How much more the weighted mean varies than the bootstrap, which draws judges as if
    independent, assumes; at least 1, and 1 where R is undefined.
    """
    c = np.asarray(corr, dtype=np.float64)
    w = np.broadcast_to(np.asarray(weights, dtype=np.float64), c.shape[:-1])
    quad = np.einsum("...j,...jk,...k->...", w, np.nan_to_num(c, nan=0.0), w)
    own = (w * w).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        effect = np.where(own > 0, quad / np.where(own > 0, own, 1.0), 1.0)
    undefined = np.isnan(c).any(axis=(-2, -1))
    out: FloatArray = np.where(undefined, 1.0, np.maximum(np.round(effect, 9), 1.0))
    return out


def effective_votes_interval(
    x: FloatArray,
    groups: NDArray[np.bool_] | None = None,
    *,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> tuple[float, float] | None:
    """Percentile interval of the effective votes of ``judges x columns``, columns resampled.

    With ``groups`` the columns are resampled within each group (a side keeps its size).
    None when the columns leave too few degrees of freedom or no draw is defined.
    """
    values = np.asarray(x, dtype=np.float64)
    [found] = effective_votes_intervals(values[None], groups, ci=ci, n_boot=n_boot, seed=seed)
    return found


def effective_votes_intervals(
    x: FloatArray,
    groups: NDArray[np.bool_] | None = None,
    *,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
    seeds: Sequence[int | None] | None = None,
) -> list[tuple[float, float] | None]:
    """:func:`effective_votes_interval` of each item of ``items x judges x columns``.

    Every item's columns are resampled with the same draws (one seed), each item's its own
    rows of one correlation batch: the intervals each item gets alone, bit for bit, in one
    pass instead of one per item. ``seeds``: one per item instead, each item resampled as
    its own seed draws (each seed drawn once), still in one pass.
    """
    values = np.asarray(x, dtype=np.float64)
    items, judges, columns = values.shape
    if seeds is not None and len(seeds) != items:
        raise ValueError(f"seeds: give one per item ({items}), not {len(seeds)}; or none")
    if judges == 0 or items == 0:
        return [None] * items
    distinct = [seed] if seeds is None else list(dict.fromkeys(seeds))
    sets = [_picks(own, columns, groups, n_boot) for own in distinct]  # each n_boot x columns
    if len(sets) == 1:
        # items x n_boot x judges x columns in C order: the steps below read contiguous rows
        draws = np.ascontiguousarray(values[:, :, sets[0]].transpose(0, 2, 1, 3))
    else:
        at = {own: i for i, own in enumerate(distinct)}
        picks = np.stack(sets)[[at[own] for own in seeds or ()]]  # items x n_boot x columns
        draws = np.take_along_axis(values[:, None], picks[:, :, None, :], axis=3)
    order = None if groups is None else groups[sets[0][0]]  # every draw keeps the groups' order
    flat = draws.reshape(items * n_boot, judges, columns)
    found = effective_votes(correlation_batch(flat, order)).reshape(items, n_boot)
    tail = (1 - ci) / 2
    out: list[tuple[float, float] | None] = []
    for row in found:
        kept = row[np.isfinite(row)]
        if kept.size == 0:
            out.append(None)
            continue
        low, high = np.quantile(kept, [tail, 1 - tail])
        out.append((float(np.round(low, 9)), float(np.round(high, 9))))
    return out


def _picks(
    seed: int | None, columns: int, groups: NDArray[np.bool_] | None, n_boot: int
) -> NDArray[np.intp]:
    """One seed's resampled columns, n_boot x columns: within each group when there are groups."""
    rng = np.random.default_rng(seed)
    if groups is None:
        found: NDArray[np.intp] = rng.integers(0, columns, size=(n_boot, columns))
        return found
    parts = [np.flatnonzero(g) for g in (groups, ~groups) if g.any()]
    return np.concatenate(
        [p[rng.integers(0, p.size, size=(n_boot, p.size))] for p in parts], axis=1
    )


def clusters(corr: FloatArray, names: Sequence[str]) -> list[list[str]]:
    """Groups of two or more judges linked by correlations of at least 0.9, in panel order."""
    return [[names[j] for j in group] for group in cluster_indices(corr)]


def cluster_indices(corr: FloatArray) -> list[list[int]]:
    """:func:`clusters` as indices into the judges (chains count: a-b and b-c link a-c)."""
    c = np.asarray(corr, dtype=np.float64)
    if np.isnan(c).any():
        return []
    linked = c >= CLUSTER_CORRELATION
    if linked.sum() == c.shape[0]:  # the diagonal only: no cluster
        return []
    seen: set[int] = set()
    groups = []
    for start in range(c.shape[0]):
        if start in seen:
            continue
        group, stack = {start}, [start]
        while stack:
            j = stack.pop()
            for k in np.flatnonzero(linked[j]).tolist():
                if k not in group:
                    group.add(k)
                    stack.append(k)
        seen |= group
        if len(group) > 1:
            groups.append(sorted(group))
    return groups


def cluster_batch(corr: FloatArray) -> list[list[list[int]]]:
    """:func:`cluster_indices` of every item; items without a link skip the search."""
    c = np.asarray(corr, dtype=np.float64)
    items, judges = c.shape[0], c.shape[-1]
    off = ~np.eye(judges, dtype=bool)
    linked = (c >= CLUSTER_CORRELATION) & off  # NaN is never linked
    candidates = linked.any(axis=(1, 2)) & ~np.isnan(c).any(axis=(1, 2))
    out: list[list[list[int]]] = [[] for _ in range(items)]
    for b in np.flatnonzero(candidates).tolist():
        out[b] = cluster_indices(c[b])
    return out


def split_weights(
    corr: FloatArray, weights: FloatArray, groups: list[list[list[int]]] | None = None
) -> FloatArray:
    """Items x judges: each judge's weight divided by the size of its cluster.

    Copies of one judge then weigh together what that judge weighs alone, so duplicating a
    judge moves neither the vote nor (with :func:`design_effect`) its interval. A cluster
    that is the whole panel is left alone: dividing every weight alike changes nothing.
    """
    c = np.asarray(corr, dtype=np.float64)
    items, judges = c.shape[0], c.shape[-1]
    out = np.array(np.broadcast_to(np.asarray(weights, dtype=np.float64), (items, judges)))
    for b, found in enumerate(cluster_batch(c) if groups is None else groups):
        for group in found:
            if len(group) < judges:
                out[b, group] /= len(group)
    result: FloatArray = out
    return result


def design_scale(total: FloatArray, units: FloatArray, effect: FloatArray) -> FloatArray:
    """Per item: the factor a margin interval's half-widths grow by for correlated judges.

    ``total`` is the width of the interval with judges and units resampled, ``units`` its
    width with the judges held fixed; the difference of their squares is the judges' share,
    which the design ``effect`` (:func:`design_effect`) multiplies. 1 where the effect is 1
    (independent judges: the bootstrap was right) or a width is undefined.
    """
    t = np.asarray(total, dtype=np.float64)
    u = np.asarray(units, dtype=np.float64)
    e = np.maximum(np.nan_to_num(np.asarray(effect, dtype=np.float64), nan=1.0), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        judge_share = np.maximum(t * t - u * u, 0.0)
        scale = np.sqrt((np.minimum(u * u, t * t) + e * judge_share) / (t * t))
    ok = np.isfinite(scale) & (t > 0)
    out: FloatArray = np.where(ok, np.maximum(scale, 1.0), 1.0)
    return out
