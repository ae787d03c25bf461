from __future__ import annotations

import json
import math

import numpy as np
import pytest

from debate import FunctionModel, MultiJudgePanel, RunConfig, ScriptedModel
from debate.panel import score_matrices
from debate.stats import calibrate, krippendorff_alpha
from tests.support.helpers import planted_judges, role_of, schema_ids, transcript

T = transcript()
PRO_STRONG = {"PRO-1": 9, "PRO-2": 8, "PRO-3": 7, "CON-1": 4, "CON-2": 3, "CON-3": 2}


def panel(fn, **config) -> MultiJudgePanel:  # type: ignore[no-untyped-def]
    return MultiJudgePanel(models=FunctionModel(fn), config=RunConfig(model="function", **config))


def test_agreeing_panel_declares_winner() -> None:
    result = panel(planted_judges(lambda role, a: PRO_STRONG[a])).evaluate_sync(T, seed=1)
    assert result.decision.outcome == "winner"
    assert result.decision.winner == "PRO"
    assert result.agreement.alpha == pytest.approx(1.0)
    assert result.agreement.kappa == pytest.approx(1.0)
    assert result.vote.margin is not None and result.vote.margin > 0.5
    assert result.vote.margin_ci is not None
    assert result.vote.margin_ci[0] <= result.vote.margin <= result.vote.margin_ci[1]


def test_split_panel_is_irreconcilable_with_reasons() -> None:
    def plan(role: str, a: str) -> int:
        flipped = {k: 11 - v for k, v in PRO_STRONG.items()}
        return (PRO_STRONG if role in ("technical", "business") else flipped)[a]

    result = panel(planted_judges(plan)).evaluate_sync(T, seed=1)
    assert result.decision.outcome == "irreconcilable"
    assert result.decision.winner is None
    assert result.agreement.alpha is not None and result.agreement.alpha < 0.5
    assert result.decision.high_variance_arguments  # the split arguments are named
    assert any("disagree" in r or "split" in r for r in result.decision.reasons)


def test_balanced_sides_are_too_close() -> None:
    mirror = {"PRO-1": 9, "PRO-2": 5, "PRO-3": 2, "CON-1": 9, "CON-2": 5, "CON-3": 2}
    result = panel(planted_judges(lambda role, a: mirror[a])).evaluate_sync(T)
    assert result.decision.outcome == "too_close"
    assert result.decision.winner is None
    assert result.vote.margin == pytest.approx(0.0)


def test_unscored_judge_is_recorded_and_left_out_of_every_statistic() -> None:
    def plan(role: str, a: str) -> int | str:
        return (
            "RAW:I refuse to use JSON" if role == "risk" else PRO_STRONG[a] + (role == "business")
        )

    result = panel(planted_judges(plan)).evaluate_sync(T)
    by_role = {e.role: e for e in result.evaluations}
    risk = by_role["risk"]
    assert risk.status == "unscored" and risk.reason == "parse_failure"
    assert risk.raw == "I refuse to use JSON" and risk.scores is None
    assert risk.attempts == 3  # first try + 2 re-asks
    assert result.agreement.judges_scored == 3 and result.agreement.judges_unscored == 1
    assert any("risk" in r and "parse_failure" in r for r in result.decision.reasons)
    scored = [e for e in result.evaluations if e.status == "scored"]
    weights = {e.judge: RunConfig().judges[i].weights for i, e in enumerate(result.evaluations)}
    matrices = score_matrices(T, scored, weights)
    expected = krippendorff_alpha(calibrate(matrices.raw, "minmax"), "interval")
    assert result.agreement.alpha == pytest.approx(expected)


def test_fewer_than_two_scored_judges_is_insufficient() -> None:
    def plan(role: str, a: str) -> int | str:
        return PRO_STRONG[a] if role == "general" else "RAW:{}"

    result = panel(planted_judges(plan)).evaluate_sync(T)
    assert result.decision.outcome == "insufficient"
    assert result.decision.winner is None
    assert result.agreement.alpha is None and result.agreement.kappa is None
    assert {e.reason for e in result.evaluations if e.status == "unscored"} == {"schema_violation"}


