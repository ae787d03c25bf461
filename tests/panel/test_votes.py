"""Issue 29 (parts 1 and 5): correlated judges, effective votes, aggregators, standbys.

Planted panels: copies of one judge, independent judges, a judge duplicated three times;
a live panel (function test doubles) where a judge fails and a standby is asked.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from debate import FunctionModel, MultiJudgePanel, RunConfig
from debate.exceptions import ConfigurationError
from debate.models import Message
from debate.panel import Context, ScoreBatch, Setting, conclude_batch
from debate.records import JudgeSpec, Thresholds, build_config, default_judges
from debate.stats import (
    bootstrap_margin_batch,
    calibrate_batch,
    correlation_batch,
    design_effect,
    effective_votes,
    effective_votes_interval,
    effective_votes_intervals,
    side_means,
)
from debate.stats._aggregate import aggregate, aggregate_vote_batch, trimmed
from tests.support.helpers import planted_judges, transcript

WIDE = transcript(pro=10, con=10)
"""Twenty arguments: enough columns for a correlation to mean something."""
IDS = [a.id for a in WIDE.arguments]
LOOSE = Thresholds(alpha=-1.0, kappa=-1.0, variance=100.0)
"""Agreement gates off: these tests are about the margin's interval."""


def _random_plan(seed_of: Callable[[str], int]) -> Callable[[str, str], int]:
    """Each role scores every argument at random (1-10) from its own seed."""
    tables: dict[str, dict[str, int]] = {}

    def plan(role: str, arg: str) -> int:
        if role not in tables:
            rng = random.Random(seed_of(role))
            tables[role] = {a: rng.randint(1, 10) for a in IDS}
        return tables[role][arg]

    return plan


def _panel(plan: Callable[[str, str], Any], **config: Any) -> MultiJudgePanel:
    return MultiJudgePanel(
        models=FunctionModel(planted_judges(plan)), config=RunConfig(model="function", **config)
    )


# --- correlation and effective votes ------------------------------------------------------


def test_four_copies_of_one_judge_are_one_vote_and_the_warning_names_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    result = _panel(_random_plan(lambda role: 7)).evaluate_sync(WIDE, seed=3)
    agreement = result.agreement
    assert agreement.effective_votes == pytest.approx(1.0)
    assert agreement.effective_votes_ci == pytest.approx((1.0, 1.0))
    assert agreement.correlation["technical"]["risk"] == pytest.approx(1.0)
    assert agreement.clusters == [["technical", "business", "risk", "general"]]
    assert agreement.warning is not None
    assert "1.00 independent votes" in agreement.warning
    assert "technical, business, risk, general" in agreement.warning
    assert any("independent votes" in r.message for r in caplog.records)


def test_four_independent_judges_are_about_four_votes() -> None:
    names = ["technical", "business", "risk", "general"]
    result = _panel(_random_plan(lambda role: 100 + names.index(role))).evaluate_sync(WIDE, seed=3)
    agreement = result.agreement
    assert agreement.effective_votes is not None and agreement.effective_votes_ci is not None
    low, high = agreement.effective_votes_ci
    assert low <= 4.0 <= high + 1e-9
    assert agreement.effective_votes > 3.0
    assert agreement.clusters == [] and agreement.warning is None
    assert agreement.effective_votes_method is not None
    assert "Kish" in agreement.effective_votes_method


def test_the_estimator_on_planted_matrices() -> None:
    rng = np.random.default_rng(0)
    one = rng.normal(size=(1, 1, 200))
    copies = np.repeat(one, 4, axis=1)
    independent = rng.normal(size=(1, 4, 200))
    assert effective_votes(correlation_batch(copies))[0] == pytest.approx(1.0)
    found = effective_votes(correlation_batch(independent))[0]
    interval = effective_votes_interval(independent[0])
    assert interval is not None and interval[0] <= found <= interval[1]
    assert interval[0] <= 4.0 <= interval[1] + 1e-9 and found > 3.3
    # Equicorrelated judges: n / (1 + (n - 1) r), the design effect's number.
    r = 0.5
    corr = np.full((1, 4, 4), r) + (1 - r) * np.eye(4)
    assert effective_votes(corr)[0] == pytest.approx(4 / (1 + 3 * r))
    assert design_effect(corr, np.ones(4))[0] == pytest.approx(1 + 3 * r)
    # Two points always correlate +-1: undefined, not a perfect correlation.
    assert np.isnan(correlation_batch(rng.normal(size=(1, 3, 2)))).all()


