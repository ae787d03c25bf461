"""Judge reliability from agreement alone: the models recover what a planted panel planted."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.stats import spearmanr

from debate.judgments import planted_scores, planted_verdicts
from debate.records import NO_CALL, ScoreTable, VerdictTable
from debate.stats import dawid_skene, one_factor, reliability_weights

ACCURACIES = {"j90": 0.9, "j80": 0.8, "j70": 0.7, "j60": 0.6, "adversary": 0.2}
NOISE = {"n03": 0.3, "n06": 0.6, "n10": 1.0, "n15": 1.5, "n25": 2.5}


def _labels(table: VerdictTable) -> NDArray[np.int64]:
    labels = np.full((len(table.items), len(table.judges)), NO_CALL, dtype=np.int64)
    labels[table.item, table.judge] = table.verdict
    return labels


def _scores(table: ScoreTable) -> NDArray[np.float64]:
    """Rows are (item, option), columns judges."""
    rows = table.item.astype(np.int64) * len(table.options) + table.option
    scores = np.full((len(table.items) * len(table.options), len(table.judges)), np.nan)
    scores[rows, table.judge] = table.score
    return scores


@pytest.fixture(scope="module")
def verdict_labels() -> NDArray[np.int64]:
    judges, _ = planted_verdicts(2000, ACCURACIES, seed=3)
    return _labels(judges)


def test_dawid_skene_recovers_planted_accuracies(verdict_labels: NDArray[np.int64]) -> None:
    fit = dawid_skene(verdict_labels)
    truth = np.array(list(ACCURACIES.values()))
    assert fit.converged
    assert spearmanr(fit.accuracy, truth).statistic == pytest.approx(1.0)
    assert np.abs(fit.accuracy - truth).max() < 0.05
    # Chance-corrected: the adversary prefers wrong answers, so it earns no weight.
    assert fit.reliability[-1] < 0
    weights = reliability_weights(fit.reliability)
    assert weights is not None
    assert weights[-1] == 0.0 and (weights[:-1] > 0).all()
    assert spearmanr(fit.reliability[:-1], truth[:-1]).statistic == pytest.approx(1.0)


def test_dawid_skene_posterior_beats_the_majority() -> None:
    # One person who is always right carries the planted truth.
    judges, person = planted_verdicts(2000, ACCURACIES, people=1, people_accuracy=1.0, seed=3)
    labels, truth = _labels(judges), _labels(person)[:, 0]
    fit = dawid_skene(labels)
    counts = np.stack([(labels == k).sum(axis=1) for k in range(3)], axis=1)
    majority = (counts.argmax(axis=1) == truth).mean()
    latent = (fit.posterior.argmax(axis=1) == truth).mean()
    assert latent > majority + 0.02


def test_dawid_skene_with_missing_labels(verdict_labels: NDArray[np.int64]) -> None:
    rng = np.random.default_rng(7)
    labels = verdict_labels.copy()
    labels[rng.random(labels.shape) < 0.3] = NO_CALL
    fit = dawid_skene(labels)
    truth = np.array(list(ACCURACIES.values()))
    assert spearmanr(fit.accuracy, truth).statistic == pytest.approx(1.0)
    assert np.abs(fit.accuracy - truth).max() < 0.07


def test_dawid_skene_unlabelled_items_and_judges(verdict_labels: NDArray[np.int64]) -> None:
    labels = np.concatenate(
        [verdict_labels, np.full((verdict_labels.shape[0], 1), NO_CALL)], axis=1
    )
    labels[:10] = NO_CALL
    fit = dawid_skene(labels)
    assert np.isnan(fit.reliability[-1]) and np.isnan(fit.accuracy[-1])
    assert fit.notes == (
        "judge column 5 gave no label: its reliability is undefined (NaN, weight 0)",
    )
    weights = reliability_weights(fit.reliability)
    assert weights is not None and weights[-1] == 0.0
    # An item nobody labelled gets the class priors, not a guess.
    np.testing.assert_allclose(fit.posterior[0], fit.priors)


def test_dawid_skene_constant_judge_has_no_reliability(verdict_labels: NDArray[np.int64]) -> None:
    labels = verdict_labels.copy()
    labels[:, 0] = 0  # always says A
    fit = dawid_skene(labels)
    assert abs(fit.reliability[0]) < 0.05
    assert fit.reliability[1] > 0.5


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (np.zeros((5, 1), dtype=int), "at least two judges"),
        (np.full((5, 3), -1), "no label at all"),
        (np.array([[0, 3], [1, 1]]), r"labels\[0, 1\] is 3"),
        (np.zeros(4, dtype=int), "2-D"),
        (np.zeros((3, 3)), "integer class codes"),
    ],
)
def test_dawid_skene_refuses_degenerate_input(labels: NDArray[np.int64], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dawid_skene(labels)


@pytest.fixture(scope="module")
def planted_score_matrix() -> NDArray[np.float64]:
    judges, _ = planted_scores(1000, ["a", "b", "c"], NOISE, seed=5)
    return _scores(judges)


def test_one_factor_recovers_the_reliability_ranking(
    planted_score_matrix: NDArray[np.float64],
) -> None:
    fit = one_factor(planted_score_matrix)
    assert fit.converged
    # Lower noise is higher reliability: the ranking is the reverse of the noise SDs.
    noise = np.array(list(NOISE.values()))
    assert spearmanr(fit.reliability, -noise).statistic == pytest.approx(1.0)
    assert (fit.reliability > 0).all() and (fit.loadings > 0).all()
    assert fit.factor_scores.shape == (planted_score_matrix.shape[0],)


def test_one_factor_with_missing_scores_and_an_adversary() -> None:
    judges, _ = planted_scores(1000, ["a", "b"], {**NOISE, "rev": 0.5}, seed=6, adversarial={"rev"})
    scores = _scores(judges)
    scores[np.random.default_rng(1).random(scores.shape) < 0.3] = np.nan
    fit = one_factor(scores)
    assert fit.reliability[-1] < -0.5
    assert spearmanr(fit.reliability[:-1], -np.array(list(NOISE.values()))).statistic == (
        pytest.approx(1.0)
    )
    weights = reliability_weights(fit.reliability)
    assert weights is not None and weights[-1] == 0.0


def test_one_factor_perfect_judge_stays_finite(planted_score_matrix: NDArray[np.float64]) -> None:
    rng = np.random.default_rng(2)
    quality = rng.normal(size=500)
    scores = np.stack([quality, quality + rng.normal(size=500), quality + rng.normal(size=500)], 1)
    fit = one_factor(scores)
    assert np.isfinite(fit.reliability).all()
    assert 0.99 < fit.reliability[0] <= 1.0
    assert fit.noise[0] > 0


def test_one_factor_leaves_out_constant_and_empty_judges(
    planted_score_matrix: NDArray[np.float64],
) -> None:
    rows = planted_score_matrix.shape[0]
    scores = np.concatenate(
        [planted_score_matrix, np.full((rows, 1), 3.0), np.full((rows, 1), np.nan)], axis=1
    )
    fit = one_factor(scores)
    assert np.isnan(fit.reliability[-2:]).all()
    assert np.isfinite(fit.reliability[:-2]).all()
    assert any("column 5 gave the same score" in n for n in fit.notes)
    assert any("column 6 gave 0 score(s)" in n for n in fit.notes)


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (np.arange(10.0).reshape(10, 1), "needs at least three"),
        (np.full((5, 4), np.nan), "needs at least three"),
        (np.array([[1.0, np.inf, 2.0]]), r"scores\[0, 1\] is infinite"),
        (np.arange(3.0), "2-D"),
    ],
)
def test_one_factor_refuses_degenerate_input(scores: NDArray[np.float64], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        one_factor(scores)


def test_reliability_weights() -> None:
    weights = reliability_weights(np.array([0.5, -0.2, np.nan, 0.0]))
    assert weights is not None
    np.testing.assert_array_equal(weights, [0.5, 0.0, 0.0, 0.0])
    assert reliability_weights(np.array([-0.1, np.nan])) is None
    assert reliability_weights(np.array([])) is None


def test_planted_verdicts_plant_what_they_say() -> None:
    judges, person = planted_verdicts(
        20_000, {"good": 0.8, "adversary": 0.2}, people=1, people_accuracy=1.0, seed=9
    )
    labels, truth = _labels(judges), _labels(person)[:, 0]
    assert (labels >= 0).all() and judges.rows == 40_000
    right = (labels == truth[:, None]).mean(axis=0)
    np.testing.assert_allclose(right, [0.8, 0.2], atol=0.015)
    # The adversary's errors reverse the verdict: A for B, B for A, never tie for a side.
    sides = truth < 2
    wrong = sides & (labels[:, 1] != truth)
    assert (labels[wrong, 1] == 1 - truth[wrong]).all()
    assert (truth == 2).mean() == pytest.approx(0.1, abs=0.01)


def test_planted_scores_stay_on_the_scale_and_track_quality() -> None:
    judges, people = planted_scores(
        2000, ["x", "y"], {"sharp": 0.2, "rev": 0.2}, people=2, seed=4, adversarial={"rev"}
    )
    assert judges.rows == 2000 * 2 * 2 and people.judges == ("person1", "person2")
    assert set(np.unique(judges.score)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    sharp, rev = _scores(judges).T
    crowd = np.nanmean(_scores(people), axis=1)
    assert np.corrcoef(sharp, crowd)[0, 1] > 0.7
    assert np.corrcoef(rev, crowd)[0, 1] < -0.7
    with pytest.raises(ValueError, match="adversarial names"):
        planted_scores(10, ["x", "y"], {"a": 1.0}, adversarial={"b"})
