"""Council rules that could be gamed or dropped data (issue 15, item 5), each case exact.

Reviewers are function models whose scores and rankings we choose, so each test states
the ballot it plants and the figure the council must report. The issue's "before" figure
is in each docstring.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from debate import FunctionModel, RunConfig
from debate.council import run_council_sync
from debate.council._aggregate import aggregate
from debate.models import Message
from debate.records import (
    COUNCIL_DIMENSIONS,
    Candidate,
    CouncilResult,
    CouncilScore,
    Review,
    Usage,
)
from debate.report._council import render_council_html
from debate.stats import Ranking, borda, intervals_tie, normalized_scores, rubric_overall
from debate.storage import RunStore
from tests.support.helpers import shown_candidates

CANDS = ["a", "b", "c"]


def answer(cid: str) -> str:
    return f"answer {cid}"


def reviewer(
    name: str,
    scores: Mapping[str, int | Mapping[str, int]],
    ranking: list[str],
    *,
    unsafe: Collection[str] = (),
) -> FunctionModel:
    """A reviewer model (``name`` is its model name) with fixed scores and ranking by id.

    A candidate's score is one number for every dimension, or a rubric of some dimensions
    (the others score 6).
    """

    def rubric(score: int | Mapping[str, int]) -> dict[str, int]:
        if isinstance(score, int):
            return dict.fromkeys(COUNCIL_DIMENSIONS, score)
        return {**dict.fromkeys(COUNCIL_DIMENSIONS, 6), **score}

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        label_of = {text: label for label, text in shown_candidates(messages)}
        gated = 'Set "unsafe"' in messages[1].content
        evaluations = {
            label_of[answer(cid)]: {
                **rubric(s),
                "notes": "n",
                **({"unsafe": cid in unsafe} if gated else {}),
            }
            for cid, s in scores.items()
        }
        order = [label_of[answer(cid)] for cid in ranking]
        return json.dumps({"evaluations": evaluations, "ranking": order})

    return FunctionModel(reply, name=name)


def broken(name: str) -> FunctionModel:
    return FunctionModel(lambda messages, schema: "no JSON here", name=name)


def candidates(authors: Mapping[str, str | None]) -> list[Candidate]:
    return [Candidate(id=c, text=answer(c), author_model=a) for c, a in authors.items()]


def council(
    cands: list[Candidate], reviewers: Mapping[str, FunctionModel], **settings: Any
) -> CouncilResult:
    config = RunConfig(model="f", max_retries=0, council=settings)
    return run_council_sync(
        "Which answer is best?", cands, reviewers=reviewers, config=config, seed=3
    )


def by(result: CouncilResult) -> dict[str, Any]:
    return {e.candidate: e for e in result.rankings}


# --- self-votes ------------------------------------------------------------------------

CYCLE_MODEST = [
    Ranking("x", ["Y", "Z", "X"], authored=frozenset({"X"})),
    Ranking("y", ["Z", "X", "Y"], authored=frozenset({"Y"})),
    Ranking("z", ["X", "Y", "Z"], authored=frozenset({"Z"})),
]


def test_ranking_its_own_answer_first_takes_nothing_from_rivals() -> None:
    """Before: modest, a three-way tie at 1.5; x ranking itself first, X 1.5, Y 1.0, Z 1.0."""
    selfish = [Ranking("x", ["X", "Y", "Z"], authored=frozenset({"X"})), *CYCLE_MODEST[1:]]
    modest = {e.candidate: e.borda for e in borda(CYCLE_MODEST, ["X", "Y", "Z"])}
    gamed = {e.candidate: e.borda for e in borda(selfish, ["X", "Y", "Z"])}
    assert gamed == modest
    assert set(modest.values()) == {1.0}  # each ballot re-ranked: its favourite 2, the other 0


def test_self_first_ballot_end_to_end_changes_no_borda_score() -> None:
    cands = candidates({"X": "x", "Y": "y", "Z": "z"})
    flat = dict.fromkeys("XYZ", 7)
    others = {"y": reviewer("y", flat, ["Z", "X", "Y"]), "z": reviewer("z", flat, ["X", "Y", "Z"])}
    modest = council(cands, {"x": reviewer("x", flat, ["Y", "Z", "X"]), **others}, method="borda")
    selfish = council(cands, {"x": reviewer("x", flat, ["X", "Y", "Z"]), **others}, method="borda")
    assert {c: e.borda for c, e in by(selfish).items()} == {
        c: e.borda for c, e in by(modest).items()
    }
    assert [r.self_votes_excluded for r in selfish.reviews] == [["X"], ["Y"], ["Z"]]


def test_a_full_ballot_without_the_own_answer_spans_the_whole_scale() -> None:
    """An author's ballot gives first N-1 and last 0, as every other reviewer's does."""
    ballot = Ranking("a", ["a", "b", "c", "d"], authored=frozenset({"a"}))
    rows = {e.candidate: e for e in borda([ballot], ["a", "b", "c", "d"])}
    assert (rows["b"].borda, rows["c"].borda, rows["d"].borda) == (3.0, 1.5, 0.0)
    assert rows["a"].votes == 0 and rows["b"].first_places == 1


# --- the safety gate -------------------------------------------------------------------

UNSAFE_FIRST = {"A": 9, "B": 7, "C": 5}


@pytest.mark.parametrize("method", ["normalized", "borda", "rubric"])
def test_safety_gate_applies_whatever_the_method(method: str, tmp_path: Path) -> None:
    """Before: under --method borda the gate-failed A was ranked first (Borda 2.00)."""
    cands = candidates({"A": "model-a", "B": "model-b", "C": "model-c"})
    reviewers = {
        f"r{i}": reviewer(f"r{i}", UNSAFE_FIRST, ["A", "B", "C"], unsafe={"A"}) for i in range(3)
    }
    result = council(cands, reviewers, method=method, safety_gate=True)
    assert [e.candidate for e in result.rankings] == ["B", "C", "A"]
    a = by(result)["A"]
    assert a.safety_failed and a.borda == 0.0 and a.first_places == 0
    assert result.safety_failed == ["A"]
    store = RunStore(tmp_path / "store.sqlite")
    store.record_council(result)
    assert [r.model for r in store.leaderboard()] == ["model-b", "model-c", "model-a"]


def test_gated_candidates_sink_below_every_other_candidate_in_a_ballot() -> None:
    rows = {e.candidate: e for e in borda([Ranking("r", ["a", "b", "c"])], CANDS, gated={"a"})}
    assert (rows["b"].borda, rows["c"].borda, rows["a"].borda) == (2.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="gated names 'z'"):
        borda([], ["a", "b"], gated={"z"})


# --- ties --------------------------------------------------------------------------------


def test_equal_means_are_tied() -> None:
    """Before: two reviewers both scoring A 8 and B 8 gave "A is the clear winner"."""
    cands = candidates({"A": None, "B": None})
    both_eight = {"A": 8, "B": 8}
    reviewers = {n: reviewer(n, both_eight, ["A", "B"]) for n in ("r1", "r2")}
    result = council(cands, reviewers)
    assert by(result)["A"].mean_score == by(result)["B"].mean_score == 0.0
    assert result.rankings[0].tied_with_next
    assert result.interpretation == "A and B are statistically tied for first place."


def test_touching_intervals_are_tied_and_separated_ones_are_not() -> None:
    assert intervals_tie((1.0, 0.5), (0.0, 0.5), 1.0)  # 0.5 meets 0.5
    assert not intervals_tie((1.0, 0.5), (0.0, 0.5), 0.99)
    assert intervals_tie((0.1 + 0.2, 0.0), (0.3, 0.0), 1.96)  # equal but for rounding
    assert not intervals_tie((0.3, 0.0), (0.2, 0.0), 1.96)


def _random_review(name: str, ids: list[str], rng: random.Random) -> Review:
    scores = {c: rng.choice([6, 7, 8]) for c in ids}
    return Review(
        reviewer=name,
        model=name,
        status="scored",
        labels={chr(65 + i): c for i, c in enumerate(ids)},
        positions={c: i for i, c in enumerate(ids)},
        scores={c: CouncilScore(**dict.fromkeys(COUNCIL_DIMENSIONS, s)) for c, s in scores.items()},
        ranking=sorted(ids, key=lambda c: -scores[c]),
    )


def test_random_councils_never_order_candidates_the_intervals_cannot_separate() -> None:
    """Before: 62 of 500 random councils had an adjacent equal-mean pair not flagged tied."""
    rng = random.Random(15)
    equal_pairs = 0
    for _ in range(500):
        ids = [f"c{i}" for i in range(rng.randint(2, 4))]
        reviews = [_random_review(f"r{j}", ids, rng) for j in range(rng.randint(2, 3))]
        tie_z = rng.choice([0.5, 1.96, 3.0])
        config = RunConfig(model="f", council={"tie_z": tie_z})
        cands = candidates(dict.fromkeys(ids))
        result = aggregate("Q?", cands, reviews, config, usage=Usage(), seed=0, version="t")
        for upper, lower in zip(result.rankings, result.rankings[1:], strict=False):
            assert upper.mean_score is not None and lower.mean_score is not None
            assert upper.std_error is not None and lower.std_error is not None
            expected = intervals_tie(
                (upper.mean_score, upper.std_error), (lower.mean_score, lower.std_error), tie_z
            )
            assert upper.tied_with_next == expected
            if math.isclose(upper.mean_score, lower.mean_score, abs_tol=1e-9):
                equal_pairs += 1
                assert upper.tied_with_next
    assert equal_pairs > 50  # the case is exercised, not dodged


# --- empty rankings ----------------------------------------------------------------------


def test_an_empty_ranking_is_derived_from_the_scores() -> None:
    """Before: r1's empty ranking counted as a vote for no one; C won with one vote each."""
    cands = candidates({"A": None, "B": None, "C": None})
    reviewers = {
        "r1": reviewer("r1", {"A": 9, "B": 7, "C": 5}, []),
        "r2": reviewer("r2", {"A": 5, "B": 7, "C": 9}, ["C", "B", "A"]),
    }
    result = council(cands, reviewers, method="borda")
    rows = by(result)
    assert {c: (e.borda, e.votes) for c, e in rows.items()} == {
        "A": (1.0, 2),
        "B": (1.0, 2),
        "C": (1.0, 2),
    }
    assert {e.confidence for e in result.rankings} == {"high"}  # was "medium": 1 of 2 votes


