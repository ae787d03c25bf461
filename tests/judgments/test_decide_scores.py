"""Decisions from recorded score tables, and the one decision path they share with a live panel."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from debate import FunctionModel, MultiJudgePanel, RunConfig
from debate.judgments._recorded import _distinct_rows, decide_scores
from debate.judgments._score_cells import evaluation_table, option_points
from debate.records import NO_CALL, ItemDecision, Scale, ScoreTable, Thresholds
from tests.support.helpers import graded, planted_judges, transcript

Row = tuple[str, str, str, str, float] | tuple[str, str, str, str, float, str]
"""item, option, judge, dimension, score, and optionally the unit (else the option)."""
TEN = Scale(low=1, high=10)


def table(rows: Sequence[Row], scale: Scale = TEN) -> ScoreTable:
    """A score table built column by column, as a reader builds one."""

    def codes(column: int) -> tuple[tuple[str, ...], np.ndarray]:
        values = [str(r[column] if len(r) > column else r[1]) for r in rows]
        names = tuple(dict.fromkeys(values))
        return names, np.array([names.index(v) for v in values], dtype=np.int32)

    items, item = codes(0)
    options, option = codes(1)
    judges, judge = codes(2)
    dimensions, dimension = codes(3)
    units, unit = codes(5)
    return ScoreTable(
        source="test",
        scale=scale,
        items=items,
        options=options,
        judges=judges,
        dimensions=dimensions,
        units=units,
        item=item,
        option=option,
        unit=unit,
        judge=judge,
        dimension=dimension,
        score=np.array([r[4] for r in rows], dtype=np.float64),
        order=np.zeros(len(rows), dtype=np.int8),
        standing=np.full(len(rows), NO_CALL, dtype=np.int8),
    )


def scores(item: str, by_judge: dict[str, dict[str, float]], dimension: str = "q") -> list[Row]:
    return [
        (item, option, judge, dimension, score)
        for judge, row in by_judge.items()
        for option, score in row.items()
    ]


TH = Thresholds()


def test_two_agreeing_judges_name_the_winning_option() -> None:
    t = table(scores("s1", {"a": {"x": 2, "y": 5}, "b": {"x": 1, "y": 4}}), Scale(low=1, high=5))
    [decision] = decide_scores(t, thresholds=TH)
    assert decision.outcome == "winner" and decision.winner == "y"
    assert decision.options == ("x", "y")
    # 2 vs 5 on 1-5 is 3.25 vs 10 on 1-10: rescaled before any threshold applies
    assert decision.judge_margins == {"a": pytest.approx(-6.75), "b": pytest.approx(-6.75)}
    assert decision.margin_points == pytest.approx(-6.75)
    assert decision.margin is not None and decision.margin < 0  # favours options[1]
    assert decision.interval == (pytest.approx(-6.75), pytest.approx(-6.75))
    assert decision.confidence == pytest.approx(6.75)
    assert decision.agreement is not None and decision.agreement.kappa is None  # no standings
    assert decision.weights == {"a": 1.0, "b": 1.0}


def test_a_reversed_judge_makes_the_item_irreconcilable_and_is_named() -> None:
    units = {"x1": 9, "x2": 8, "x3": 7, "y1": 3, "y2": 2, "y3": 4}
    rows: list[Row] = [
        ("s", unit[0], judge, "q", 11 - score if judge == "rev" else score, unit)
        for judge in ("a", "b", "c", "rev")
        for unit, score in units.items()
    ]
    t = table(rows)
    [decision] = decide_scores(t, thresholds=TH)
    assert decision.outcome == "irreconcilable" and decision.winner is None
    assert any("judge rev disagrees" in r for r in decision.reasons)
    assert decision.diagnostics is not None
    without = decision.diagnostics.alpha_without_judge
    assert max(without, key=lambda j: without[j] or -9) == "rev"


def test_a_judge_missing_a_score_is_unscored_on_that_pair_and_in_no_statistic() -> None:
    full = {"a": {"x": 8, "y": 3}, "b": {"x": 9, "y": 2}, "c": {"x": 7, "y": 4}}
    rows = scores("s", full)
    gap = [r for r in rows if not (r[2] == "c" and r[1] == "y")]  # c gave x only
    [decision] = decide_scores(table(gap), thresholds=TH)
    [two] = decide_scores(table(scores("s", {"a": full["a"], "b": full["b"]})), thresholds=TH)
    assert decision.judge_margins["c"] is None
    assert any("judge c gave no score for 'y'" in r for r in decision.reasons)
    assert decision.agreement is not None and two.agreement is not None
    assert decision.agreement.judges_scored == 2 and decision.agreement.judges_unscored == 1
    assert decision.agreement.alpha == two.agreement.alpha
    assert (decision.margin, decision.interval) == (two.margin, two.interval)
    assert decision.diagnostics is not None and "c" not in decision.diagnostics.alpha_without_judge


def test_three_options_give_three_pair_decisions_in_first_seen_order() -> None:
    rows = scores("s", {j: {"p": 9, "q": 5, "r": 1} for j in ("a", "b", "c")})
    decisions = decide_scores(table(rows), thresholds=TH)
    assert [d.options for d in decisions] == [("p", "q"), ("p", "r"), ("q", "r")]
    assert [d.winner for d in decisions] == ["p", "p", "q"]


def test_items_of_two_three_and_one_option_keep_table_order() -> None:
    judges = ("a", "b")
    rows = [
        *scores("s1", {j: {"y": 3, "x": 8} for j in judges}),
        *scores("s2", {j: {"p": 9, "q": 5, "r": 1} for j in judges}),
        *scores("s3", {j: {"alone": 5} for j in judges}),  # no pair to decide
        *scores("s4", {j: {"x": 2, "z": 9} for j in judges}),
    ]
    decisions = decide_scores(table(rows), thresholds=TH)
    assert [(d.item, d.options) for d in decisions] == [
        ("s1", ("y", "x")),
        ("s2", ("p", "q")),
        ("s2", ("p", "r")),
        ("s2", ("q", "r")),
        ("s4", ("x", "z")),
    ]
    assert [d.winner for d in decisions] == ["x", "p", "p", "q", "z"]
    only = decide_scores(table(rows), thresholds=TH, items=[3])
    assert [d.item for d in only] == ["s4"]


def test_standings_feed_kappa_and_a_missing_one_leaves_it_undefined() -> None:
    rows = scores("s", {j: {"x": 9, "y": 2} for j in ("a", "b", "c")})
    t = table(rows)
    standing = np.array([0 if r[1] == "x" else 2 for r in rows], dtype=np.int8)
    with_standings = replace(t, standing=standing, standings=("UPHELD", "PARTIAL", "REFUTED"))
    [agreed] = decide_scores(with_standings, thresholds=TH)
    assert agreed.agreement is not None and agreed.agreement.kappa == pytest.approx(1.0)
    standing[0] = NO_CALL  # judge a gave no standing for x
    [gap] = decide_scores(replace(with_standings, standing=standing), thresholds=TH)
    assert gap.agreement is not None and gap.agreement.kappa is None
    assert any("gave no standing" in r for r in gap.reasons)
    assert gap.agreement.judges_scored == 3  # a standing is not a score: a still scored


def test_one_dimension_or_weighted_dimensions() -> None:
    rows = [
        *scores("s", {"a": {"x": 9, "y": 2}, "b": {"x": 8, "y": 3}}, "style"),
        *scores("s", {"a": {"x": 2, "y": 9}, "b": {"x": 3, "y": 8}}, "facts"),
    ]
    t = table(rows)
    [style] = decide_scores(t, thresholds=TH, dimension="style")
    [facts] = decide_scores(t, thresholds=TH, dimension="facts")
    [mostly] = decide_scores(t, thresholds=TH, dimension_weights={"style": 3, "facts": 1})
    assert (style.winner, facts.winner, mostly.winner) == ("x", "y", "x")
    assert style.dimension == "style" and mostly.dimension is None
    assert mostly.judge_margins["a"] == pytest.approx(0.75 * 7 - 0.25 * 7)
    with pytest.raises(ValueError, match="dimension: 'tone' is not in test; use one of"):
        decide_scores(t, thresholds=TH, dimension="tone")
    with pytest.raises(ValueError, match="no weight for dimension 'facts'"):
        decide_scores(t, thresholds=TH, dimension_weights={"style": 1})


def test_judge_weights_are_checked_and_a_weightless_judge_has_no_say() -> None:
    """A judge of weight 0 (say, one that earned nothing against people) cannot veto."""
    t = table(scores("s", {"a": {"x": 9, "y": 2}, "b": {"x": 8, "y": 3}, "z": {"x": 2, "y": 9}}))
    [weighted] = decide_scores(t, thresholds=TH, judge_weights={"a": 1, "b": 1, "z": 0})
    [equal] = decide_scores(t, thresholds=TH)
    [without] = decide_scores(
        table(scores("s", {"a": {"x": 9, "y": 2}, "b": {"x": 8, "y": 3}})), thresholds=TH
    )
    assert weighted.agreement is not None and without.agreement is not None
    assert weighted.agreement.alpha == without.agreement.alpha  # z is in no statistic
    assert equal.outcome == "irreconcilable" and weighted.outcome == "winner"
    assert any("judge z carries weight 0" in r for r in weighted.reasons)
    assert weighted.margin_points == pytest.approx(6.0)
    with pytest.raises(ValueError, match="no weight for judge 'z'"):
        decide_scores(t, thresholds=TH, judge_weights={"a": 1, "b": 1})
    with pytest.raises(ValueError, match=r"judge_weights\['a'\]: give a finite number >= 0"):
        decide_scores(t, thresholds=TH, judge_weights={"a": -1, "b": 1, "z": 1})


def test_a_score_given_twice_is_refused_naming_the_row() -> None:
    rows = scores("s", {"a": {"x": 9, "y": 2}, "b": {"x": 8, "y": 3}})
    with pytest.raises(
        ValueError, match="row 4 repeats item 's', option 'x'.*give each score once"
    ):
        decide_scores(table([*rows, rows[0]]), thresholds=TH)


def test_option_points_average_units_and_leave_gaps_empty() -> None:
    rows = scores("s1", {"a": {"x": 9, "y": 2}, "b": {"x": 8}}) + scores("s2", {"a": {"x": 4}})
    group, option, points = option_points(table(rows))
    assert group.tolist() == [0, 0, 1] and option.tolist() == [0, 1, 0]
    assert points[:, 0].tolist() == [9.0, 2.0, 4.0]
    assert points[0, 1] == 8.0 and np.isnan(points[1:, 1]).all()


# --- live and recorded: one path ---------------------------------------------------------


def live_plan(seed: int) -> Any:
    rng = random.Random(seed)
    base = {a: rng.randint(1, 10) for a in ("PRO-1", "PRO-2", "PRO-3", "CON-1", "CON-2")}

    def plan(role: str, arg_id: str) -> dict[str, Any]:
        score = max(1, min(10, base[arg_id] + rng.randint(-1, 1) + 3 * arg_id.startswith("PRO")))
        rubric = graded(min(10, score))
        rubric["evidence"] = max(1, score - rng.randint(0, 3))  # dimensions differ
        return rubric

    return plan


@pytest.mark.parametrize(("seed", "swap"), [(1, False), (2, True), (3, True), (4, False)])
def test_a_live_panel_and_its_recorded_table_decide_alike(seed: int, swap: bool) -> None:
    debate = transcript(pro=3, con=2)
    panel = MultiJudgePanel(
        models=FunctionModel(planted_judges(live_plan(seed))),
        config=RunConfig(model="function", swap=swap),
    )
    live = panel.evaluate_sync(debate, seed=seed)
    recorded = evaluation_table(debate, live.evaluations)
    if swap:
        assert set(recorded.order.tolist()) == {1, 2}  # both readings, averaged on both paths
    [decision] = decide_scores(
        recorded,
        thresholds=panel.config.thresholds,
        judge_weights=live.vote.judge_weights,
        dimension_weights={j.name: j.weights for j in panel.judges},
        calibration=live.vote.calibration,
        seed=live.seed,
    )
    assert decision.outcome == live.decision.outcome
    assert decision.winner == live.decision.winner
    assert decision.margin == live.vote.margin
    assert decision.margin_points == live.vote.margin_points
    assert decision.interval == live.vote.margin_points_ci
    assert decision.agreement == live.agreement
    assert decision.diagnostics == live.decision.diagnostics
    # the same reasons, but for a live panel's notes on a judge's swapped reading (the
    # table records the readings, not the swap check's summary of them)
    shared = live.decision.reasons[: len(decision.reasons)]
    assert decision.reasons == shared
    assert all(r.startswith("judge ") for r in live.decision.reasons[len(shared) :])


def test_the_outcomes_vary_across_the_live_comparison() -> None:
    """The comparison above is not vacuous: its cases reach more than one outcome."""
    outcomes = set()
    for seed in (1, 2, 3, 4):
        panel = MultiJudgePanel(
            models=FunctionModel(planted_judges(live_plan(seed))),
            config=RunConfig(model="function"),
        )
        outcomes.add(panel.evaluate_sync(transcript(pro=3, con=2), seed=seed).decision.outcome)
    assert len(outcomes) >= 2


def test_two_thousand_items_of_eight_judges_decide_in_one_call() -> None:
    rng = np.random.default_rng(0)
    items, judges = 2000, 8
    quality = rng.normal(0, 2, size=(items, 2))
    noise = rng.normal(0, 1, size=(items, judges, 2))
    score = np.clip(np.round(5.5 + quality[:, None, :] + noise), 1, 10)
    item, judge, option = np.meshgrid(
        np.arange(items), np.arange(judges), np.arange(2), indexing="ij"
    )
    n = score.size
    t = ScoreTable(
        source="planted",
        scale=Scale(low=1, high=10),
        items=tuple(f"i{i}" for i in range(items)),
        options=("A", "B"),
        judges=tuple(f"j{j}" for j in range(judges)),
        dimensions=("overall",),
        units=("A", "B"),
        item=item.ravel().astype(np.int32),
        option=option.ravel().astype(np.int32),
        unit=option.ravel().astype(np.int32),
        judge=judge.ravel().astype(np.int32),
        dimension=np.zeros(n, dtype=np.int32),
        score=score.ravel(),
        order=np.zeros(n, dtype=np.int8),
        standing=np.full(n, NO_CALL, dtype=np.int8),
    )
    decisions = decide_scores(t, thresholds=TH)
    assert len(decisions) == items
    assert all(isinstance(d, ItemDecision) for d in decisions)
    assert [d.item for d in decisions] == list(t.items)
    winners = [d for d in decisions if d.outcome == "winner"]
    assert winners and all(d.winner in ("A", "B") for d in winners)
    # a declared winner is the option with the higher planted quality, nearly always
    right = sum(
        (d.winner == "A") == (quality[int(d.item[1:]), 0] > quality[int(d.item[1:]), 1])
        for d in winners
    )
    assert right / len(winners) > 0.9


def test_pair_shapes_are_numpy_s_distinct_rows_in_its_order() -> None:
    """The groups' shapes read as numbers are np.unique's rows, order and inverse alike."""
    rng = np.random.default_rng(3)
    for width in (1, 5, 62, 63, 80):
        for rows in (0, 1, 7, 300):
            key = rng.random((rows, width)) < 0.8
            if rows:
                key = key[rng.integers(0, min(rows, 4), rows)]  # repeated shapes
            shapes, which = np.unique(key, axis=0, return_inverse=True)
            found, inverse = _distinct_rows(key)
            assert np.array_equal(found, shapes) and np.array_equal(inverse, which.ravel())
