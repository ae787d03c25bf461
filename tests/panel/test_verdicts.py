"""Verdicts that never claim more than the panel showed (issue 15, items 1-4).

Function-model judges with scores we chose: the effect in points, calibration that does not
amplify, a winner only when the margin's interval excludes 0, and no difference read as
no difference rather than as disagreement.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from debate import FunctionModel, MultiJudgePanel, RunConfig
from debate.panel import effect_word
from debate.records import PanelResult, default_judges
from debate.report._view import explanation, margin_words
from debate.stats import bootstrap_margin, calibrate, minmax, zscore
from tests.support.helpers import as_result, planted_judges, transcript

T = transcript()
ROLES = ("technical", "business", "risk", "general")
PRO_STRONG = {"PRO-1": 9, "PRO-2": 8, "PRO-3": 7, "CON-1": 4, "CON-2": 3, "CON-3": 2}


def judge(plan: Any, debate: Any = T, seed: int = 1, **config: Any) -> PanelResult:
    panel = MultiJudgePanel(
        models=FunctionModel(planted_judges(plan)), config=RunConfig(model="function", **config)
    )
    return panel.evaluate_sync(debate, seed=seed)


def uniform(pro: int, con: int) -> Any:
    return lambda role, a: pro if a.startswith("PRO") else con


# --- 1 and 2: the effect in points, and calibration that does not amplify ---------------


def test_a_one_point_gap_reads_smaller_than_a_five_point_gap() -> None:
    small, large = judge(uniform(6, 5)), judge(uniform(9, 4))
    assert (small.vote.pro_points, small.vote.con_points) == (6.0, 5.0)
    assert small.vote.margin_points == pytest.approx(1.0)
    assert large.vote.margin_points == pytest.approx(5.0)
    assert small.vote.margin_points_ci == pytest.approx((1.0, 1.0))
    assert small.vote.margin is not None and large.vote.margin is not None
    # before: both +1.000; now the one-point gap is a third of the five-point one's
    assert small.vote.margin == pytest.approx(1 / 3)
    assert large.vote.margin == pytest.approx(1.0)
    assert "moderately higher" in small.decision.reasons[0]
    assert "clearly higher" in large.decision.reasons[0]
    config = RunConfig(model="function")
    small_result, large_result = as_result(small, T, config), as_result(large, T, config)
    assert "moderately" in margin_words(small_result)
    assert "1.00 points ahead" in margin_words(small_result)
    assert "moderately higher" in explanation(small_result)
    assert "clearly higher" in explanation(large_result)


def test_the_floor_holds_under_zscore_too() -> None:
    long = transcript(pro=5, con=5)
    small = judge(uniform(6, 5), long)
    large = judge(uniform(9, 4), long)
    assert small.vote.calibration == large.vote.calibration == "zscore"
    assert small.vote.margin is not None and large.vote.margin is not None
    assert small.vote.margin < large.vote.margin / 2


@pytest.mark.parametrize("off", [None, 0.0])
def test_without_a_floor_calibration_is_the_reference_and_amplifies(off: float | None) -> None:
    result = judge(uniform(6, 5), thresholds={"min_spread": off})
    assert result.vote.margin == pytest.approx(1.0)  # the behaviour the floor exists to stop
    assert result.decision.thresholds.min_spread == off  # echoed in the result


def test_a_harsh_and_a_lenient_judge_who_rank_alike_count_alike() -> None:
    def plan(role: str, a: str) -> int:
        return PRO_STRONG[a] - 1 if role in ("technical", "business") else PRO_STRONG[a] + 1

    result = judge(plan)
    assert result.agreement.alpha == pytest.approx(1.0)  # identical after calibration
    assert result.agreement.alpha_raw is not None and result.agreement.alpha_raw < 0.9
    assert result.decision.outcome == "winner" and result.decision.winner == "PRO"


def test_floored_calibration_keeps_full_range_judges_and_centres_narrow_ones() -> None:
    np.testing.assert_allclose(minmax([2, 5, 8], min_range=3.0), [0, 0.5, 1])
    np.testing.assert_allclose(minmax([5, 6], min_range=4.0), [0.375, 0.625])
    np.testing.assert_allclose(minmax([7, 7], min_range=3.0), [0.5, 0.5])
    np.testing.assert_allclose(zscore([5, 5, 6, 6], min_sd=1.5), [-1 / 3, -1 / 3, 1 / 3, 1 / 3])
    wide = [1, 4, 7, 10]
    np.testing.assert_allclose(zscore(wide, min_sd=1.5), zscore(wide))
    np.testing.assert_allclose(calibrate([[5, 6]], "minmax", 2.0), [[0.25, 0.75]])
    with pytest.raises(ValueError, match="min_spread"):
        calibrate([[5, 6]], "minmax", -1.0)
    with pytest.raises(ValueError, match="ci must be a level"):
        bootstrap_margin([[1.0, 0.0]], [True, False], [1.0], ci=95)


# --- 3: a winner only when the interval excludes 0 ----------------------------------------


def test_the_reported_case_is_no_longer_a_winner() -> None:
    """alpha 1, kappa 1, margin 0.333, 95% interval [-0.111, 0.778]: was ``winner: PRO``."""
    scores = {"PRO-1": 1, "PRO-2": 4, "PRO-3": 10, "CON-1": 1, "CON-2": 1, "CON-3": 4}
    result = judge(lambda role, a: scores[a])
    assert result.agreement.alpha == pytest.approx(1.0)
    assert result.agreement.kappa == pytest.approx(1.0)
    assert result.vote.margin == pytest.approx(1 / 3)
    assert result.vote.margin_ci == pytest.approx((-1 / 9, 7 / 9))
    assert result.decision.outcome == "too_close" and result.decision.winner is None
    assert "95% interval of the margin [-0.111, +0.778]" in result.decision.reasons[0]
    assert "includes 0" in result.decision.reasons[0]
    assert result.decision.thresholds.confidence == result.vote.confidence == 0.95


def test_the_confidence_level_is_configurable_and_echoed() -> None:
    scores = {"PRO-1": 1, "PRO-2": 4, "PRO-3": 10, "CON-1": 1, "CON-2": 1, "CON-3": 4}
    wide = judge(lambda role, a: scores[a], thresholds={"confidence": 0.99})
    narrow = judge(lambda role, a: scores[a], thresholds={"confidence": 0.6})
    assert wide.vote.confidence == 0.99 and narrow.vote.confidence == 0.6
    assert wide.vote.margin_ci is not None and narrow.vote.margin_ci is not None
    assert wide.vote.margin_ci[0] < narrow.vote.margin_ci[0]
    assert narrow.vote.margin_ci[0] > 0 and narrow.decision.outcome == "winner"


@st.composite
def panels(draw: st.DrawFn) -> list[list[int]]:
    """Four judges x six arguments: half the time unrelated scores, half the time one shared
    view with a point of noise per judge (so winners, ties and splits all come up)."""
    if draw(st.booleans()):
        return draw(
            st.lists(st.lists(st.integers(1, 10), min_size=6, max_size=6), min_size=4, max_size=4)
        )
    base = draw(st.lists(st.integers(1, 10), min_size=6, max_size=6))
    noise = draw(
        st.lists(st.lists(st.integers(-1, 1), min_size=6, max_size=6), min_size=4, max_size=4)
    )
    return [[min(10, max(1, b + n)) for b, n in zip(base, row, strict=True)] for row in noise]


@settings(max_examples=40, deadline=None)
@given(panels(), st.integers(0, 2**16))
def test_a_winner_is_never_reported_with_an_interval_containing_0(
    rows: list[list[int]], seed: int
) -> None:
    table = {
        role: dict(zip(T.argument_ids, row, strict=True))
        for role, row in zip(ROLES, rows, strict=True)
    }
    result = judge(lambda role, a: table[role][a], seed=seed)
    vote, decision = result.vote, result.decision
    event(decision.outcome)
    assert vote.margin_ci is not None and vote.margin_points_ci is not None
    low, high = vote.margin_ci
    if decision.outcome == "winner":
        assert low > 0 if decision.winner == "PRO" else high < 0
        assert decision.winner == ("PRO" if (vote.margin or 0) > 0 else "CON")
    if low <= 0 <= high:
        assert decision.outcome != "winner"


# --- 4: no difference seen is not disagreement -------------------------------------------


def test_identical_scores_are_too_close_with_every_statistic_null() -> None:
    result = judge(lambda role, a: 6)
    agreement = result.agreement
    assert result.decision.outcome == "too_close"  # before: irreconcilable
    assert agreement.alpha is None and agreement.alpha_raw is None  # before: alpha_raw -0.278
    assert agreement.kappa is None
    assert all(v is None for v in agreement.alpha_by_dimension.values())
    assert "no difference between the sides" in result.decision.reasons[0]
    assert result.decision.diagnostics.no_difference
    assert not any("disagree" in r for r in result.decision.reasons[1:])
    assert result.vote.margin_points == 0.0


def test_judges_with_different_but_constant_scores_see_no_difference() -> None:
    result = judge(lambda role, a: 8 if role == "risk" else 5)
    assert result.decision.outcome == "too_close"
    assert result.decision.diagnostics.no_difference
    assert result.agreement.alpha is None


def test_a_uniform_standing_is_not_called_divergence() -> None:
    result = judge(uniform(6, 5))  # every standing PARTIALLY_UPHELD: kappa undefined
    assert result.agreement.kappa is None
    assert result.decision.outcome == "winner"
    text = " ".join(result.decision.reasons)
    assert "diverge" not in text and "review the high-variance" not in text
    assert "same standing" in text


# --- diagnostics that name the cause --------------------------------------------------------


def test_a_reversed_judge_is_named_first_in_the_split_it_causes() -> None:
    result = judge(lambda role, a: 11 - PRO_STRONG[a] if role == "risk" else PRO_STRONG[a])
    decision = result.decision
    assert decision.outcome == "irreconcilable"
    without = decision.diagnostics.alpha_without_judge
    assert max(without, key=lambda j: without[j] or -1.0) == "risk"
    assert without["risk"] == pytest.approx(1.0)
    assert decision.reasons[0].startswith("judge risk disagrees")
    assert "rubric dimension" in decision.reasons[1]
    assert decision.high_variance_arguments and any("split on" in r for r in decision.reasons)


def test_a_dimension_the_judges_split_on_is_named() -> None:
    def plan(role: str, a: str) -> dict[str, Any]:
        score = PRO_STRONG[a]
        evidence = score if role in ("technical", "business") else 11 - score
        return {
            "logic": score,
            "evidence": evidence,
            "responsiveness": score,
            "honesty": score,
            "standing": "UPHELD" if score >= 7 else "REFUTED",
            "note": "",
        }

    result = judge(plan)
    dims = result.decision.diagnostics.alpha_by_dimension
    assert min(dims, key=lambda d: dims[d] if dims[d] is not None else 2.0) == "evidence"
    assert result.decision.outcome == "winner"  # the overall scores still agree
    assert result.decision.reasons[-1].startswith("the judges agree overall but split on evidence")
    assert "logic" not in result.decision.reasons[-1]


def test_a_two_judge_panel_names_no_judge_it_cannot_single_out() -> None:
    judges = default_judges(["technical", "risk"])
    result = judge(
        lambda role, a: 11 - PRO_STRONG[a] if role == "risk" else PRO_STRONG[a], judges=judges
    )
    assert result.decision.outcome == "irreconcilable"
    assert set(result.decision.diagnostics.alpha_without_judge.values()) == {None}
    assert not any("disagrees with the rest" in r for r in result.decision.reasons)


@pytest.mark.parametrize(
    ("points", "word"), [(0.2, "slightly"), (-1.0, "moderately"), (3, "clearly")]
)
def test_effect_words_follow_points(points: float, word: str) -> None:
    assert effect_word(points) == word