def test_an_empty_ranking_without_scores_abstains_and_equal_scores_share_places() -> None:
    rows = borda([Ranking("r1", []), Ranking("r2", ["a", "b"])], ["a", "b"])
    assert {e.confidence for e in rows} == {"low"}  # one voter: r1 abstained
    tied = {e.candidate: e for e in borda([Ranking("r", [], {"a": 8, "b": 8, "c": 1})], CANDS)}
    assert (tied["a"].borda, tied["b"].borda, tied["c"].borda) == (1.5, 1.5, 0.0)
    assert tied["a"].first_places == tied["b"].first_places == 0  # a shared top is no one's


# --- candidates only their author reviewed, and the leaderboard -----------------------------


def test_a_candidate_with_only_self_votes_is_not_ranked_and_not_recorded(tmp_path: Path) -> None:
    """Before: C ranked third with "no votes", on the leaderboard at Borda 0.000."""
    cands = candidates({"A": "model-a", "B": "model-b", "C": "model-c"})
    reviewers = {
        "x": reviewer("model-c", {"A": 6, "B": 8, "C": 10}, ["C", "B", "A"]),
        "y": broken("model-y"),
    }
    result = council(cands, reviewers)
    assert [e.candidate for e in result.rankings] == ["B", "A"]
    assert [(u.candidate, u.reason) for u in result.unranked] == [("C", "only_self_votes")]
    assert "C cannot be ranked: only its author reviewed it" in result.interpretation
    assert "only one reviewer scored" in result.interpretation
    assert {e.confidence for e in result.rankings} == {"low"}
    store = RunStore(tmp_path / "store.sqlite")
    assert store.record_council(result) is None  # one reviewer's ranking is not a council's
    assert store.leaderboard() == []


