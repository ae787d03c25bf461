"""Latent weights on verdicts: the one-coin model over A/B calls, and its guards.

Planted panels read every item in both orders, so that ties and order-inconsistent pairs
(both missing for the model) are part of what is planted.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.stats import spearmanr

from debate.judgments import decide_judgments, validate_judgments
from debate.judgments._earned import (
    agreement_pattern_note,
    agreement_rates,
    describe,
    from_one_coin,
    latent_weights,
    observed,
    orient,
)
from debate.judgments._verdicts import verdict_matrix
from debate.records import NO_CALL, VerdictTable
from debate.stats import dawid_skene, one_coin, reliability_weights
from tests.support.verdict_tables import mirror_verdicts, planted_orders

PLANTED = {
    "j90": (0.90, 0.10),
    "j80": (0.80, 0.10),
    "j75": (0.75, 0.15),
    "j60": (0.60, 0.10),
    "j50": (0.50, 0.10),
}
"""Accuracy on A/B and the share of items on which the judge's two readings disagree."""
Planted = tuple[VerdictTable, NDArray[np.int64]]
TOLERANCE = 0.08
"""Largest error allowed on any judge's fitted accuracy, 500 items. Over 30 seeds of this
design the largest error per fit had median 0.044 and 90th percentile 0.057 (max 0.094):
the one at chance (0.5) carries no information, so the others' accuracies rest on four
judges' agreements. With four judges of which one is at chance the model is barely
identified (the 0.9 judge's accuracy rests on the 0.75 and 0.6 judges' weak agreement;
errors reached 0.2 at 500 items), which is why a fifth judge is planted."""


@pytest.fixture(scope="module")
def planted() -> Planted:
    return planted_orders(500, PLANTED, ties=0.05, seed=3)


def test_one_coin_recovers_planted_accuracies(planted: Planted) -> None:
    table, _ = planted
    earned = latent_weights(table)
    assert earned.model == "one-coin" and earned.converged
    assert earned.change is not None and earned.tolerance is not None
    assert earned.change <= earned.tolerance
    fitted = np.array([earned.accuracy[j] for j in PLANTED])
    truth = np.array([a for a, _ in PLANTED.values()])
    assert np.abs(fitted - truth).max() < TOLERANCE, fitted
    assert np.abs(fitted - truth).mean() < 0.05, fitted
    assert fitted.argmax() == 0 and fitted.argmin() == len(PLANTED) - 1
    # The weight is the log-odds of the fitted accuracy, floored at 0 (the evidence model's
    # weight of a judge): the judge at chance earns little.
    assert earned.weights == pytest.approx(
        {j: max(0.0, float(np.log(a / (1 - a)))) for j, a in zip(PLANTED, fitted, strict=True)}
    )
    assert earned.weights["j50"] < 0.2 * earned.weights["j90"]
    assert earned.notes == []


def test_ties_and_inconsistent_pairs_are_missing_not_a_class(
    planted: Planted,
) -> None:
    table, _ = planted
    calls = verdict_matrix(table).calls
    seen = observed(table)
    assert (calls == 2).any()
    np.testing.assert_array_equal(seen.rows == NO_CALL, (calls == 2) | (calls == NO_CALL))
    assert set(np.unique(seen.rows).tolist()) == {NO_CALL, 0, 1}


def test_ties_do_not_reward_the_weak_judge() -> None:
    # Hard items: the weak judge's two readings disagree on nearly all of them (a tie), the
    # strong judge's on a fifth. Counting tie as a class makes "tie" the hard items' truth
    # and credits the weak judge for saying it; over A/B only, its errors count.
    judges = {"strong": (0.92, 0.2), "weak": (0.7, 0.95), "m1": (0.8, 0.5), "m2": (0.75, 0.5)}
    table, truth = planted_orders(400, judges, hard=0.3, seed=0)
    earned = latent_weights(table)
    assert earned.weights is not None
    assert max(earned.weights, key=lambda j: earned.weights[j]) == "strong"
    assert earned.weights["weak"] < 0.6 * earned.weights["strong"]
    # What the three-class fit did on the same table (the finding): weak first.
    three_class = reliability_weights(dawid_skene(verdict_matrix(table).calls).reliability)
    assert three_class is not None and three_class[1] > three_class[0]
    # The fitted accuracies follow the realised accuracies on A/B calls (within 0.05).
    calls = observed(table).rows
    realised = [(calls[:, j] == truth)[calls[:, j] >= 0].mean() for j in range(len(judges))]
    assert [earned.accuracy[j] for j in judges] == pytest.approx(realised, abs=0.05)


def test_the_fit_is_exactly_mirrored(planted: Planted) -> None:
    table, _ = planted
    mirrored = mirror_verdicts(table)
    calls, flipped = observed(table).rows, observed(mirrored).rows
    fit, mirror = one_coin(calls), one_coin(flipped)
    np.testing.assert_array_equal(fit.accuracy, mirror.accuracy)
    np.testing.assert_array_equal(fit.log_odds, -mirror.log_odds)
    assert fit.iterations == mirror.iterations
    assert latent_weights(table) == latent_weights(mirrored)


