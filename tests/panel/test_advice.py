"""The recommendation follows the agreement band: high, moderate, low, unacceptable."""

from __future__ import annotations

import pytest

from debate.judgments import decide_judgments, planted_verdicts, validate_judgments
from debate.panel._advice import (
    WINNER_RECOMMENDATIONS,
    band_advice,
    flagged_arguments,
    recommendation,
    winner_explanation,
)
from debate.panel._rules import decide
from debate.records import Agreement, Decision, Diagnostics, Thresholds, Vote
from debate.report._view import explanation
from tests.report.test_report import judged

VARIANCE = {"PRO-1": 0.2, "PRO-2": 1.8, "CON-1": 0.4, "CON-2": 1.6}
"""Per-argument variance: PRO-2 and CON-2 reach half the threshold (1.5 of 3.0)."""
OVERCLAIM = ("agrees well enough", "well enough to act", "well enough to trust")


def _decision(alpha: float | None, kappa: float | None, margin: float = 0.4) -> Decision:
    """The live rules on a panel whose alpha and kappa are given and whose lead is clear."""
    agreement = Agreement(
        alpha=alpha,
        alpha_raw=alpha,
        alpha_by_dimension={},
        kappa=kappa,
        argument_variance=dict(VARIANCE),
        judges_scored=4,
        judges_unscored=0,
    )
    vote = Vote(
        pro=0.7,
        con=0.7 - margin,
        margin=margin,
        margin_ci=(margin / 4, margin * 1.5) if margin else (-0.1, 0.1),
        pro_points=7.0,
        con_points=7.0 - 3 * margin,
        margin_points=3 * margin,
        margin_points_ci=(0.3, 1.8) if margin else (-0.3, 0.3),
        topic_type="default",
        judge_weights={},
        calibration="minmax",
    )
    return decide(agreement, vote, Thresholds(), [], 4, Diagnostics())


def test_high_agreement_acts_on_the_verdict() -> None:
    d = _decision(0.85, 0.7)
    assert d.outcome == "winner"
    assert d.recommendation.startswith("The panel agrees highly (alpha 0.850): aggregate and act")


def test_moderate_agreement_acts_but_names_the_high_variance_arguments() -> None:
    d = _decision(0.72, 0.6)
    assert d.outcome == "winner"
    assert d.recommendation == (
        "The panel agrees moderately (alpha 0.720): act on the verdict, but first review the "
        "high-variance arguments: PRO-2, CON-2."
    )


def test_the_reported_low_agreement_winner_is_told_to_be_cautious() -> None:
    """alpha 0.548, kappa 0.156: a winner, which used to 'agree well enough to act'."""
    d = _decision(0.548, 0.156)
    assert d.outcome == "winner"
    assert not any(phrase in d.recommendation for phrase in OVERCLAIM)
    assert "agrees" not in d.recommendation
    assert d.recommendation == (
        "The panel's agreement is low (alpha 0.548): treat the verdict with caution; analyse "
        "where the judges diverge (PRO-2, CON-2) before acting, and do not take their "
        "average as a shared view."
    )


def test_unacceptable_agreement_is_not_acted_on() -> None:
    # alpha below 0.50 with kappa passing still names a winner; the advice says not to act.
    d = _decision(0.45, 0.6)
    assert d.outcome == "winner"
    assert "(alpha 0.450, unacceptable)" in d.recommendation
    assert "do not act on it without reviewing PRO-2, CON-2 yourself" in d.recommendation


def test_undefined_alpha_says_the_verdict_rests_on_the_standings() -> None:
    d = _decision(None, 0.6)
    assert d.outcome == "winner"
    assert d.recommendation.startswith("Agreement on the scores cannot be shown")