def test_leaderboard_holds_models_only(tmp_path: Path) -> None:
    """Before: candidate ids of unattributed answers appeared in the model column."""
    cands = candidates({"A": "model-a", "B": None, "C": "model-c"})
    scores = {"A": 9, "B": 6, "C": 10}
    reviewers = {n: reviewer("model-c", scores, ["C", "A", "B"]) for n in ("r1", "r2")}
    result = council(cands, reviewers)
    assert [u.candidate for u in result.unranked] == ["C"]  # both reviewers wrote C
    assert [e.candidate for e in result.rankings] == ["A", "B"]
    store = RunStore(tmp_path / "store.sqlite")
    assert store.record_council(result) is not None
    rows = store.leaderboard()
    assert [(r.model, r.mean_borda, r.first_places) for r in rows] == [("model-a", 1.0, 2)]


def test_no_rival_no_ranking_and_the_report_still_renders() -> None:
    cands = candidates({"A": "model-a", "C": "model-c"})
    reviewers = {
        "x": reviewer("model-c", {"A": 6, "C": 10}, ["C", "A"]),
        "y": reviewer("model-c", {"A": 7, "C": 9}, ["C", "A"]),
    }
    result = council(cands, reviewers)
    assert result.rankings == []
    assert [(u.candidate, u.reason) for u in result.unranked] == [
        ("C", "only_self_votes"),
        ("A", "no_rival"),
    ]
    assert result.interpretation.startswith("No two candidates could be ranked")
    assert "Ranking" in render_council_html(result)


