"""The exact bootstrap of a small batch keeps the bits of the gather it replaced.

The reference below is the exact path as it stood before the chains and tables of
``debate.stats._exact``: every drawn cell gathered, summed by numpy, ``np.quantile`` per
row. Its numbers are the ones recorded results carry, so the faster path must give them
bit for bit, in every regime (a table of draws, chains, numpy's pairwise sums from eight
judges or units a side on) and for both intervals of ``bootstrap_margin_pair_batch``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from debate.stats import bootstrap_margin_batch, bootstrap_margin_pair_batch
from debate.stats._batched import Draws, margin_draws

FloatArray = NDArray[np.float64]


def _side_means(x: FloatArray, judges: NDArray[np.intp], units: NDArray[np.intp]) -> FloatArray:
    k = units.shape[1]
    if k >= 8:
        means: FloatArray = x[:, judges[:, :, None], units[:, None, :]].mean(axis=-1)
        return means
    cells = x.reshape(x.shape[0], -1).take(judges[:, :, None] * x.shape[2] + units[:, None, :], 1)
    total: FloatArray = cells[..., 0]
    for i in range(1, k):
        total = total + cells[..., i]
    return total / k


def _margins(x: FloatArray, w: FloatArray, d: Draws) -> tuple[FloatArray, FloatArray]:
    pro, con = _side_means(x, d.judges, d.pro), _side_means(x, d.judges, d.con)
    wj = w[:, d.judges]
    total = wj.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        margins: FloatArray = ((pro - con) * wj).sum(axis=-1) / total
    return margins, total


def reference(x: FloatArray, is_pro: NDArray[np.bool_], w: FloatArray, **how: object) -> FloatArray:
    """The gathered bootstrap, each item alone: the exact path before ``debate.stats._exact``.

    Alone, as the scalar ``bootstrap_margin`` takes an item: from eight units a side numpy
    sums a gathered batch's cells in an order that depends on how many items it holds.
    """
    w = np.broadcast_to(w, (x.shape[0], x.shape[1]))
    return np.concatenate(
        [_alone(x[i : i + 1], is_pro, w[i : i + 1], **how) for i in range(len(x))]
    )


def _alone(x: FloatArray, is_pro: NDArray[np.bool_], w: FloatArray, **how: object) -> FloatArray:
    x, w, orientations = margin_draws(x, is_pro, w, 2000, 0.9, 4, bool(how["resample_judges"]))
    found = [_margins(x, w, d) for d in orientations]
    margins = np.concatenate([s * m for s, (m, _) in zip((1.0, -1.0), found, strict=False)], 1)
    total = np.concatenate([t for _, t in found], 1)
    out = np.full((x.shape[0], 2), np.nan)
    tail = (1 - 0.9) / 2  # not 0.05: 0.04999999999999999, as the bootstrap computes it
    for b in range(x.shape[0]):
        kept = margins[b][total[b] > 0]
        if kept.size:
            out[b] = np.quantile(kept, tail), -np.quantile(-kept, tail)
    return out


@pytest.mark.parametrize(
    ("judges", "pro", "con"),
    [(4, 3, 3), (3, 1, 1), (5, 4, 2), (2, 5, 5), (9, 3, 3), (4, 9, 2), (1, 2, 3)],
)
@pytest.mark.parametrize("weights", ["equal", "uneven", "per item, some zero"])
def test_exact_bootstrap_keeps_the_gathered_bits(
    judges: int, pro: int, con: int, weights: str
) -> None:
    rng = np.random.default_rng(judges * 100 + pro * 10 + con)
    items = 3
    x = rng.integers(1, 11, size=(items, judges, pro + con)).astype(np.float64)
    x[0] = np.round(x[0] + rng.normal(size=x[0].shape), 3)
    x[1, :, :] = 5.0  # every margin 0: the interval rests on zeros of either sign
    is_pro = np.array([True] * pro + [False] * con)
    w = {
        "equal": np.ones(judges),
        "uneven": rng.uniform(0.2, 2.0, size=judges),
        "per item, some zero": rng.uniform(0, 2, size=(items, judges))
        * (rng.random((items, judges)) < 0.7),
    }[weights]
    both = bootstrap_margin_pair_batch(x, is_pro, w, ci=0.9, seed=4)
    for held, pair in zip((False, True), both, strict=True):
        expected = reference(x, is_pro, w, resample_judges=not held)
        alone = bootstrap_margin_batch(x, is_pro, w, ci=0.9, seed=4, resample_judges=not held)
        assert alone.tobytes() == expected.tobytes()
        assert pair.tobytes() == expected.tobytes()


def test_every_draw_table_is_kept_read_only() -> None:
    """The k**k ordered draws are made once per k and shared, so no caller may write them."""
    from debate.stats._exact import _every_draw

    table = _every_draw(3)
    assert _every_draw(3) is table and not table.flags.writeable
    assert table.shape == (27, 3) and table[5].tolist() == [0, 1, 2]  # base 3: 5 = 012
    with pytest.raises(ValueError):
        table[0, 0] = 1


@pytest.mark.parametrize(("judges", "pro", "con"), [(4, 3, 3), (9, 3, 3), (4, 9, 2), (2, 8, 8)])
def test_items_taken_together_get_the_interval_each_gets_alone(
    judges: int, pro: int, con: int
) -> None:
    """A live panel's concurrent debates are concluded together (``debate.panel._gather``).

    From eight judges or units a side on, numpy's sums of a gathered batch depend on its
    size, so those items are taken one by one: each keeps the bits it has alone.
    """
    rng = np.random.default_rng(judges * 100 + pro * 10 + con)
    x = np.round(rng.normal(5, 2, size=(5, judges, pro + con)), 3)
    is_pro = np.array([True] * pro + [False] * con)
    w = rng.uniform(0.2, 2.0, size=(5, judges))
    together = bootstrap_margin_pair_batch(x, is_pro, w, ci=0.9, seed=7)
    for i in range(5):
        alone = bootstrap_margin_pair_batch(x[i : i + 1], is_pro, w[i : i + 1], ci=0.9, seed=7)
        assert together[0][i].tobytes() == alone[0][0].tobytes(), i
        assert together[1][i].tobytes() == alone[1][0].tobytes(), i