@pytest.mark.parametrize(
    ("alpha", "agrees"), [(0.85, True), (0.72, True), (0.6, False), (0.45, False)]
)
def test_too_close_says_the_panel_agrees_only_when_it_does(alpha: float, agrees: bool) -> None:
    d = _decision(alpha, 0.6, margin=0.0)
    assert d.outcome == "too_close"
    assert d.recommendation.startswith("The panel agrees") == agrees
    if not agrees:
        assert "do not read the margin as the judges' shared view" in d.recommendation


def test_every_band_has_its_own_wording() -> None:
    texts = {
        name: recommendation("winner", a, ["X"])
        for name, a in [
            ("high", 0.9),
            ("moderate", 0.7),
            ("low", 0.55),
            ("unacceptable", 0.2),
            ("undefined", None),
        ]
    }
    assert len(set(texts.values())) == len(WINNER_RECOMMENDATIONS) == 5
    assert recommendation("irreconcilable", 0.9, []) == recommendation("irreconcilable", 0.2, [])


def test_flagged_arguments_fall_back_to_the_most_contested() -> None:
    assert flagged_arguments(VARIANCE, 3.0) == ["PRO-2", "CON-2"]
    assert flagged_arguments({"a": 0.1, "b": 0.4, "c": 0.4, "d": None}, 3.0) == ["b", "c"]
    assert flagged_arguments({"a": None}, 3.0) == []


@pytest.mark.parametrize(
    ("alpha", "start"),
    [
        (0.85, "The judges agree with one another highly, and"),
        (0.72, "The judges agree with one another moderately"),
        (0.548, "The judges agree with one another only weakly, so treat the verdict with"),
        (0.3, "The judges' scores do not agree with one another"),
    ],
)
def test_the_debate_report_explains_a_winner_by_band(alpha: float, start: str) -> None:
    result = judged("winner")
    assert result.decision.outcome == "winner"
    changed = result.model_copy(
        update={"agreement": result.agreement.model_copy(update={"alpha": alpha})}
    )
    assert explanation(changed).startswith(start)
    assert winner_explanation(alpha) in explanation(changed)
    assert not any(phrase in explanation(changed) for phrase in OVERCLAIM)


@pytest.mark.parametrize(
    ("alpha", "words"),
    [
        (0.9, "alpha 0.900, high agreement (alpha >= 0.80): aggregate and decide"),
        (0.7, "moderate agreement (alpha 0.67-0.80): act on the decisions, but first review"),
        (0.6, "low agreement (alpha 0.50-0.67): caution; analyse the sources of divergence"),
        (0.1, "unacceptable agreement (alpha below 0.50): do not act on the panel's decisions"),
        (None, "alpha undefined, agreement among the judges cannot be shown"),
    ],
)
def test_table_wide_advice_by_band(alpha: float | None, words: str) -> None:
    items = [f"q{i}" for i in range(8)]
    advice = band_advice(alpha, items)
    assert advice.startswith("agreement among the judges: ") and words in advice
    if alpha is not None and 0.5 <= alpha < 0.8:
        assert "q0, q1, q2, q3, q4 and 3 more" in advice


def test_recorded_decisions_and_validity_carry_the_band() -> None:
    accuracies = {"a": 0.9, "b": 0.9, "c": 0.85, "d": 0.85}
    judges, people = planted_verdicts(300, accuracies, people=3, seed=2)
    decided = decide_judgments(judges)
    alpha = decided.summary.alpha
    assert alpha is not None and 0.5 <= alpha < 0.67  # planted to land in the low band
    (advice,) = [n for n in decided.summary.notes if n.startswith("agreement among the judges")]
    assert "low agreement" in advice and "caution" in advice
    split = [d.item for d in decided.decisions if d.outcome == "irreconcilable"]
    assert split and split[0] in advice
    report = validate_judgments(judges, people, folds=3, n_boot=50).report
    (advice,) = [n for n in report.notes if n.startswith("agreement among the judges")]
    assert f"alpha {report.agreement.alpha_judges:.3f}, low agreement" in advice
