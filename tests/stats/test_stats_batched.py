"""The batched statistics equal their scalar counterparts item by item."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from debate.stats import (
    argument_variance,
    bootstrap_margin,
    calibrate,
    fleiss_kappa_from_labels,
    krippendorff_alpha,
    side_vote,
)
from debate.stats._batched import (
    EXACT_ITEMS,
    argument_variance_batch,
    bootstrap_margin_batch,
    calibrate_batch,
    fleiss_kappa_batch,
    interval_alpha_batch,
    leave_one_out_alpha_batch,
    offset_corrected_batch,
    side_vote_batch,
)

SHAPES = [(7, 2, 2), (5, 3, 4), (6, 4, 6), (4, 8, 2), (3, 5, 9)]


def scores(shape: tuple[int, int, int], seed: int) -> NDArray[np.float64]:
    """Rubric-like integer scores with ties, plus constant rows and a constant item."""
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 11, size=shape).astype(np.float64)
    x[0, 0, :] = 6.0  # a judge who tells nothing apart
    x[-1] = 5.0  # an item where nobody does
    if shape[0] > 2:
        x[1] = np.round(rng.normal(5, 2, size=shape[1:]), 3)  # non-integer values
    return x


def sides(units: int) -> NDArray[np.bool_]:
    return np.arange(units) % 2 == 0  # interleaved, as a transcript's argument ids are


def same(a: float, b: float, tol: float = 1e-9) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= tol


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("method", ["minmax", "zscore"])
@pytest.mark.parametrize("floor", [None, 0.0, 3.0])
def test_calibration_is_the_scalar_one_row_by_row(
    shape: tuple[int, int, int], method: str, floor: float | None
) -> None:
    x = scores(shape, 1)
    got = calibrate_batch(x, method, floor)  # type: ignore[arg-type]
    for b in range(shape[0]):
        assert np.array_equal(got[b], calibrate(x[b], method, floor))  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", SHAPES)
def test_interval_alpha_is_krippendorff_per_item_nan_where_undefined(
    shape: tuple[int, int, int],
) -> None:
    x = scores(shape, 2)
    got = interval_alpha_batch(x)
    expected = [krippendorff_alpha(x[b], "interval") for b in range(shape[0])]
    assert np.isnan(got[-1]) and np.isnan(expected[-1])  # the constant item
    assert all(same(g, e) for g, e in zip(got, expected, strict=True))


def test_alpha_of_one_judge_is_undefined() -> None:
    assert np.isnan(interval_alpha_batch(np.ones((3, 1, 4)))).all()


@pytest.mark.parametrize("shape", SHAPES)
def test_leave_one_out_alpha_drops_each_judge(shape: tuple[int, int, int]) -> None:
    x = scores(shape, 3)
    got = leave_one_out_alpha_batch(x)
    assert got.shape == shape[:2]
    for b in range(shape[0]):
        for j in range(shape[1]):
            rest = np.delete(x[b], j, axis=0)
            expected = krippendorff_alpha(rest, "interval") if rest.shape[0] >= 2 else np.nan
            assert same(got[b, j], expected)


@pytest.mark.parametrize(("items", "units", "raters"), [(6, 4, 2), (5, 6, 4), (4, 2, 8)])
def test_kappa_is_fleiss_from_labels_per_item(items: int, units: int, raters: int) -> None:
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 4, size=(items, units, raters))
    codes[0] = 2  # every rating the same: undefined
    codes[1, :, :] = np.arange(units)[:, None] % 2  # perfect agreement on two labels
    got = fleiss_kappa_batch(codes)
    names = np.array(["UPHELD", "PARTIALLY_UPHELD", "REFUTED", "UNCERTAIN"])
    expected = [fleiss_kappa_from_labels(names[codes[b]]) for b in range(items)]
    assert np.isnan(got[0]) and np.isnan(expected[0])
    assert got[1] == pytest.approx(1.0)
    assert all(same(g, e) for g, e in zip(got, expected, strict=True))


@pytest.mark.parametrize("shape", SHAPES)
def test_argument_variance_of_offset_corrected_scores(shape: tuple[int, int, int]) -> None:
    x = scores(shape, 5)
    got = argument_variance_batch(offset_corrected_batch(x))
    for b in range(shape[0]):
        raw = x[b]
        corrected = raw - raw.mean(axis=1, keepdims=True) + raw.mean()
        np.testing.assert_allclose(got[b], argument_variance(corrected), rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_side_vote_is_the_scalar_weighted_vote(shape: tuple[int, int, int]) -> None:
    x = scores(shape, 6)
    is_pro = sides(shape[2])
    w = np.random.default_rng(6).uniform(0.1, 2, size=shape[:2])
    w[0, 0] = 0.0  # a judge with no weight still counts nothing
    got = side_vote_batch(x, is_pro, w)
    for b in range(shape[0]):
        expected = side_vote(x[b], is_pro, w[b])
        assert (got.pro[b], got.con[b], got.margin[b]) == tuple(expected)


def test_side_vote_without_any_weight_is_undefined() -> None:
    got = side_vote_batch(np.ones((2, 3, 2)), sides(2), np.zeros(3))
    assert np.isnan(got.margin).all()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 7])
def test_bootstrap_of_one_item_is_bit_identical_to_the_scalar(
    shape: tuple[int, int, int], seed: int
) -> None:
    x = scores(shape, 7)
    is_pro = sides(shape[2])
    w = np.random.default_rng(8).uniform(0.5, 2, size=shape[1])
    for b in range(shape[0]):
        got = bootstrap_margin_batch(x[b : b + 1], is_pro, w, seed=seed, ci=0.9)
        assert tuple(got[0]) == bootstrap_margin(x[b], is_pro, w, seed=seed, ci=0.9)


@pytest.mark.parametrize("units", [2, 5])
@pytest.mark.parametrize("equal", [False, True])
def test_bootstrap_of_a_large_batch_agrees_with_the_scalar(units: int, equal: bool) -> None:
    """Past EXACT_ITEMS the draws are counted, not gathered: the same draws, summed in
    another order."""
    items = EXACT_ITEMS * 3 + 1
    x = scores((items, 4, units), 9)
    is_pro = sides(units)
    w = np.random.default_rng(10).uniform(0, 2, size=(items, 4))
    w[2] = [0.0, 0.0, 0.0, 1.0]  # replicates that draw only weightless judges drop out
    if equal:  # the same weight for every judge of an item: divided once per item
        w = np.repeat(w[:, :1] + 0.5, 4, axis=1)
    got = bootstrap_margin_batch(x, is_pro, w, seed=3)
    for b in range(items):
        expected = bootstrap_margin(x[b], is_pro, w[b], seed=3)
        np.testing.assert_allclose(got[b], expected, rtol=0, atol=1e-12)


def test_bootstrap_chunks_keep_the_same_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    x = scores((60, 3, 2), 11)
    whole = bootstrap_margin_batch(x, sides(2), np.ones(3), seed=5)
    monkeypatch.setattr("debate.stats._batched.CHUNK_BYTES", 1)  # one item per chunk
    assert np.array_equal(bootstrap_margin_batch(x, sides(2), np.ones(3), seed=5), whole)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: interval_alpha_batch(np.ones((2, 3))), "3-D"),
        (lambda: interval_alpha_batch(np.full((1, 2, 2), np.nan)), "complete"),
        (lambda: side_vote_batch(np.ones((1, 2, 2)), np.array([True, True]), np.ones(2)), "CON"),
        (lambda: bootstrap_margin_batch(np.ones((1, 2, 2)), sides(2), -np.ones(2)), ">= 0"),
        (lambda: fleiss_kappa_batch(np.zeros((1, 2, 1), dtype=int)), "two raters"),
    ],
)
def test_bad_input_is_refused_in_one_line(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()
