"""The margin's bootstrap interval of a batch of items, and its widening for correlated judges.

Apart from :mod:`debate.panel._decision` so that the rule for asking the bootstrap (which
aggregator, one set of draws for several score arrays) has one home.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from debate.stats import (
    EXACT_ITEMS,
    bootstrap_aggregate_batch,
    bootstrap_margin_batch,
    bootstrap_margin_pair_batch,
    design_scale,
)

if TYPE_CHECKING:
    from debate.panel._decision import ScoreBatch, Setting

FloatArray = NDArray[np.float64]


def margin_interval(
    scores: FloatArray, batch: ScoreBatch, weights: FloatArray, setting: Setting, **how: bool
) -> FloatArray:
    """Items x 2: the margin's bootstrap interval under the setting's aggregator."""
    level, seed, method = setting.thresholds.confidence, setting.seed, setting.thresholds.aggregate
    if method == "weighted_mean":  # the panel's rule from the start, on its fast path
        return bootstrap_margin_batch(scores, batch.is_pro, weights, ci=level, seed=seed, **how)
    return bootstrap_aggregate_batch(
        scores, batch.is_pro, weights, method, ci=level, seed=seed, **how
    )


def margin_intervals(
    arrays: tuple[FloatArray, ...],
    batch: ScoreBatch,
    weights: FloatArray,
    setting: Setting,
    *,
    held: bool = False,
) -> tuple[list[FloatArray], list[FloatArray] | None]:
    """:func:`margin_interval` of each array; when small, one bootstrap (one set of draws) for all.

    All draw the same replicates (one seed) and a small batch's exact path takes each item
    alone, so stacked arrays get, bit for bit, the intervals each gets alone. A batch whose
    items carry their own seeds (:attr:`ScoreBatch.seeds`) is taken a run of one seed at a
    time. ``held``: each array's interval with the judges held fixed too (None without),
    which on that path reuses the same draws and gathered units.
    """
    runs = seed_runs(batch, setting)
    if len(runs) == 1:
        return _one_seed(arrays, batch, weights, runs[0][1], held=held)
    parts = [
        _one_seed(
            tuple(a[run] for a in arrays),
            batch.sliced(run),
            weights[run] if weights.ndim == 2 else weights,
            own,
            held=held,
        )
        for run, own in runs
    ]
    found = _joined([p[0] for p in parts])
    if not held:
        return found, None
    return found, _joined([p[1] for p in parts if p[1] is not None])


def _joined(runs: list[list[FloatArray]]) -> list[FloatArray]:
    """Each array's intervals, its runs' rows joined back in the batch's order."""
    return [np.concatenate(rows) for rows in zip(*runs, strict=True)]


def seed_runs(batch: ScoreBatch, setting: Setting) -> list[tuple[slice, Setting]]:
    """The batch's runs of items that share a seed, each with the setting of that seed.

    One run, with ``setting`` itself, unless the batch carries per-item seeds
    (:attr:`ScoreBatch.seeds`): then each run of equal seeds draws as it would alone.
    """
    seeds = batch.seeds
    if not seeds:
        return [(slice(0, batch.size), setting)]
    runs, start = [], 0
    for at in range(1, len(seeds) + 1):
        if at == len(seeds) or seeds[at] != seeds[start]:
            runs.append((slice(start, at), replace(setting, seed=seeds[start])))
            start = at
    return runs


def _one_seed(
    arrays: tuple[FloatArray, ...],
    batch: ScoreBatch,
    weights: FloatArray,
    setting: Setting,
    *,
    held: bool,
) -> tuple[list[FloatArray], list[FloatArray] | None]:
    """:func:`margin_intervals` of items that share ``setting``'s seed."""
    items, judges = batch.raw.shape[:2]
    if setting.thresholds.aggregate != "weighted_mean" or items * len(arrays) > EXACT_ITEMS:
        found = [margin_interval(x, batch, weights, setting) for x in arrays]
        if not held:
            return found, None
        return found, [
            margin_interval(x, batch, weights, setting, resample_judges=False) for x in arrays
        ]
    stacked_weights = np.tile(np.broadcast_to(weights, (items, judges)), (len(arrays), 1))
    level, seed = setting.thresholds.confidence, setting.seed
    scores = np.concatenate(arrays)
    if held:
        both = bootstrap_margin_pair_batch(
            scores, batch.is_pro, stacked_weights, ci=level, seed=seed
        )
        return _parts(both[0], items), _parts(both[1], items)
    stacked = bootstrap_margin_batch(scores, batch.is_pro, stacked_weights, ci=level, seed=seed)
    return _parts(stacked, items), None


def _parts(stacked: FloatArray, items: int) -> list[FloatArray]:
    """The stacked arrays' rows back as one array each, ``items`` rows apiece (views)."""
    return [stacked[at : at + items] for at in range(0, stacked.shape[0], items)]


def widened(
    interval: FloatArray, margin: FloatArray, units: FloatArray, scale_of: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The interval's ends moved away from the margin by the design scale, and the scale."""
    scale = design_scale(interval[:, 1] - interval[:, 0], units[:, 1] - units[:, 0], scale_of)
    centre = margin[:, None]
    return centre + (interval - centre) * scale[:, None], scale