def test_reply_keyed_by_wrong_ids_is_a_schema_violation() -> None:
    def reply(messages, schema):  # type: ignore[no-untyped-def]
        scores = {i.replace("CON", "OPP"): {"logic": 5} for i in schema_ids(schema)}
        return json.dumps({"scores": scores, "key_finding": "x"})

    result = panel(reply).evaluate_sync(T)
    assert {e.reason for e in result.evaluations} == {"schema_violation"}
    assert all(e.raw and "OPP-1" in e.raw for e in result.evaluations)
    assert result.decision.outcome == "insufficient"


def test_invalid_reply_is_reasked_with_the_error() -> None:
    good = planted_judges(lambda role, a: PRO_STRONG[a])
    seen: dict[str, int] = {}

    def reply(messages, schema):  # type: ignore[no-untyped-def]
        role = role_of(messages)
        seen[role] = seen.get(role, 0) + 1
        if seen[role] == 1:
            return "{truncated"
        assert "could not be used" in messages[-1].content and messages[-2].content == "{truncated"
        return good(messages[:2], schema)

    result = panel(reply).evaluate_sync(T)
    assert all(e.status == "scored" and e.attempts == 2 for e in result.evaluations)
    assert result.usage.retries == 4 and result.usage.calls == 8


def test_scores_are_matched_by_argument_id_not_position() -> None:
    def reply(messages, schema):  # type: ignore[no-untyped-def]
        ids = list(reversed(schema_ids(schema)))  # keys in reverse order
        scores = {
            i: {
                "logic": PRO_STRONG[i],
                "evidence": PRO_STRONG[i],
                "responsiveness": PRO_STRONG[i],
                "honesty": PRO_STRONG[i],
                "standing": "UPHELD",
                "note": "",
            }
            for i in ids
        }
        return json.dumps({"scores": scores, "key_finding": "x"})

    result = panel(reply).evaluate_sync(T)
    for e in result.evaluations:
        assert e.scores is not None
        assert {k: v.logic for k, v in e.scores.items()} == PRO_STRONG
    assert result.decision.winner == "PRO"


def test_side_means_not_sums() -> None:
    uneven = transcript(pro=1, con=3)
    plan = {"PRO-1": 8, "CON-1": 6, "CON-2": 7, "CON-3": 7}
    result = panel(planted_judges(lambda role, a: plan[a])).evaluate_sync(uneven)
    # per-side means: PRO 8 beats CON ~6.7; a sum over arguments would hand CON the win.
    assert result.vote.pro is not None and result.vote.con is not None
    assert result.vote.pro > result.vote.con
    assert result.decision.winner == "PRO"


def test_judge_weights_follow_topic_type() -> None:
    arch = transcript(topic="Should we split the monolith into microservices?")
    result = panel(planted_judges(lambda role, a: PRO_STRONG[a])).evaluate_sync(arch)
    assert result.vote.topic_type == "architecture"
    assert result.vote.judge_weights["technical"] == pytest.approx(0.7 * 0.35 + 0.3)
    assert result.vote.judge_weights["business"] == pytest.approx(0.7 * 0.20 + 0.3)


def test_every_statistic_undefined_is_null_not_one() -> None:
    result = panel(planted_judges(lambda role, a: 5)).evaluate_sync(T)
    assert result.agreement.alpha is None  # no variation at all: alpha is undefined
    assert result.agreement.kappa is None
    assert result.decision.outcome != "winner"
    dumped = json.loads(result.model_dump_json())
    assert dumped["agreement"]["alpha"] is None


def test_scripted_model_raises_when_exhausted() -> None:
    from debate.exceptions import DebateError

    model = ScriptedModel([])
    with pytest.raises(DebateError, match="ran out of replies"):
        MultiJudgePanel(models=model).evaluate_sync(T)


def test_zscore_calibration_for_long_debates() -> None:
    long = transcript(pro=5, con=5)
    rng = np.random.default_rng(0)
    base = {a.id: int(rng.integers(2, 10)) for a in long.arguments}
    result = panel(planted_judges(lambda role, a: base[a])).evaluate_sync(long)
    assert result.vote.calibration == "zscore"
    assert result.vote.margin is not None and math.isfinite(result.vote.margin)
