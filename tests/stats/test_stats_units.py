"""Hand-worked cases: calibration, the side vote, the margin interval, the council rules."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from debate.stats import (
    Ranking,
    argument_variance,
    bootstrap_alpha,
    bootstrap_margin,
    borda,
    calibrate,
    choose_calibration,
    fleiss_kappa,
    fleiss_kappa_from_labels,
    fleiss_kappa_se,
    krippendorff_alpha,
    minmax,
    normalized_scores,
    rubric_overall,
    side_vote,
    zscore,
)


def test_zscore_and_minmax_including_degenerate_rows() -> None:
    assert zscore([5, 6, 7]) == pytest.approx([-1, 0, 1])
    assert list(zscore([4, 4, 4])) == [0, 0, 0]
    assert list(zscore([7.0])) == [0.0]
    z = zscore([1, np.nan, 3])
    assert math.isnan(z[1]) and z[0] == pytest.approx(-0.7071, abs=1e-4)
    assert minmax([2, 4, 6]) == pytest.approx([0, 0.5, 1])
    assert list(minmax([3, 3])) == [0.5, 0.5]
    assert math.isnan(minmax([np.nan, 1])[0])
    np.testing.assert_allclose(calibrate([[5, 6, 7], [8, 9, 10]], "zscore"), [[-1, 0, 1]] * 2)
    with pytest.raises(ValueError, match="minmax"):
        calibrate([[1, 2]], "rank")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "method"), [(1, "minmax"), (3, "minmax"), (4, "zscore"), (5, "zscore")]
)
def test_short_long_rule(n: int, method: str) -> None:
    assert choose_calibration(n) == method


def test_side_vote_uses_means_not_sums() -> None:
    scores = np.array([[8.0, 6, 6, 6, 6, 6]])  # 1 PRO argument, 5 CON arguments
    is_pro = np.array([True, False, False, False, False, False])
    vote = side_vote(scores, is_pro, [1.0])
    assert vote.pro == 8 and vote.con == 6 and vote.margin == 2  # a sum would give CON 30


def test_side_vote_weights_and_unscored_rows() -> None:
    scores = np.array([[1.0, 0.0], [0.0, 1.0], [np.nan, np.nan]])
    vote = side_vote(scores, [True, False], [3.0, 1.0, 100.0])
    assert vote.margin == pytest.approx(0.5)  # (3*1 + 1*-1) / 4; the empty row is ignored


def test_argument_variance_needs_two_judges() -> None:
    v = argument_variance([[1.0, 2.0], [3.0, np.nan]])
    assert v[0] == pytest.approx(2.0) and math.isnan(v[1])


def test_margin_interval_is_seeded_and_brackets_the_margin() -> None:
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(4, 6)) + np.array([1, 1, 1, 0, 0, 0])
    is_pro = np.array([True] * 3 + [False] * 3)
    w = np.ones(4)
    a = bootstrap_margin(scores, is_pro, w, seed=3)
    assert a == bootstrap_margin(scores, is_pro, w, seed=3)
    margin = side_vote(scores, is_pro, w).margin
    assert a[0] < margin < a[1]


def test_bootstrap_alpha_is_seeded() -> None:
    data = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 6, 5], [2, 2, 3, 5, 5, 6]]
    first = bootstrap_alpha(data, "interval", n_boot=200, seed=7)
    assert first == bootstrap_alpha(data, "interval", n_boot=200, seed=7)
    assert first.low <= first.estimate <= first.high


def test_fleiss_errors_and_standard_error() -> None:
    with pytest.raises(ValueError, match="krippendorff_alpha"):
        fleiss_kappa([[2, 1], [1, 1]])
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    # The SE under H0 should match the spread of kappa over tables drawn under H0 with the
    # same marginals (Fleiss, Nee and Landis 1979; the uncorrected 1971 form gives 0.0202).
    p = np.array(table).sum(axis=0) / 140
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(3000):
        labels = rng.choice(5, size=(10, 14), p=p)
        draws.append(fleiss_kappa(np.stack([(labels == j).sum(1) for j in range(5)], 1)))
    assert fleiss_kappa_se(table) == pytest.approx(0.01697, abs=1e-4)
    assert fleiss_kappa_se(table) == pytest.approx(float(np.std(draws)), rel=0.15)
    assert math.isnan(fleiss_kappa_se([[3, 0], [3, 0]]))


# --- council rules, one by one ---------------------------------------------------------

CANDS = ["a", "b", "c"]


def by(entries):  # type: ignore[no-untyped-def]
    return {e.candidate: e for e in entries}


def test_borda_points_and_averaging() -> None:
    rows = by(borda([Ranking("r1", ["a", "b", "c"]), Ranking("r2", ["b", "a", "c"])], CANDS))
    assert rows["a"].borda == 1.5 and rows["b"].borda == 1.5 and rows["c"].borda == 0
    assert rows["a"].rank == 1  # tie on points: first places equal, then name


def test_borda_self_votes_excluded() -> None:
    rows = by(
        borda(
            [
                Ranking("r1", ["a", "b", "c"], authored=frozenset({"a"})),
                Ranking("r2", ["b", "a", "c"]),
            ],
            CANDS,
        )
    )
    assert rows["a"].votes == 1 and rows["a"].borda == 1.0
    assert rows["b"].votes == 2


def test_borda_abstentions_skipped() -> None:
    rows = by(borda([Ranking("r1", ["a", "b", "c"]), Ranking("r2")], CANDS))
    assert rows["a"].votes == 1


def test_borda_partial_rankings_use_positions_given() -> None:
    rows = by(borda([Ranking("r1", ["c"]), Ranking("r2", ["a", "b", "c"])], CANDS))
    assert rows["c"].votes == 2 and rows["c"].borda == 1.0  # 2 points then 0
    assert rows["b"].votes == 1


def test_borda_ties_by_first_places_then_name() -> None:
    rankings = [
        Ranking("r1", ["a", "b", "c"]),
        Ranking("r2", ["c", "b", "a"]),
        Ranking("r3", ["b", "c", "a"]),
        Ranking("r4", ["c", "a", "b"]),
    ]
    entries = borda(rankings, CANDS)
    # c: 2+1+2+0... points: a=2+0+0+1=3/4, b=1+1+2+0=4/4, c=0+2+1+2=5/4
    assert [e.candidate for e in entries] == ["c", "b", "a"]
    tie = borda([Ranking("r1", ["b", "a"]), Ranking("r2", ["a", "b"])], ["a", "b"])
    assert [e.candidate for e in tie] == ["a", "b"]  # equal points, equal firsts: by name
    firsts = borda(
        [
            Ranking("r1", ["b", "c", "a"]),
            Ranking("r2", ["a", "b", "c"]),
            Ranking("r3", ["c", "b", "a"]),
            Ranking("r4", ["b", "a", "c"]),
        ],
        CANDS,
    )
    # a: 0+2+0+1 = 3/4, b: 2+1+1+2 = 6/4, c: 1+0+2+0 = 3/4 -> a and c tie on points and
    # on first places (1 each), so name decides
    assert [e.candidate for e in firsts] == ["b", "a", "c"]


def test_borda_no_votes_ranks_last() -> None:
    entries = borda([Ranking("r1", ["b", "c"])], CANDS)
    assert entries[-1].candidate == "a" and entries[-1].votes == 0 and entries[-1].borda == 0


def test_borda_single_reviewer_is_low_confidence() -> None:
    assert {e.confidence for e in borda([Ranking("r1", CANDS)], CANDS)} == {"low"}


def test_borda_ranking_wins_over_scores_on_mismatch() -> None:
    mismatch = Ranking("r1", ["c", "b", "a"], scores={"a": 9, "b": 5, "c": 1})
    assert [e.candidate for e in borda([mismatch, Ranking("r2", ["c", "b", "a"])], CANDS)][0] == "c"
    from_scores = Ranking("r3", None, scores={"a": 9, "b": 5, "c": 1})
    assert from_scores.resolved() == ["a", "b", "c"]


def test_borda_coverage_confidence() -> None:
    rankings = [Ranking(f"r{i}", ["a", "b", "c"] if i < 4 else ["a"]) for i in range(10)]
    rows = by(borda(rankings, CANDS))
    assert rows["a"].confidence == "high"  # 10/10
    assert rows["b"].confidence == "low"  # 4/10
    rankings = [Ranking(f"r{i}", ["a", "b", "c"] if i < 6 else ["a"]) for i in range(10)]
    assert by(borda(rankings, CANDS))["b"].confidence == "medium"  # 6/10


def test_rubric_accuracy_ceiling_example() -> None:
    scores = {"accuracy": 3, "relevance": 9, "completeness": 9, "conciseness": 9, "clarity": 9}
    assert rubric_overall(scores) == 4.0  # 6.9 by the default weights, capped at 4.0
    # The design note's 7.35 comes from weights with accuracy at 0.275; capped all the same.
    weights = {
        "accuracy": 0.275,
        "relevance": 0.0,
        "completeness": 0.25,
        "conciseness": 0.2375,
        "clarity": 0.2375,
    }
    assert sum(weights[d] * scores[d] for d in weights) == pytest.approx(7.35)
    assert rubric_overall(scores, weights) == 4.0
    assert rubric_overall({**scores, "accuracy": 6}) == 7.0
    assert rubric_overall({**scores, "accuracy": 8}) == pytest.approx(8.65)


def test_rubric_safety_gate_and_bad_input() -> None:
    scores = {"accuracy": 9, "relevance": 9, "completeness": 9, "conciseness": 9, "clarity": 9}
    assert rubric_overall(scores, safety_failed=True) == 0.0
    assert rubric_overall(scores, safety_failed=True, safety_cap=2.5) == 2.5
    with pytest.raises(ValueError, match="scores.clarity"):
        rubric_overall({k: v for k, v in scores.items() if k != "clarity"})
    with pytest.raises(ValueError, match="sum to"):
        rubric_overall(
            scores,
            {
                "accuracy": 0.5,
                "relevance": 0.1,
                "completeness": 0.2,
                "conciseness": 0.15,
                "clarity": 0.2,
            },
        )


def test_normalized_scores_calibrate_harsh_and_lenient_reviewers() -> None:
    entries = normalized_scores(
        {"harsh": {"a": 6, "b": 5, "c": 4}, "lenient": {"a": 9, "b": 8, "c": 7}}
    )
    assert [e.candidate for e in entries] == ["a", "b", "c"]
    assert entries[0].mean_score == pytest.approx(1.2247, abs=1e-4)
    assert entries[0].std_error == 0.0


def test_normalized_scores_flat_reviewer_contributes_zeros_and_self_votes_drop() -> None:
    entries = normalized_scores(
        {"flat": {"a": 5, "b": 5}, "r": {"a": 9, "b": 1}, "author": {"a": 10, "b": 1}},
        authored={"author": frozenset({"a"})},
    )
    rows = by(entries)
    assert rows["a"].votes == 2  # flat + r; the author's vote for its own answer is gone
    assert rows["a"].mean_score == pytest.approx(0.5)  # (0 + 1) / 2


def test_normalized_tie_flag_on_overlapping_intervals() -> None:
    scores = {
        "r1": {"a": 9, "b": 8, "c": 1},
        "r2": {"a": 7, "b": 8, "c": 2},
        "r3": {"a": 8, "b": 7, "c": 1},
    }
    entries = normalized_scores(scores)
    assert [e.candidate for e in entries][:2] in (["a", "b"], ["b", "a"])
    assert entries[0].tied_with_next  # a and b overlap
    assert not entries[1].tied_with_next  # c is clearly last
    tiebreak = normalized_scores({"r": {"a": 5, "b": 5, "c": 1}}, tiebreak={"b": 2, "a": 1})
    assert [e.candidate for e in tiebreak][:2] == ["b", "a"]


# --- agreement and calibration refuse nonsense ------------------------------------------

TEXT: Any = "0.9"  # a string where a number belongs
REFUSED: list[tuple[str, Callable[[], object], str]] = [
    ("zscore 2-D", lambda: zscore([[1, 2], [3, 5]]), r"row must be one judge's scores \(1-D\)"),
    ("zscore text", lambda: zscore(["a", 1]), r"row must hold numbers .* not text"),
    ("minmax booleans", lambda: minmax([True, False]), r"row must hold numbers .* not booleans"),
    ("minmax inf", lambda: minmax([1, math.inf]), r"row: scores must be finite"),
    ("calibrate text", lambda: calibrate([["a", 1]], "zscore"), r"scores must hold numbers"),
    ("calibrate 1-D", lambda: calibrate([1, 2], "zscore"), r"judges x arguments \(2-D\)"),
    ("calibrate method", lambda: calibrate(TEXT, TEXT), r"method must be 'minmax' or 'zscore'"),
    ("arguments 2.5", lambda: choose_calibration(TEXT), r"arguments_per_side must be a whole"),
    ("counts 2.5", lambda: fleiss_kappa([[2.5, 0.5], [1.5, 1.5]]), r"counts must be whole"),
    ("counts text", lambda: fleiss_kappa([["a", 1]]), r"counts must hold whole .* not text"),
    ("counts bool", lambda: fleiss_kappa([[True, True]]), r"not booleans"),
    ("se form", lambda: fleiss_kappa_se([[1, 1]], form=TEXT), r"form must be"),
    ("kappa method", lambda: fleiss_kappa([[1, 1]], method=TEXT), r"method must be 'fleiss'"),
    ("labels inf", lambda: fleiss_kappa_from_labels([[1, math.inf]]), r"labels has an infinite"),
    ("ci text", lambda: bootstrap_alpha([[1, 2], [1, 2]], ci=TEXT), r"ci must be between 0 and 1"),
    ("n_boot 2.5", lambda: bootstrap_alpha([[1, 2]], n_boot=2.5), r"n_boot must be a whole"),  # type: ignore[arg-type]
    ("n_boot bool", lambda: bootstrap_alpha([[1, 2]], n_boot=True), r"n_boot must be a whole"),
    (
        "domain repeated",
        lambda: krippendorff_alpha([[1, 2]], "ordinal", value_domain=[1, 1, 2]),
        r"value_domain lists 1 twice",
    ),
    (
        "domain a string",
        lambda: krippendorff_alpha([["a", "b"]], "ordinal", value_domain=TEXT),
        r"value_domain must be a list",
    ),
]


@pytest.mark.parametrize(("case", "call", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_agreement_and_calibration_refuse_nonsense(
    case: str, call: Callable[[], object], message: str
) -> None:
    """Before: a 2-D row was z-scored pooled, 2.5 ratings gave kappa -0.31, booleans were
    scores, n_boot=2.5 and a text ci raised TypeError, a repeated domain value went
    unnoticed."""
    with pytest.raises(ValueError, match=message):
        call()


def test_missing_stays_nan_where_documented() -> None:
    assert math.isnan(zscore([1.0, math.nan, 3.0])[1])
    assert math.isnan(calibrate([[1.0, math.nan]], "minmax")[0, 1])
    assert krippendorff_alpha([[1, None, 3], [1, 2, 3]]) == pytest.approx(1.0)
