"""What a reply may contain: scores are integers as written, and commentary never costs scores.

A judge's or a council reviewer's score is an integer in the reply or the reply is invalid
(``true`` is not 1, ``"7"`` is not 7): it is re-asked and, if it stays invalid, the judge is
unscored with its raw output. A note, key finding or reviewer's notes longer than its limit
is cut to the limit and marked cut; the scores beside it are kept. The limits still go to the
model in the JSON schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from debate import FunctionModel, RunConfig, judge_transcript_sync
from debate.council import run_council_sync
from debate.council._review import review_reply
from debate.exceptions import ModelOutputError
from debate.models import Message, json_schema_of
from debate.records import Candidate, CouncilSettings, DebateResult
from debate.runtime import judge_reply
from debate.runtime._parse import parse_reply
from tests.support.helpers import rubric, schema_ids, transcript

LONG = "x" * 1000
NOT_INTEGERS = pytest.mark.parametrize(
    "bad", [True, "7", 7.0, 11], ids=["boolean", "string", "float", "out-of-range"]
)


def _first_try(messages: list[Message]) -> bool:
    """A re-ask carries the model's own reply and the error after the request's two messages."""
    return len(messages) == 2


def judge(bad: Any, *, always: bool = False) -> FunctionModel:
    """Scores every argument 6, except ``logic = bad`` on the first argument (first try only,
    unless ``always``)."""

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        ids = schema_ids(schema)
        scores = {arg_id: rubric(6, "PARTIALLY_UPHELD") for arg_id in ids}
        if always or _first_try(messages):
            scores[ids[0]] = {**scores[ids[0]], "logic": bad}
        return json.dumps({"scores": scores, "key_finding": "k"})

    return FunctionModel(reply, name="judge")


def _judged(model: FunctionModel) -> DebateResult:
    return judge_transcript_sync(transcript(2, 2), config=RunConfig(model="m"), model=model, seed=3)


# -- item 5: scores are not coerced ------------------------------------------------------------


@NOT_INTEGERS
def test_a_score_that_is_not_an_integer_is_asked_again_never_recorded(bad: Any) -> None:
    model = judge(bad)
    result = _judged(model)
    judges = len(result.evaluations)
    assert all(e.status == "scored" and e.attempts == 2 for e in result.evaluations)
    recorded = {
        (e.judge, arg_id, dim): getattr(score, dim)
        for e in result.evaluations
        for arg_id, score in (e.scores or {}).items()
        for dim in ("logic", "evidence", "responsiveness", "honesty")
    }
    assert set(recorded.values()) == {6}, f"scores recorded: {set(recorded.values())}"
    assert all(type(v) is int for v in recorded.values())
    assert result.usage.retries == judges and result.usage.calls == 2 * judges
    reasks = [m for m, _ in model.requests if not _first_try(m)]
    assert len(reasks) == judges
    for messages in reasks:
        assert json.loads(messages[2].content)["scores"]  # shown its own reply
        assert "logic" in messages[3].content  # and told which field is wrong


@NOT_INTEGERS
def test_a_judge_that_never_writes_an_integer_is_unscored_with_its_raw_reply(bad: Any) -> None:
    result = _judged(judge(bad, always=True))
    for evaluation in result.evaluations:
        assert evaluation.status == "unscored" and evaluation.scores is None
        assert evaluation.reason == "schema_violation"
        assert evaluation.attempts == 3  # the first try and max_retries (2) re-asks
        assert evaluation.raw is not None
        sent = json.loads(evaluation.raw)["scores"]
        assert [s["logic"] for s in sent.values()].count(bad) == 1  # kept as the model wrote it
    assert result.agreement.judges_scored == 0
    assert result.decision.outcome == "insufficient"


# -- council reviewers, same rule --------------------------------------------------------------

CANDIDATES = [Candidate(id="A", text="alpha answer"), Candidate(id="B", text="beta answer")]


def _labels(schema: type[BaseModel]) -> list[str]:
    return list(json_schema_of(schema)["$defs"]["Evaluations"]["properties"])


def reviewer(
    change: Callable[[dict[str, Any]], dict[str, Any]], *, always: bool = False
) -> FunctionModel:
    """Scores every candidate 7 with short notes; ``change`` edits the first label's entry
    (first try only, unless ``always``)."""

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        labels = _labels(schema)
        gated = "unsafe" in json.dumps(json_schema_of(schema))
        entry: dict[str, Any] = {d: 7 for d in ("accuracy", "relevance", "completeness")}
        entry |= {"conciseness": 7, "clarity": 7, "notes": "fine"}
        if gated:
            entry["unsafe"] = False
        evaluations = {label: dict(entry) for label in labels}
        if always or _first_try(messages):
            evaluations[labels[0]] = change(evaluations[labels[0]])
        return json.dumps({"evaluations": evaluations, "ranking": labels})

    return FunctionModel(reply, name="reviewer")


def _council(model: FunctionModel, *, gate: bool = False) -> Any:
    config = RunConfig(model="m", council=CouncilSettings(safety_gate=gate))
    return run_council_sync(
        "Which answer?", CANDIDATES, reviewers={"r1": model}, config=config, seed=2
    )


@NOT_INTEGERS
def test_a_reviewer_score_that_is_not_an_integer_is_asked_again(bad: Any) -> None:
    result = _council(reviewer(lambda e: {**e, "accuracy": bad}))
    (review,) = result.reviews
    assert review.status == "scored" and review.scores is not None
    assert {s.accuracy for s in review.scores.values()} == {7}
    assert result.usage.retries == 1


def test_a_reviewer_that_never_writes_an_integer_is_unscored_with_its_raw_reply() -> None:
    result = _council(reviewer(lambda e: {**e, "accuracy": True}, always=True))
    (review,) = result.reviews
    assert review.status == "unscored" and review.reason == "schema_violation"
    assert review.raw is not None and '"accuracy": true' in review.raw


@pytest.mark.parametrize("flag", ["false", 0], ids=["string", "integer"])
def test_the_safety_flag_must_be_a_boolean_as_written(flag: Any) -> None:
    result = _council(reviewer(lambda e: {**e, "unsafe": flag}), gate=True)
    (review,) = result.reviews
    assert review.status == "scored" and result.usage.retries == 1


# -- item 12: commentary over its limit is cut, not fatal --------------------------------------


def test_a_note_of_1000_characters_keeps_the_judges_scores_and_is_marked_cut() -> None:
    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        ids = schema_ids(schema)
        scores = {arg_id: rubric(8) for arg_id in ids}
        scores["PRO-1"] = {**scores["PRO-1"], "note": LONG}
        return json.dumps({"scores": scores, "key_finding": "y" * 1000})

    model = FunctionModel(reply, name="verbose")
    result = _judged(model)
    assert result.usage.retries == 0  # never re-asked: a long note is not an invalid reply
    for evaluation in result.evaluations:
        assert evaluation.status == "scored" and evaluation.scores is not None
        assert {s.logic for s in evaluation.scores.values()} == {8}
        cut = evaluation.scores["PRO-1"]
        assert cut.note == "x" * 200 and cut.note_cut
        assert all(
            not s.note_cut and s.note == "n" for k, s in evaluation.scores.items() if k != "PRO-1"
        )
        assert evaluation.key_finding == "y" * 300 and evaluation.key_finding_cut
    again = DebateResult.model_validate_json(result.model_dump_json())
    assert again == result  # the marks survive result.json


def test_a_reviewer_note_of_1000_characters_keeps_its_scores_and_is_marked_cut() -> None:
    result = _council(reviewer(lambda e: {**e, "notes": LONG}))
    (review,) = result.reviews
    assert review.status == "scored" and review.scores is not None
    assert result.usage.retries == 0
    cut = [s for s in review.scores.values() if s.notes_cut]
    kept = [s for s in review.scores.values() if not s.notes_cut]
    assert len(cut) == 1 and cut[0].notes == "x" * 300
    assert len(kept) == 1 and kept[0].notes == "fine"


def test_the_limits_still_go_to_the_model_and_the_marks_do_not() -> None:
    judge_schema = json_schema_of(judge_reply(("PRO-1", "CON-1")))
    rubric_schema = judge_schema["$defs"]["RubricDraft"]
    assert rubric_schema["properties"]["note"] == {
        "maxLength": 200,
        "title": "Note",
        "type": "string",
    }
    assert judge_schema["properties"]["key_finding"]["maxLength"] == 300
    review_schema = json_schema_of(review_reply(("A", "B"), True))
    assert review_schema["$defs"]["_GatedScores"]["properties"]["notes"]["maxLength"] == 300
    for schema in (judge_schema, review_schema):
        assert "_cut" not in json.dumps(schema)
        logic = json.dumps(schema)
        assert '"logic"' in logic or '"accuracy"' in logic


def test_a_reply_may_not_mark_its_own_note_cut() -> None:
    schema = judge_reply(("PRO-1", "CON-1"))
    scores = {k: {**rubric(5), "note_cut": False} for k in ("PRO-1", "CON-1")}
    with pytest.raises(ModelOutputError) as caught:
        parse_reply(json.dumps({"scores": scores, "key_finding": "k"}), schema)
    assert caught.value.reason == "schema_violation" and "note_cut" in str(caught.value)


@pytest.mark.parametrize(
    "ids", [("CON-1", "PRO-2", "PRO-1", "CON-2"), ("b", "a", "c"), ("PRO-10", "PRO-9")]
)
def test_a_judge_reply_schema_in_any_order_is_pydantics_own(ids: tuple[str, ...]) -> None:
    model = judge_reply(ids)
    generated = BaseModel.model_json_schema.__func__(model)  # type: ignore[attr-defined]
    assert json.dumps(model.model_json_schema()) == json.dumps(generated)
    assert list(json_schema_of(model)["$defs"]["Scores"]["properties"]) == list(ids)
