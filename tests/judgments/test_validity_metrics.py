"""The validity metrics on hand-made decision frames whose answers are worked out by hand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from debate.exceptions import ConfigurationError
from debate.judgments._coverage import rank_declared, top_accuracy
from debate.judgments._figures import option_pairs, pairwise_accuracy
from debate.judgments._metrics import BEST_JUDGE_RULE, validity_report
from debate.judgments._resample import ItemBootstrap, kendall_replicates, spearman_replicates
from debate.records import NO_CALL, Calls, DecisionFrame, OptionScores, ValidityReport

X = NO_CALL
WINNER, TOO_CLOSE, IRRECONCILABLE, INSUFFICIENT = 0, 1, 2, 3


def calls(
    call: list[int],
    declared: list[bool] | None = None,
    confidence: list[float] | None = None,
    outcome: list[int] | None = None,
) -> Calls:
    codes = np.array(call, np.int8)
    return Calls(
        call=codes,
        declared=np.isin(codes, (0, 1)) if declared is None else np.array(declared, bool),
        confidence=np.ones(codes.size) if confidence is None else np.array(confidence, float),
        outcome=None if outcome is None else np.array(outcome, np.int8),
    )


def frame(
    label: list[int],
    methods: dict[str, Calls],
    judges: dict[str, Calls],
    *,
    group: list[int] | None = None,
    split: list[bool] | None = None,
    option_scores: OptionScores | None = None,
) -> DecisionFrame:
    n = len(label)
    groups = np.arange(n, dtype=np.int32) if group is None else np.array(group, np.int32)
    return DecisionFrame(
        items=tuple(f"item{i}" for i in range(int(groups.max()) + 1)),
        group=groups,
        fold=(groups % 2).astype(np.int32),
        label=np.array(label, np.int8),
        people_split=np.zeros(n, bool) if split is None else np.array(split, bool),
        methods=methods,
        judges=judges,
        option_scores=option_scores,
    )


def report(f: DecisionFrame, n_boot: int = 200, **kw: object) -> ValidityReport:
    args: dict[str, object] = {
        "alpha_judges": 0.6,
        "alpha_people": 0.7,
        "alpha_level": "nominal",
        "n_boot": n_boot,
        "seed": 3,
        "source": "hand.csv",
        "folds": 2,
    }
    args.update(kw)
    return validity_report(f, **args)  # type: ignore[arg-type]


def known_frame() -> DecisionFrame:
    # Labels: A, B, A, B, (no majority), A.
    panel = calls(
        [0, 1, 1, 2, 0, 0],
        declared=[True, True, True, False, True, False],
        confidence=[0.9, 0.5, 0.7, 0.0, 0.8, 0.1],
        outcome=[WINNER, WINNER, WINNER, TOO_CLOSE, WINNER, IRRECONCILABLE],
    )
    judge = calls([0, X, 0, 1, 1, 1])  # unscored on unit 1: left out, never counted wrong
    return frame([0, 1, 0, 1, X, 0], {"equal": panel}, {"j": judge})


def test_accuracy_coverage_and_declared_accuracy_by_hand() -> None:
    r = report(known_frame())
    panel, judge = r.method("equal"), r.method("j")
    # Labelled units 0,1,2,3,5; the panel is right on 0, 1 and 5, wrong on 2, and its tie
    # on unit 3 against people's B counts wrong.
    assert (panel.accuracy.value, panel.accuracy.n) == (pytest.approx(3 / 5), 5)
    # Declared on 0, 1, 2 of the five labelled units (unit 4 has no label), 2 of them right.
    assert panel.coverage.value == pytest.approx(3 / 5)
    assert (panel.declared_accuracy.value, panel.declared_accuracy.n) == (pytest.approx(2 / 3), 3)
    assert panel.gated and panel.kind == "panel"
    # The judge gave nothing on unit 1: 4 answered, right on 0, 2, 3.
    assert (judge.accuracy.value, judge.accuracy.n) == (pytest.approx(3 / 4), 4)
    assert judge.coverage.value == pytest.approx(4 / 5)
    assert not judge.gated and judge.kind == "judge"
    assert r.labelled == 5 and r.units == 6 and r.kind == "verdicts"
    assert any("1 of 6 units have no majority" in n for n in r.notes)


def test_undefined_figures_are_none_with_a_note_never_zero_or_one() -> None:
    nobody = frame([X, X, X], {}, {"j": calls([0, 1, 0])})
    row = report(nobody).method("j")
    for figure in (row.accuracy, row.coverage, row.declared_accuracy):
        assert figure.value is None and figure.low is None and figure.note
    silent = frame([0, 1, 0], {}, {"j": calls([2, 2, 2])})  # only ties: nothing declared
    row = report(silent).method("j")
    assert row.accuracy.value == 0.0  # three calls, all wrong: a real 0
    assert row.coverage.value == 0.0
    assert row.declared_accuracy.value is None
    assert row.declared_accuracy.note == "no declared call on a labelled unit"
    assert any("declared accuracy undefined" in n for n in report(silent).notes)


def ranked_judge() -> Calls:
    # Ten declared calls, most confident first; right on the 1s below.
    return calls([0] * 10, confidence=[10, 9, 8, 7, 6, 5, 4, 3, 2, 1])


RIGHT = [1, 1, 1, 1, 0, 1, 0, 0, 1, 0]


def test_risk_coverage_points_are_the_accuracy_of_the_most_confident_share() -> None:
    label = [0 if ok else 1 for ok in RIGHT]
    r = report(frame(label, {}, {"j": ranked_judge()}))
    (curve,) = r.risk_coverage
    assert curve.method == "j" and curve.kind == "judge" and curve.graded
    cumulative = np.cumsum(RIGHT)
    expected = [cumulative[k - 1] / k for k in range(1, 11)]
    assert [p.accuracy for p in curve.points] == pytest.approx(expected)
    assert [p.n for p in curve.points] == list(range(1, 11))
    assert [p.coverage for p in curve.points] == pytest.approx([k / 10 for k in range(1, 11)])
    assert len(curve.curve) == 10 and curve.curve[-1].accuracy == pytest.approx(0.6)


def test_confidence_ties_count_at_their_runs_mean_whatever_the_order() -> None:
    flat = calls([0] * 10)  # no confidence gradation
    label = [0 if ok else 1 for ok in RIGHT]
    ranked = rank_declared(flat, np.array(label, np.int8))
    assert [top_accuracy(ranked, k) for k in (1, 3, 7)] == pytest.approx([0.6] * 3)
    reordered = rank_declared(flat, np.array(label[::-1], np.int8))
    assert top_accuracy(reordered, 4) == pytest.approx(top_accuracy(ranked, 4))
    (curve,) = report(frame(label, {}, {"j": flat})).risk_coverage
    assert not curve.graded and len(curve.curve) == 1
    assert {round(p.accuracy, 9) for p in curve.points} == {0.6}


def test_equal_coverage_takes_the_judges_most_confident_calls() -> None:
    label = [0 if ok else 1 for ok in RIGHT]
    # The panel declares on 5 of 10 labelled units, right on 4 of them.
    panel = calls(
        [0, 0, 0, 0, 0, 2, 2, 2, 2, 2],
        declared=[True] * 5 + [False] * 5,
        outcome=[WINNER] * 5 + [TOO_CLOSE] * 5,
    )
    r = report(frame(label, {"equal": panel}, {"j": ranked_judge(), "flat": calls([0] * 10)}))
    assert r.best_judge == "j"  # 0.6 each: the first of equals, in frame order
    assert r.best_judge_rule == BEST_JUDGE_RULE and "oracle" in BEST_JUDGE_RULE
    (c,) = r.equal_coverage
    assert c.coverage == pytest.approx(0.5)
    assert c.panel_accuracy.value == pytest.approx(4 / 5)
    assert c.judge_accuracy.value == pytest.approx(4 / 5)  # its top 5: 1, 1, 1, 1, 0
    assert c.difference.value == pytest.approx(0.0)
    assert c.note is None
    # every judge has its curve beside the panel's (one plot for all, issue 27)
    assert [rc.method for rc in r.risk_coverage] == ["equal", "j", "flat"]


def test_equal_coverage_of_a_judge_without_gradation_is_its_declared_accuracy() -> None:
    label = [0 if ok else 1 for ok in RIGHT]
    panel = calls([0] * 3 + [2] * 7, declared=[True] * 3 + [False] * 7, outcome=[0] * 3 + [1] * 7)
    r = report(frame(label, {"equal": panel}, {"flat": calls([0] * 10)}))
    (c,) = r.equal_coverage
    assert c.judge_accuracy.value == pytest.approx(0.6)
    assert c.note is not None and "no confidence gradation" in c.note
    assert any("no confidence gradation" in n for n in r.notes)


def test_split_detection_precision_recall_and_lift() -> None:
    n = 10
    split = [True, True, True] + [False] * 7  # base rate 0.3
    outcome = [TOO_CLOSE, IRRECONCILABLE, WINNER, TOO_CLOSE, INSUFFICIENT]
    outcome += [INSUFFICIENT, WINNER, WINNER, IRRECONCILABLE, WINNER]
    # Flagged: units 0, 1, 3, 8 (insufficient is not a flag); 0 and 1 are people's splits.
    panel = calls([0] * n, outcome=outcome)
    r = report(frame([0] * n, {"equal": panel}, {"j": calls([0] * n)}, split=split))
    (s,) = r.split_detection
    assert (s.flagged, s.people_split, s.units) == (4, 3, 10)
    assert s.precision.value == pytest.approx(2 / 4)
    assert s.recall.value == pytest.approx(2 / 3)
    assert s.base_rate.value == pytest.approx(0.3)
    assert s.lift.value == pytest.approx(0.5 / 0.3)


def score_frame(n_items: int, seed: int = 0) -> DecisionFrame:
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(n_items, dtype=np.int32), 3)
    people = np.round(rng.normal(5, 2, group.size), 1)
    judge = np.round(people + rng.normal(0, 2, group.size))  # whole points: many ties
    judge[4] = np.nan  # an unscored option stays unscored
    units = n_items
    label = rng.integers(0, 2, units).astype(np.int8)
    return DecisionFrame(
        items=tuple(map(str, range(n_items))),
        group=np.arange(units, dtype=np.int32),
        fold=np.zeros(units, np.int32),
        label=label,
        people_split=np.zeros(units, bool),
        methods={"majority": calls(list(label))},
        judges={"j": calls(list(label))},
        option_scores=OptionScores(
            group=group,
            people=people,
            methods={"majority": people + rng.normal(0, 1, group.size)},
            judges={"j": judge},
        ),
    )


def test_spearman_and_kendall_match_scipy_over_the_options_both_scored() -> None:
    f = score_frame(40)
    assert f.option_scores is not None
    r = report(f)
    scores = f.option_scores
    judge = scores.judges["j"]
    ok = np.isfinite(judge)
    row = r.method("j")
    assert row.spearman is not None and row.kendall is not None
    assert row.spearman.value == pytest.approx(stats.spearmanr(judge[ok], scores.people[ok])[0])
    assert row.kendall.value == pytest.approx(stats.kendalltau(judge[ok], scores.people[ok])[0])
    assert row.spearman.n == int(ok.sum()) == 119
    assert r.kind == "scores"
    assert any("Kendall" in n for n in r.notes)


def test_bootstrapped_ranks_equal_scipy_on_the_expanded_resample() -> None:
    rng = np.random.default_rng(5)
    item = np.repeat(np.arange(30), 2)
    x, y = np.round(rng.normal(size=60), 1), np.round(rng.normal(size=60), 0)  # ties in both
    boot = ItemBootstrap(30, 7, seed=1)
    rhos = spearman_replicates({"x": x}, y, item, boot.counts)["x"]
    taus = kendall_replicates({"x": x}, y, item, boot.counts)["x"]
    for r in range(7):
        take = np.repeat(np.arange(60), boot.counts[r, item].astype(int))
        assert rhos[r] == pytest.approx(stats.spearmanr(x[take], y[take])[0], abs=1e-12)
        assert taus[r] == pytest.approx(stats.kendalltau(x[take], y[take])[0], abs=1e-12)


def test_pairwise_accuracy_by_hand() -> None:
    group = np.array([0, 0, 0, 1, 1, 1], np.int32)
    people = np.array([1.0, 2.0, 3.0, 5.0, 5.0, 6.0])
    method = np.array([1.0, 3.0, 2.0, 4.0, 4.0, 6.0])
    pairs = option_pairs(group, people)
    assert len(pairs[0]) == 5  # item 1's first two options are tied for people: no pair
    boot = ItemBootstrap(2, 50, seed=0)
    # Item 0: (1,2) right, (1,3) right, (2,3) wrong; item 1: both right.
    assert pairwise_accuracy(method, people, group, pairs, boot).value == pytest.approx(4 / 5)
    tie = np.array([1.0, 1.0, 2.0, 4.0, 4.0, 6.0])  # a method tie on a people-ordered pair
    assert pairwise_accuracy(tie, people, group, pairs, boot).value == pytest.approx(4 / 5)


def planted(n_items: int, seed: int) -> DecisionFrame:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_items).astype(np.int8)
    right = rng.random(n_items) < 0.8
    judge = np.where(right, truth, 1 - truth).astype(np.int8)
    return frame(list(truth), {}, {"j": calls(list(judge))})


def test_interval_holds_the_estimate_and_narrows_with_more_items() -> None:
    small, large = (report(planted(n, 1)).method("j").accuracy for n in (60, 2400))
    for e in (small, large):
        assert e.value is not None and e.low is not None and e.high is not None
        assert e.low <= e.value <= e.high
    assert small.high is not None and small.low is not None
    assert large.high is not None and large.low is not None
    # Forty times the items: about a sixth of the width (1/sqrt(40)); allow slack.
    assert (large.high - large.low) < (small.high - small.low) / 3


def test_items_are_resampled_as_clusters() -> None:
    # Each item has two units, both right or both wrong: a cluster bootstrap can only ever
    # add correct units two at a time; resampling units one by one would not.
    boot = ItemBootstrap(25, 400, seed=2)
    assert (boot.counts.sum(axis=1) == 25).all()
    item = np.repeat(np.arange(25), 2)
    correct = np.repeat(np.arange(25) % 3 == 0, 2)
    point, reps = boot.totals(item, correct, np.ones(50))
    assert point.tolist() == [18.0, 50.0]
    assert (reps[:, 1] == 50).all()
    assert (reps[:, 0] % 2 == 0).all()
    assert len(set(reps[:, 0].tolist())) > 3  # it does resample


def test_alpha_notes_say_when_people_agree_weakly() -> None:
    r = report(known_frame(), alpha_people=0.2, alpha_judges=0.5)
    assert r.agreement.alpha_people == 0.2 and r.agreement.level == "nominal"
    assert any("people agree weakly here (alpha 0.20)" in n for n in r.notes)
    assert any("agreement among judges is not correctness" in n for n in r.notes)
    assert report(known_frame(), alpha_people=float("nan")).agreement.alpha_people is None


def test_bad_frames_get_one_line_errors_naming_the_field() -> None:
    f = known_frame()
    broken = DecisionFrame(
        items=f.items,
        group=f.group,
        fold=f.fold,
        label=f.label,
        people_split=f.people_split,
        methods=f.methods,
        judges={"j": calls([0, 1])},
    )
    with pytest.raises(ConfigurationError, match=r"judges\['j'\].call: 2 entries for 6 units"):
        report(broken)
    scored = score_frame(4)
    assert scored.option_scores is not None
    short = OptionScores(
        group=scored.option_scores.group,
        people=scored.option_scores.people,
        methods={},
        judges={"j": np.ones(3)},
    )
    with pytest.raises(ConfigurationError, match=r"option_scores.judges\['j'\]: 3 scores for 12"):
        report(replace(scored, option_scores=short))
    with pytest.raises(ConfigurationError, match="n_boot: 1; give at least 2") as info:
        report(f, n_boot=1)
    assert "\n" not in str(info.value)


def test_report_round_trips_through_json() -> None:
    r = report(score_frame(12))
    assert ValidityReport.model_validate_json(r.model_dump_json()) == r
