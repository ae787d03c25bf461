from __future__ import annotations

import pytest
from pydantic import ValidationError

from debate import DebateResult, RunConfig, Transcript, run_debate_sync
from debate.models.test import TestModel
from tests.support.helpers import transcript


def test_transcript_round_trip_is_exact() -> None:
    t = transcript()
    assert Transcript.model_validate_json(t.model_dump_json()) == t


def test_result_round_trip_is_exact() -> None:
    result = run_debate_sync("Should we adopt the plan?", model=TestModel(seed=2), seed=2)
    again = DebateResult.model_validate_json(result.model_dump_json())
    assert again == result
    assert again.model_dump_json() == result.model_dump_json()


def test_models_are_frozen_and_forbid_extra_keys() -> None:
    t = transcript()
    with pytest.raises(ValidationError):
        t.topic = "other"  # type: ignore[misc]
    data = t.model_dump()
    data["speaker"] = "me"
    with pytest.raises(ValidationError, match="Extra inputs"):
        Transcript.model_validate(data)


@pytest.mark.parametrize("bad_id", ["PRO1", "pro-1", "MAYBE-1", "PRO-0"])
def test_argument_ids_have_a_fixed_shape(bad_id: str) -> None:
    data = transcript().model_dump()
    data["arguments"][0]["id"] = bad_id
    with pytest.raises(ValidationError, match="must look like PRO-1"):
        Transcript.model_validate(data)


def test_cross_examination_must_target_an_existing_argument() -> None:
    data = transcript().model_dump()
    data["cross_examinations"][0]["target"] = "PRO-9"
    with pytest.raises(ValidationError, match="not an argument id"):
        Transcript.model_validate(data)


def test_result_has_the_documented_keys() -> None:
    result = run_debate_sync("Should we adopt the plan?", model=TestModel(), seed=5)
    dumped = result.model_dump()
    assert {
        "topic",
        "transcript",
        "evaluations",
        "agreement",
        "vote",
        "decision",
        "usage",
        "config",
        "seed",
        "version",
    } <= set(dumped)
    assert {"judge", "role", "model", "status", "reason", "scores"} <= set(dumped["evaluations"][0])
    assert {"alpha", "alpha_raw", "alpha_by_dimension", "kappa", "argument_variance"} <= set(
        dumped["agreement"]
    )
    assert {"pro", "con", "margin", "topic_type", "judge_weights"} <= set(dumped["vote"])
    assert {"outcome", "winner", "reasons", "thresholds", "recommendation"} <= set(
        dumped["decision"]
    )
    assert {"calls", "prompt_tokens", "completion_tokens", "retries"} <= set(dumped["usage"])
    assert dumped["seed"] == 5
    assert RunConfig.model_validate(dumped["config"]) == result.config