@pytest.mark.parametrize("grouped", [False, True])
def test_effective_votes_intervals_are_each_items_own(grouped: bool) -> None:
    """One bootstrap over a stack of items gives each item's interval alone, bit for bit."""
    rng = np.random.default_rng(11)
    items = np.round(rng.normal(5.5, 2.0, size=(7, 4, 8)))
    items[2] = items[2, :1]  # copies: one effective vote
    items[4, 1] = 5.0  # a judge whose scores do not vary
    groups = np.array([True, False] * 4) if grouped else None
    found = effective_votes_intervals(items, groups, seed=5)
    alone = [effective_votes_interval(x, groups, seed=5) for x in items]
    assert found == alone and all(f is not None for f in found)
    assert found[2] == (1.0, 1.0)
    short = items[:, :, :2]  # too few degrees of freedom: no interval, for every item
    assert effective_votes_intervals(short, None, seed=5) == [None] * 7


def _planted_batch(raw: np.ndarray, is_pro: np.ndarray) -> ScoreBatch:
    items, judges, units = raw.shape
    return ScoreBatch(
        judges=[f"j{k}" for k in range(judges)],
        ids=[[f"u{i}" for i in range(units)]] * items,
        is_pro=is_pro,
        raw=raw,
        dimensions={},
        standings=None,
    )


def test_a_judge_duplicated_three_times_leaves_the_interval_and_outcome_unchanged() -> None:
    """Today's bootstrap takes the copies for three more votes and narrows; ours does not."""
    rng = np.random.default_rng(0)
    items, judges, units = 200, 4, 8
    is_pro = np.array([True] * (units // 2) + [False] * (units // 2))
    # Each judge sees the sides apart by its own amount (a judge-level effect), plus noise.
    shift = rng.normal(0.5, 1.5, size=(items, judges, 1)) * is_pro
    raw = np.round(5.5 + rng.normal(0, 1.5, size=(items, judges, units)) + shift, 1)
    duplicated = np.concatenate([np.repeat(raw[:, :1], 3, axis=1), raw], axis=1)
    setting = Setting(thresholds=LOOSE, calibration="minmax", seed=1, topic_type="general")

    def decide(x: np.ndarray) -> tuple[np.ndarray, list[str], np.ndarray]:
        batch = _planted_batch(x, is_pro)
        found = conclude_batch(
            batch,
            dict.fromkeys(batch.judges, 1.0),
            setting,
            [Context(panel_size=len(batch.judges))] * items,
        )
        ci = np.array([c.vote.margin_ci for c in found])
        naive = bootstrap_margin_batch(
            calibrate_batch(x, "minmax", 3.0), is_pro, np.ones(x.shape[1]), seed=1
        )
        return ci, [c.decision.outcome for c in found], naive

    ci, outcomes, naive = decide(raw)
    ci_dup, outcomes_dup, naive_dup = decide(duplicated)
    width, width_dup = ci[:, 1] - ci[:, 0], ci_dup[:, 1] - ci_dup[:, 0]
    naive_ratio = np.mean((naive_dup[:, 1] - naive_dup[:, 0]) / (naive[:, 1] - naive[:, 0]))
    assert naive_ratio < 0.9  # today: the copies narrow the interval
    assert np.mean(width_dup / width) == pytest.approx(1.0, abs=0.06)
    naive_winners = (naive[:, 0] > 0) | (naive[:, 1] < 0)
    naive_winners_dup = (naive_dup[:, 0] > 0) | (naive_dup[:, 1] < 0)
    assert naive_winners_dup.sum() >= 1.5 * naive_winners.sum()  # today: more winners
    same = np.mean([a == b for a, b in zip(outcomes, outcomes_dup, strict=True)])
    assert same >= 0.9
    winners = outcomes.count("winner")
    assert abs(outcomes_dup.count("winner") - winners) <= max(3, 0.2 * winners)


def test_copies_inside_a_larger_panel_share_one_weight() -> None:
    """Three copies of j0 beside three other judges: j0's copies weigh what j0 weighs."""
    rng = np.random.default_rng(5)
    is_pro = np.array([True] * 5 + [False] * 5)
    raw = np.round(5 + rng.normal(0, 2, size=(1, 4, 10)), 1)
    duplicated = np.concatenate([np.repeat(raw[:, :1], 3, axis=1), raw], axis=1)
    setting = Setting(thresholds=LOOSE, calibration="minmax", seed=1, topic_type="general")
    results = []
    for x in (raw, duplicated):
        batch = _planted_batch(x, is_pro)
        [found] = conclude_batch(
            batch, dict.fromkeys(batch.judges, 1.0), setting, [Context(panel_size=x.shape[1])]
        )
        results.append(found)
    plain, dup = results
    assert dup.vote.margin == pytest.approx(plain.vote.margin)
    assert dup.vote.cluster_weights is not None
    assert dup.vote.cluster_weights["j0"] == pytest.approx(0.25)
    assert dup.agreement.clusters == [["j0", "j1", "j2", "j3"]]
    assert plain.vote.cluster_weights is None


# --- aggregators --------------------------------------------------------------------------


MARGINS = np.array([[0.9, 0.8, 0.7, -0.9, 0.2]])
WEIGHTS = np.ones((1, 5))


def test_weighted_mean_is_todays_vote() -> None:
    assert aggregate(MARGINS, WEIGHTS, "weighted_mean")[0] == pytest.approx(0.34)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4, 6))
    is_pro = np.array([True, True, True, False, False, False])
    w = np.array([1.0, 2.0, 0.5, 1.0])
    pro, con = side_means(x, is_pro)
    found = aggregate_vote_batch(x, is_pro, w, "weighted_mean")
    assert found.margin == pytest.approx(((pro - con) * w).sum(axis=1) / w.sum())