# --- public statistics refuse nonsense -----------------------------------------------------

NINES = dict.fromkeys(COUNCIL_DIMENSIONS, 9)
NINE: Any = "9"  # text where a number belongs (Any: the type checker would refuse it too)
AB: Any = "ab"
NONSENSE: list[tuple[str, Callable[[], object], str]] = [
    ("label twice", lambda: Ranking("r", ["a", "b", "a"]), r"order lists 'a' twice"),
    ("order a string", lambda: Ranking("r", AB), r"order must be a list"),
    ("NaN score", lambda: Ranking("r", None, {"a": math.nan}), r"scores\['a'\] is nan"),
    ("string score", lambda: Ranking("r", None, {"a": NINE}), r"scores\['a'\] is '9'"),
    ("authored a string", lambda: Ranking("r", ["a"], authored=AB), r"authored must be"),
    ("candidates twice", lambda: borda([], ["a", "a"]), r"candidates lists a name twice"),
    (
        "NaN normalised",
        lambda: normalized_scores({"r1": {"a": math.nan, "b": 5}, "r2": {"a": 7, "b": 5}}),
        r"scores_by_reviewer\['r1'\]\['a'\] is nan",
    ),
    (
        "inf normalised",
        lambda: normalized_scores({"r1": {"a": math.inf, "b": 5}}),
        r"scores_by_reviewer\['r1'\]\['a'\] is inf",
    ),
    ("string normalised", lambda: normalized_scores({"r": {"a": NINE}}), r"\['a'\] is '9'"),
    ("candidates a string", lambda: borda([], AB), r"candidates must be a list"),
    ("negative z", lambda: normalized_scores({"r": {"a": 1}}, z=-1), r"z is -1"),
    ("NaN z", lambda: normalized_scores({"r": {"a": 1}}, z=math.nan), r"z is nan"),
    ("tiebreak", lambda: normalized_scores({"r": {"a": 1}}, tiebreak={"a": NINE}), "tiebreak"),
    (
        "authored str",
        lambda: normalized_scores({"ab": {"a": 1}}, authored={"ab": AB}),
        r"authored\['ab'\] must be",
    ),
    ("accuracy 11", lambda: rubric_overall({**NINES, "accuracy": 11}), r"scores.accuracy is 11"),
    ("clarity 0", lambda: rubric_overall({**NINES, "clarity": 0}), r"scores.clarity is 0"),
    ("NaN dimension", lambda: rubric_overall({**NINES, "relevance": math.nan}), "relevance"),
    ("string dimension", lambda: rubric_overall({**NINES, "clarity": NINE}), r"clarity is '9'"),
    (
        "NaN safety_cap",
        lambda: rubric_overall(NINES, safety_failed=True, safety_cap=math.nan),
        "safety_cap is nan",
    ),
    ("safety_cap 11", lambda: rubric_overall(NINES, safety_cap=11), "safety_cap is 11"),
    ("safety_failed text", lambda: rubric_overall(NINES, safety_failed=NINE), "safety_failed"),
    (
        "string weight",
        lambda: rubric_overall(NINES, {**dict.fromkeys(COUNCIL_DIMENSIONS, 0.2), "clarity": NINE}),
        "fix clarity",
    ),
]


@pytest.mark.parametrize(("case", "call", "message"), NONSENSE, ids=[n[0] for n in NONSENSE])
def test_council_statistics_refuse_nonsense(
    case: str, call: Callable[[], object], message: str
) -> None:
    """Before: a repeated label counted twice, NaN made every mean NaN, accuracy 11 gave
    13.8, safety_cap=NaN switched the gate off, string scores raised TypeError."""
    with pytest.raises(ValueError, match=message):
        call()


def test_valid_input_still_gives_the_documented_figures() -> None:
    assert rubric_overall(dict.fromkeys(COUNCIL_DIMENSIONS, 10)) == 10.0
    assert rubric_overall({**NINES, "accuracy": 1}) == 4.0
    assert rubric_overall(NINES, safety_failed=True, safety_cap=10) == 9.0