def test_a_fit_that_did_not_converge_says_so(
    planted: Planted, caplog: pytest.LogCaptureFixture
) -> None:
    table, _ = planted
    with caplog.at_level(logging.WARNING):
        earned = latent_weights(table, max_iter=2)
    assert not earned.converged and earned.iterations == 2
    assert earned.change is not None and earned.tolerance is not None
    assert earned.change > earned.tolerance
    (note,) = earned.notes
    assert note.startswith("the one-coin fit did NOT converge in 2 iterations (last change")
    assert note in caplog.text
    lines = describe(earned)
    assert lines[0] == "latent weights: one-coin model over A/B calls, 2 iterations, not converged"
    assert note in lines


def test_the_mirror_of_the_consensus_is_read_flipped_and_said(
    planted: Planted,
) -> None:
    table, _ = planted
    calls = observed(table).rows
    right = one_coin(calls)
    lead = (calls == 0).sum(axis=1) - (calls == 1).sum(axis=1)
    # Started against the majority, EM climbs to the mirror: every judge below chance.
    switched = one_coin(calls, start=-np.log((lead.clip(0) + 0.5) / ((-lead).clip(0) + 0.5)))
    assert np.nanmean(switched.accuracy) < 0.5
    np.testing.assert_allclose(switched.accuracy, 1 - right.accuracy, atol=1e-6)
    earned = from_one_coin(table.judges, switched, calls)
    (note,) = earned.notes
    assert "found the mirror of the judges' consensus" in note and "read flipped" in note
    np.testing.assert_allclose([earned.accuracy[j] for j in PLANTED], right.accuracy, atol=1e-6)
    assert earned.weights is not None and earned.weights["j90"] > 0.6


def test_a_mirror_that_the_majority_does_not_support_is_refused(
    planted: Planted,
) -> None:
    table, _ = planted
    calls = observed(table).rows
    right = one_coin(calls)
    # Accuracies below chance while the posterior follows the majority: flipped, the
    # posterior would go against it, so neither reading is consistent.
    odd = replace(right, accuracy=1 - right.accuracy, reliability=1 - 2 * right.accuracy)
    used, notes = orient(odd, calls)
    assert used is None
    (note,) = notes
    assert note.endswith("latent weights refused, equal weights instead")
    earned = from_one_coin(table.judges, odd, calls)
    assert earned.weights is None and earned.notes == notes
    summary = describe(earned)
    assert note in summary and not any("more reliable than chance" in s for s in summary)


def test_fitted_accuracies_against_the_agreement_pattern_warn(
    planted: Planted,
) -> None:
    table, _ = planted
    calls = observed(table).rows
    fitted = one_coin(calls).accuracy
    rates = agreement_rates(calls)
    assert spearmanr(rates, fitted).statistic > 0.8
    assert agreement_pattern_note(fitted, calls, table.judges) == []
    # The judge that agrees most with the others fitted below the median: warned.
    backwards = fitted[::-1].copy()
    (note,) = agreement_pattern_note(backwards, calls, table.judges)
    assert note.startswith("the latent fit is at odds with the judges' agreement: j90 agrees")
    # Its top judge above the median, but the ranks against the agreement rates: warned.
    crossed = np.array([0.7, 0.5, 0.6, 0.8, 0.9])
    (note,) = agreement_pattern_note(crossed, calls, table.judges)
    assert "Spearman -" in note


def test_two_judges_cannot_be_told_apart_and_fall_back_to_equal_weights() -> None:
    table, _ = planted_orders(200, {"a": (0.9, 0.1), "b": (0.7, 0.1)}, seed=1)
    earned = latent_weights(table)
    assert earned.weights is None and earned.note is not None
    assert "needs at least 3" in earned.note
    assert describe(earned) == [earned.note + ": equal weights instead"]


def test_decide_with_latent_weights_states_the_fit(planted: Planted) -> None:
    table, _ = planted
    decided = decide_judgments(table, weights="latent")
    notes = decided.summary.notes
    assert notes[0].startswith("latent weights: one-coin model over A/B calls, ")
    assert "converged (log-likelihood change" in notes[0]
    assert notes[1].startswith("fitted accuracy on A/B calls: j90 0.")
    assert decided.summary.weights["j90"] > decided.summary.weights["j50"]


def test_each_folds_latent_fit_is_reported_in_the_validity_notes() -> None:
    table, truth = planted_orders(90, {"a": (0.9, 0.1), "b": (0.7, 0.1)}, seed=1)
    people = VerdictTable(
        source="people",
        items=table.items,
        judges=("p1",),
        item=np.arange(len(truth), dtype=np.int32),
        judge=np.zeros(len(truth), dtype=np.int32),
        verdict=truth.astype(np.int8),
        order=np.zeros(len(truth), dtype=np.int8),
    )
    notes = validate_judgments(table, people, folds=3, n_boot=20).report.notes
    assert (
        "latent weights, folds 1, 2, 3: one-coin cannot be fitted: 2 judge(s) gave an A or B "
        "call: the one-coin model needs at least 3 to tell their accuracies apart: equal "
        "weights instead"
    ) in notes