def test_median_ignores_one_far_judge() -> None:
    assert aggregate(MARGINS, WEIGHTS, "median")[0] == pytest.approx(0.7)
    far = MARGINS.copy()
    far[0, 3] = -100.0
    assert aggregate(far, WEIGHTS, "median")[0] == pytest.approx(0.7)
    # An even split of the weight takes the middle two's mean.
    assert aggregate(np.array([[1.0, 2.0, 3.0, 4.0]]), np.ones((1, 4)), "median")[0] == 2.5
    # Weights count: one heavy judge is the median.
    heavy = np.array([[5.0, 1.0, 1.0, 1.0, 1.0]])
    assert aggregate(MARGINS, heavy, "median")[0] == pytest.approx(0.9)


def test_trimmed_mean_drops_the_extremes() -> None:
    assert trimmed(2) == 0 and trimmed(3) == 1 and trimmed(5) == 1 and trimmed(10) == 2
    # Five judges: drop -0.9 and 0.9, mean of 0.2, 0.7, 0.8.
    assert aggregate(MARGINS, WEIGHTS, "trimmed_mean")[0] == pytest.approx(0.5666666667)


def test_majority_counts_sides_not_sizes() -> None:
    # Four of five judges favour PRO: (4 - 1) / 5.
    assert aggregate(MARGINS, WEIGHTS, "majority")[0] == pytest.approx(0.6)
    # A tie is no vote for either side but counts in the total weight.
    assert aggregate(np.array([[1.0, 0.0, -1.0, 1.0]]), np.ones((1, 4)), "majority")[
        0
    ] == pytest.approx(0.25)


@pytest.mark.parametrize("method", ["weighted_mean", "median", "trimmed_mean", "majority"])
def test_the_live_panel_votes_with_the_configured_aggregator(method: str) -> None:
    """The panel's margin is the aggregator applied to each judge's margin, and recorded."""
    tables = {
        "technical": [9, 8, 7, 4, 3, 2],
        "business": [4, 9, 8, 7, 1, 5],
        "risk": [2, 3, 1, 9, 8, 7],
        "general": [7, 5, 9, 6, 2, 8],
    }
    ids = ["PRO-1", "PRO-2", "PRO-3", "CON-1", "CON-2", "CON-3"]
    result = _panel(
        lambda role, a: tables[role][ids.index(a)],
        thresholds=Thresholds(aggregate=method),
    ).evaluate_sync(transcript(), seed=2)
    assert result.vote.aggregate == method == result.decision.thresholds.aggregate
    assert result.agreement.clusters == []  # no two judges alike: weights as given
    judges = [e.judge for e in result.evaluations]
    raw = np.array([[tables[j][i] for i in range(6)] for j in judges], dtype=float)
    is_pro = np.array([True] * 3 + [False] * 3)
    calibrated = calibrate_batch(raw[None], "minmax", 3.0)
    weights = np.array([result.vote.judge_weights[j] for j in judges])
    pro, con = side_means(calibrated, is_pro)
    expected = aggregate(pro - con, weights[None], method)[0]  # type: ignore[arg-type]
    assert result.vote.margin == pytest.approx(expected, abs=1e-9)
    assert result.vote.margin_ci is not None
    if method == "majority":
        assert result.vote.margin == pytest.approx(1 - 2 * weights[2] / weights.sum())


