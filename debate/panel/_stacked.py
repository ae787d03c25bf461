"""A small batch's per-item statistics, each in one call over its score arrays stacked.

Interval alpha and the side votes are computed item by item (the same operations whatever
the items beside them), so stacking a batch's arrays along the items gives each array's
values bit for bit. A live panel decides a batch of one item, and paid numpy's per-call
overhead six times for the alphas (calibrated, raw, each dimension) and twice for the side
votes, far more than their arithmetic; a large batch (``decide``) keeps one call per array.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from debate.stats import aggregate_vote_batch, interval_alpha_batch, side_vote_batch

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from debate.panel._decision import ScoreBatch, Setting

    FloatArray = NDArray[np.float64]

SMALL_BATCH = 64
"""Up to this many items times arrays, the arrays are stacked into one call."""


def interval_alphas(arrays: list[FloatArray]) -> list[FloatArray]:
    """Each array's interval alpha per item (``arrays`` all items x judges x arguments)."""
    items = arrays[0].shape[0]
    if items * len(arrays) > SMALL_BATCH:
        return [interval_alpha_batch(a) for a in arrays]
    return list(interval_alpha_batch(np.concatenate(arrays)).reshape(len(arrays), items))


def side_votes(
    batch: ScoreBatch, calibrated: FloatArray, weights: FloatArray, setting: Setting
) -> tuple[Any, Any]:
    """Per item: pro, con and margin, calibrated and in points, under the aggregator.

    The weighted mean is stacked; the other aggregators take each array in its own call.
    """
    method, items = setting.thresholds.aggregate, batch.size
    if method != "weighted_mean":
        return (
            aggregate_vote_batch(calibrated, batch.is_pro, weights, method),
            aggregate_vote_batch(batch.raw, batch.is_pro, weights, method),
        )
    if 2 * items > SMALL_BATCH:
        return (
            side_vote_batch(calibrated, batch.is_pro, weights),
            side_vote_batch(batch.raw, batch.is_pro, weights),
        )
    both = side_vote_batch(
        np.concatenate((calibrated, batch.raw)), batch.is_pro, np.concatenate((weights, weights))
    )
    kind = type(both)
    return kind(*(v[:items] for v in both)), kind(*(v[items:] for v in both))
