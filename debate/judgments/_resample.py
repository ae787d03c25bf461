"""The item bootstrap behind the validity metrics, and rank correlations under it.

Items are resampled with replacement, because the decision units (and option pairs, and
scored options) of one item share its difficulty and are not independent. All replicates
are one replicates x items count matrix drawn once; a total over rows is then a matrix
product with the per-item sums, so no Python loop runs over replicates for a ratio.

Spearman's rho in a replicate is Pearson's correlation of weighted mid-ranks (each row
counted as often as its item was drawn), computed for blocks of replicates at once; it
equals :func:`scipy.stats.spearmanr` on the expanded resample. Kendall's tau-b needs a sort
per replicate, so it uses :data:`KENDALL_REPLICATES` replicates and, above
:data:`KENDALL_ITEMS` items, an m-out-of-n bootstrap of that many items whose spread is
rescaled by ``sqrt(m / n)`` (tau is asymptotically normal at rate root-n).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats as sps

from debate.judgments._arrays import FloatArray, Index, IntArray
from debate.records import Estimate
from debate.stats import draw_counts

"""Item indices (int32 in a frame, intp from numpy's own index functions)."""

KENDALL_REPLICATES = 200
"""Kendall's tau sorts every replicate (O(n log n) each): its interval uses this many."""
KENDALL_ITEMS = 2000
"""Above this many items, Kendall's replicates draw this many (m-out-of-n, rescaled)."""
CHUNK_CELLS = 4_000_000
"""Replicates x columns per block of a bootstrap matrix (32 MB of float64), to bound memory."""


def interval(replicates: FloatArray) -> tuple[float | None, float | None]:
    """The 2.5 and 97.5 percentiles of the defined replicates (None with fewer than two)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size < 2:
        return None, None
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)


def estimate(value: float, replicates: FloatArray, n: int, note: str | None = None) -> Estimate:
    """An :class:`Estimate` from a point value and its bootstrap replicates."""
    low, high = interval(replicates)
    return Estimate(value=value, low=low, high=high, n=n, note=note)


def undefined(n: int, note: str) -> Estimate:
    """A figure that cannot be computed: no value, the reason, never a stand-in 0 or 1."""
    return Estimate(value=None, n=n, note=note)


def ratio(num: float, den: float, rep_num: FloatArray, rep_den: FloatArray, of: str) -> Estimate:
    """``num / den`` with its bootstrap interval; undefined when there is nothing to divide."""
    if den <= 0:
        return undefined(0, f"no {of}")
    with np.errstate(divide="ignore", invalid="ignore"):
        replicates = np.where(rep_den > 0, rep_num / rep_den, np.nan)
    return estimate(num / den, replicates, int(round(den)))


class ItemBootstrap:
    """Items resampled with replacement, all replicates drawn at once.

    ``counts[r, i]`` is how often item ``i`` is drawn in replicate ``r``; every row an item
    owns (its units, its options, its pairs of options) is weighted by that count.
    """

    def __init__(self, n_items: int, replicates: int, seed: int) -> None:
        self.seed = seed
        self.counts = draw_counts(np.random.default_rng(seed), n_items, n_items, replicates)

    @property
    def replicates(self) -> int:
        return int(self.counts.shape[0])

    @property
    def items(self) -> int:
        return int(self.counts.shape[1])

    def totals(self, item: Index, *columns: NDArray[Any]) -> tuple[FloatArray, FloatArray]:
        """Each column's total, and its total in every replicate (replicates x columns).

        Args:
            item: The item index of each row of the columns.
            *columns: Per-row values (booleans count as 0/1).
        """
        sums = np.column_stack(
            [np.bincount(item, weights=np.asarray(c, float), minlength=self.items) for c in columns]
        )
        return sums.sum(axis=0), self.counts @ sums

    def ratio(self, item: Index, num: NDArray[Any], den: NDArray[Any], of: str) -> Estimate:
        """``sum(num) / sum(den)`` with its item-bootstrap interval."""
        point, reps = self.totals(item, num, den)
        return ratio(point[0], point[1], reps[:, 0], reps[:, 1], of)

    def kendall_counts(self) -> tuple[FloatArray, float]:
        """The replicates Kendall's tau is computed on, and the factor that rescales them.

        The first :data:`KENDALL_REPLICATES` replicates; above :data:`KENDALL_ITEMS` items,
        fresh draws of that many items each, with ``sqrt(m / n)`` to rescale their spread.
        """
        take = min(self.replicates, KENDALL_REPLICATES)
        if self.items <= KENDALL_ITEMS:
            return self.counts[:take], 1.0
        rng = np.random.default_rng([self.seed, 1])
        counts = draw_counts(rng, self.items, KENDALL_ITEMS, take)
        return counts, float(np.sqrt(KENDALL_ITEMS / self.items))


# --- rank correlations ------------------------------------------------------------------


@dataclass(frozen=True)
class RankPlan:
    """How to rank one vector under any resampling: its sort order and runs of ties."""

    order: IntArray
    ends: IntArray
    """Sorted position just past each run of equal values (empty without ties)."""
    run_of: IntArray | None
    """The run of each sorted position; None when no two values are equal."""


def rank_plan(values: FloatArray) -> RankPlan:
    """Sort once; every replicate's ranks reuse the order."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new_run = np.r_[True, ordered[1:] != ordered[:-1]]
    if new_run.all():
        return RankPlan(order=order, ends=np.empty(0, np.intp), run_of=None)
    ends = np.r_[np.flatnonzero(new_run)[1:], ordered.size]
    return RankPlan(order=order, ends=ends, run_of=np.cumsum(new_run) - 1)


def sorted_ranks(plan: RankPlan, weights: FloatArray) -> FloatArray:
    """Mid-ranks in sorted order, where sorted value ``j`` appears ``weights[j, r]`` times.

    Rows are the values (in ``plan``'s order) and columns the replicates, so the running
    sum runs down contiguous rows. A run of ties after ``b`` smaller copies, ending after
    ``e``, takes ranks ``b+1 .. e``; each copy gets their mean ``(b + e + 1) / 2``, as
    :func:`scipy.stats.rankdata` gives the expanded sample (copies of one row are ties too).
    """
    cumulative = np.cumsum(weights, axis=0)
    if plan.run_of is None:
        cumulative -= weights / 2
        cumulative += 0.5
        return cumulative
    end = cumulative[plan.ends - 1]
    before = np.concatenate([np.zeros((1, end.shape[1])), end[:-1]], axis=0)
    ranks: FloatArray = ((end + before + 1) / 2)[plan.run_of]
    return ranks


def spearman_replicates(
    xs: dict[str, FloatArray], y: FloatArray, item: Index, counts: FloatArray
) -> dict[str, FloatArray]:
    """Spearman's rho of each ``x`` with ``y`` in every replicate (rows: ``counts``).

    Mid-ranks keep the rank sum, so the weighted mean rank is ``(N + 1) / 2`` for ``N``
    resampled rows; only the second moments need a pass.
    """
    py = rank_plan(y)
    place = np.empty(y.size, np.intp)
    place[py.order] = np.arange(y.size)  # where each row sits in y's order
    plans = {name: rank_plan(x) for name, x in xs.items()}
    gather = {name: (item[p.order], place[p.order]) for name, p in plans.items()}
    by_item = np.ascontiguousarray(counts.T)  # items x replicates: gathers copy whole rows
    out = {name: np.empty(counts.shape[0]) for name in xs}
    step = max(1, CHUNK_CELLS // max(1, y.size))
    for start in range(0, counts.shape[0], step):
        block = by_item[:, start : start + step]
        wy = block[item[py.order]]
        ry = sorted_ranks(py, wy)
        total = wy.sum(axis=0)
        mean2 = ((total + 1) / 2) ** 2
        vy = np.einsum("ij,ij->j", wy * ry, ry) / total - mean2
        for name, plan in plans.items():
            rows, in_y = gather[name]
            wx = block[rows]
            rx = sorted_ranks(plan, wx)
            wrx = wx * rx
            vx = np.einsum("ij,ij->j", wrx, rx) / total - mean2
            cxy = np.einsum("ij,ij->j", wrx, ry[in_y]) / total - mean2
            with np.errstate(divide="ignore", invalid="ignore"):
                out[name][start : start + step] = cxy / np.sqrt(vx * vy)
    return out


def kendall_replicates(
    xs: dict[str, FloatArray], y: FloatArray, item: Index, counts: FloatArray
) -> dict[str, FloatArray]:
    """Kendall's tau-b of each ``x`` with ``y`` in each replicate, on the expanded resample."""
    rows = np.arange(y.size)
    out = {name: np.full(counts.shape[0], np.nan) for name in xs}
    for r in range(counts.shape[0]):
        take = np.repeat(rows, counts[r, item].astype(np.intp))
        ys = y[take]
        if np.ptp(ys) == 0:
            continue
        for name, x in xs.items():
            sample = x[take]
            if np.ptp(sample) > 0:
                out[name][r] = sps.kendalltau(sample, ys).statistic
    return out


def rank_correlations(
    xs: dict[str, FloatArray], people: FloatArray, item: Index, boot: ItemBootstrap
) -> dict[str, tuple[Estimate, Estimate]]:
    """Spearman and Kendall of each method's scores with people's mean score.

    Each method is correlated over the options both it and people scored; methods with the
    same scored options share people's ranks.
    """
    out: dict[str, tuple[Estimate, Estimate]] = {}
    groups: dict[bytes, list[str]] = {}
    for name, x in xs.items():
        valid = np.isfinite(x) & np.isfinite(people)
        groups.setdefault(np.packbits(valid).tobytes(), []).append(name)
    for names in groups.values():
        valid = np.isfinite(xs[names[0]]) & np.isfinite(people)
        y, it, n = people[valid], item[valid], int(valid.sum())
        usable = {}
        for name in names:
            x = xs[name][valid]
            if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
                why = "fewer than 3 options scored by both" if n < 3 else "no variation in scores"
                out[name] = (undefined(n, why), undefined(n, why))
            else:
                usable[name] = x
        if usable:
            out |= _correlate(usable, y, it, boot)
    return out


def _correlate(
    xs: dict[str, FloatArray], y: FloatArray, item: Index, boot: ItemBootstrap
) -> dict[str, tuple[Estimate, Estimate]]:
    rhos = spearman_replicates(xs, y, item, boot.counts)
    counts, scale = boot.kendall_counts()
    taus = kendall_replicates(xs, y, item, counts)
    out = {}
    for name, x in xs.items():
        rho = float(sps.spearmanr(x, y).statistic)
        tau = float(sps.kendalltau(x, y).statistic)
        spread = tau + scale * (taus[name] - tau)
        out[name] = (estimate(rho, rhos[name], y.size), estimate(tau, spread, y.size))
    return out