def test_an_unknown_aggregator_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigurationError, match="thresholds.aggregate"):
        build_config({"thresholds": {"aggregate": "mode"}})


# --- min_judges and standbys --------------------------------------------------------------

PRO_STRONG = {"PRO-1": 9, "PRO-2": 8, "PRO-3": 7, "CON-1": 4, "CON-2": 3, "CON-3": 2}


def _failing(role: str, arg: str) -> int | str:
    """Risk replies with no JSON; the others agree, each in its own way."""
    if role == "risk":
        return "RAW:I refuse to use JSON"
    return PRO_STRONG[arg] + (role == "business") * (arg == "PRO-2")


Reply = Callable[[list[Message], Any], str]


def _standby_panel(
    standbys: list[JudgeSpec], standby_fn: Reply | dict[str, Reply], **config: Any
) -> MultiJudgePanel:
    judges = [*default_judges(), *standbys]
    regular = FunctionModel(planted_judges(_failing))
    fns = (
        standby_fn
        if isinstance(standby_fn, dict)
        else dict.fromkeys([j.name for j in standbys], standby_fn)
    )
    models = {j.name: FunctionModel(fns[j.name]) if j.standby else regular for j in judges}
    return MultiJudgePanel(
        models=models, config=RunConfig(model="function", judges=judges, **config)
    )


def _spare(name: str) -> JudgeSpec:
    general = next(j for j in default_judges() if j.role == "general")
    return JudgeSpec(name=name, role="general", weights=general.weights, standby=True)


def test_a_standby_replaces_a_failed_judge_and_is_recorded() -> None:
    calls: list[str] = []

    def standby(messages: list[Message], schema: Any) -> str:
        calls.append("spare")
        return planted_judges(lambda role, a: PRO_STRONG[a] - (a == "CON-3"))(messages, schema)

    panel = _standby_panel([_spare("spare")], standby, thresholds=Thresholds(min_judges=4))
    result = panel.evaluate_sync(transcript(), seed=4)
    by_name = {e.judge: e for e in result.evaluations}
    assert calls == ["spare"]  # asked once, for the one failed judge
    risk, spare = by_name["risk"], by_name["spare"]
    assert risk.status == "unscored" and risk.scores is None  # never filled in
    assert spare.status == "scored" and spare.standby_for == "risk"
    assert spare.standby_reason is not None and "parse_failure" in spare.standby_reason
    assert result.agreement.judges_scored == 4 and result.agreement.judges_unscored == 1
    assert "risk" not in result.decision.judge_evidence  # left out of every statistic
    assert "spare" in result.decision.judge_evidence
    assert result.decision.outcome == "winner"  # four scored judges meet min_judges = 4
    assert any("standby judge spare" in r and "risk" in r for r in result.decision.reasons)


def test_without_a_standby_min_judges_makes_the_panel_insufficient() -> None:
    result = _panel(_failing, thresholds=Thresholds(min_judges=4)).evaluate_sync(transcript())
    assert result.decision.outcome == "insufficient"
    assert any("at least 4 are needed" in r for r in result.decision.reasons)
    default = _panel(_failing).evaluate_sync(transcript())
    assert default.decision.outcome == "winner"  # three of four meet the default two


def test_a_standby_is_not_asked_when_every_judge_scores() -> None:
    calls: list[str] = []

    def standby(messages: list[Message], schema: Any) -> str:
        calls.append("spare")
        return "{}"

    judges = [*default_judges(), _spare("spare")]
    regular = FunctionModel(planted_judges(lambda role, a: PRO_STRONG[a]))
    models = {j.name: (FunctionModel(standby) if j.standby else regular) for j in judges}
    panel = MultiJudgePanel(models=models, config=RunConfig(model="function", judges=judges))
    result = panel.evaluate_sync(transcript(), seed=1)
    assert calls == []
    assert [e.judge for e in result.evaluations] == ["technical", "business", "risk", "general"]


