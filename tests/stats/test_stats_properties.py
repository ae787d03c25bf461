"""Property tests against krippendorff and statsmodels, and invariants of alpha."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from debate.stats import fleiss_kappa_from_labels, krippendorff_alpha

LEVELS = ["nominal", "ordinal", "interval", "ratio"]


@st.composite
def ratings(draw: st.DrawFn) -> np.ndarray:
    raters = draw(st.integers(2, 6))
    units = draw(st.integers(1, 30))
    values = draw(st.lists(st.integers(1, 7), min_size=raters * units, max_size=raters * units))
    matrix = np.array(values, dtype=float).reshape(raters, units)
    mask = draw(st.lists(st.booleans(), min_size=raters * units, max_size=raters * units))
    missing = np.array(mask).reshape(raters, units) & (np.arange(units) % 3 == 0)
    matrix[missing] = np.nan
    return matrix


def reference(matrix: np.ndarray, level: str) -> float | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))
        except (ValueError, ZeroDivisionError):
            return None


@settings(max_examples=60, deadline=None)
@given(ratings(), st.sampled_from(LEVELS))
def test_alpha_matches_the_krippendorff_package(matrix: np.ndarray, level: str) -> None:
    theirs = reference(matrix, level)
    ours = krippendorff_alpha(matrix, level)
    if theirs is None or not math.isfinite(theirs):
        assume(False)
    assert ours == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(ratings())
def test_string_labels_nominal_and_ordinal_with_domain(matrix: np.ndarray) -> None:
    names = {float(i): f"v{i}" for i in range(1, 8)}
    labels = [[None if np.isnan(v) else names[v] for v in row] for row in matrix]
    domain = [names[float(i)] for i in range(1, 8)]
    for level in ("nominal", "ordinal"):
        ours = krippendorff_alpha(labels, level, value_domain=domain)
        numeric = krippendorff_alpha(matrix, level)
        assert (math.isnan(ours) and math.isnan(numeric)) or ours == pytest.approx(numeric)


@settings(max_examples=40, deadline=None)
@given(ratings(), st.sampled_from(LEVELS), st.randoms(use_true_random=False))
def test_alpha_is_unchanged_by_permuting_raters_and_units(matrix, level, rnd) -> None:  # type: ignore[no-untyped-def]
    base = krippendorff_alpha(matrix, level)
    rows = list(range(matrix.shape[0]))
    cols = list(range(matrix.shape[1]))
    rnd.shuffle(rows)
    rnd.shuffle(cols)
    permuted = krippendorff_alpha(matrix[rows][:, cols], level)
    assert (math.isnan(base) and math.isnan(permuted)) or permuted == pytest.approx(base)


@settings(max_examples=40, deadline=None)
@given(ratings(), st.floats(-50, 50), st.floats(0.1, 20))
def test_interval_alpha_is_unchanged_by_shift_and_scale(matrix, shift, scale) -> None:  # type: ignore[no-untyped-def]
    base = krippendorff_alpha(matrix, "interval")
    moved = krippendorff_alpha(matrix * scale + shift, "interval")
    assert (math.isnan(base) and math.isnan(moved)) or moved == pytest.approx(base, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.lists(st.integers(1, 9), min_size=2, max_size=20))
def test_perfect_agreement_gives_one(raters: int, row: list[int]) -> None:
    assume(len(set(row)) > 1)
    matrix = np.array([row] * raters, dtype=float)
    for level in LEVELS:
        assert krippendorff_alpha(matrix, level) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7), st.integers(2, 25), st.integers(2, 5), st.randoms(use_true_random=False))
def test_fleiss_matches_statsmodels(raters: int, items: int, cats: int, rnd) -> None:  # type: ignore[no-untyped-def]
    labels = np.array([[rnd.randrange(cats) for _ in range(raters)] for _ in range(items)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, _ = aggregate_raters(labels)
        theirs = float(sm_fleiss(table))
    ours = fleiss_kappa_from_labels(labels)
    if math.isnan(theirs):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-9)
    strings = [[f"c{v}" for v in row] for row in labels]
    assert (math.isnan(ours) and math.isnan(fleiss_kappa_from_labels(strings))) or (
        fleiss_kappa_from_labels(strings) == pytest.approx(ours)
    )


@pytest.mark.parametrize("level", LEVELS)
def test_block_processing_matches_the_package_on_many_units(level: str) -> None:
    """More units than one processing block (65,536), with missing values."""
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 8, size=70_000)
    data = np.clip(truth + rng.integers(-1, 2, size=(3, 70_000)), 1, 7).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    theirs = reference(data, level)
    assert theirs is not None
    assert krippendorff_alpha(data, level) == pytest.approx(theirs, abs=1e-9)