def test_a_failed_standby_stays_unscored_and_the_next_one_is_asked() -> None:
    asked: list[str] = []

    def first(messages: list[Message], schema: Any) -> str:
        asked.append("first")
        return "not json"

    def second(messages: list[Message], schema: Any) -> str:
        asked.append("second")
        return planted_judges(lambda role, a: PRO_STRONG[a])(messages, schema)

    panel = _standby_panel([_spare("first"), _spare("second")], {"first": first, "second": second})
    result = panel.evaluate_sync(transcript(), seed=1)
    by_name = {e.judge: e for e in result.evaluations}
    assert by_name["first"].status == "unscored" and by_name["first"].standby_for == "risk"
    assert by_name["second"].status == "scored" and by_name["second"].standby_for == "risk"
    assert result.agreement.judges_scored == 4 and result.agreement.judges_unscored == 2
    assert asked == ["first"] * 3 + ["second"]  # first: a try and two re-asks, then second


def test_min_judges_above_the_panel_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="min_judges"):
        build_config({"thresholds": {"min_judges": 5}})
    with pytest.raises(ConfigurationError, match="thresholds.min_judges"):
        build_config({"thresholds": {"min_judges": 1}})
    # Standbys do not count towards the panel: they are asked only on a failure.
    standby = {"name": "spare", "role": "general", "standby": True}
    with pytest.raises(ConfigurationError, match="regular judge"):
        build_config({"judges": [{"role": "technical"}, standby]})


# --- the validity report: error correlation against people -------------------------------


def _validity(tmp_path: Any, judged: Any, people: Any, copies: bool) -> Any:
    from debate.judgments import table_rows, validate_judgments, write_judgments

    rows = list(table_rows(judged))
    if copies:  # the sharp judge three more times, under other names
        first = [r for r in rows if r["judge"] == "sharp"]
        rows = first + [{**r, "judge": f"sharp{k}"} for k in (2, 3, 4) for r in first]
    write_judgments(tmp_path / "j.csv", rows, scale=None)
    write_judgments(tmp_path / "p.csv", table_rows(people), scale=None)
    return validate_judgments(tmp_path / "j.csv", tmp_path / "p.csv", n_boot=200).report


def test_validity_reports_the_judges_error_correlation(tmp_path: Any) -> None:
    from debate.judgments import planted_verdicts

    accuracy = {"sharp": 0.8, "good": 0.75, "fair": 0.7, "plain": 0.72}
    judged, people = planted_verdicts(400, accuracy, people=3, seed=3)
    report = _validity(tmp_path, judged, people, copies=False)
    found = report.judge_correlation
    assert found is not None and found.kind == "error" and found.units > 300
    assert found.effective_votes is not None and found.effective_votes_ci is not None
    low, high = found.effective_votes_ci
    assert low <= found.effective_votes <= high
    assert low <= 4.0 <= high + 1e-9 and found.effective_votes > 3.3  # independent errors
    assert found.warning is None and found.clusters == []
    # Four copies of one judge make one vote, and the warning names them.
    (tmp_path / "copies").mkdir()
    copied = _validity(tmp_path / "copies", judged, people, copies=True).judge_correlation
    assert copied is not None and copied.effective_votes == pytest.approx(1.0)
    assert copied.clusters == [["sharp", "sharp2", "sharp3", "sharp4"]]
    assert copied.warning is not None and "sharp, sharp2, sharp3, sharp4" in copied.warning


def test_calibrate_reports_the_error_correlation_of_per_item_calls() -> None:
    """``debate calibrate``'s report: calls per item against the people's answer."""
    from debate.judgments import call_error_correlation

    rng = random.Random(4)
    truth = [rng.choice("ab") for _ in range(300)]

    def judge(accuracy: float) -> list[str | None]:
        return [t if rng.random() < accuracy else ("b" if t == "a" else "a") for t in truth]

    one = judge(0.7)
    copies = call_error_correlation({"x": one, "y": list(one), "z": list(one)}, list(truth))
    assert copies is not None and copies.effective_votes == pytest.approx(1.0)
    assert copies.clusters == [["x", "y", "z"]] and copies.warning is not None
    calls: dict[str, list[str | None]] = {n: judge(0.7) for n in ("p", "q", "r")}
    calls["p"][0] = None  # a judge without a call: the item is left out, not filled in
    found = call_error_correlation(calls, list(truth))
    assert found is not None and found.units == 299
    assert found.effective_votes_ci is not None
    assert found.effective_votes_ci[0] <= 3.0 <= found.effective_votes_ci[1] + 1e-9
