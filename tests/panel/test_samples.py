"""Repeated readings (``samples = k``): k calls per judge, recorded, combined and weighed."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from debate import FunctionModel, MultiJudgePanel, RunConfig
from debate.models import Message
from debate.panel._samples import reading_seed
from debate.records import JudgeSpec
from tests.support.helpers import graded, role_of, schema_ids, transcript

T = transcript()
PRO_STRONG = {"PRO-1": 9, "PRO-2": 8, "PRO-3": 7, "CON-1": 4, "CON-2": 3, "CON-3": 2}
FLIPPED = {k: 11 - v for k, v in PRO_STRONG.items()}


def judge(flips: set[str], unscored: dict[str, set[int]] | None = None):  # type: ignore[no-untyped-def]
    """Judges in ``flips`` score reading 2 the other way round; the rest agree every time.

    ``unscored``: per role, the readings (1-based) it answers with text that is not JSON.
    """
    asked: Counter[str] = Counter()

    def reply(messages: list[Message], schema: Any) -> str:
        role = role_of(messages)
        asked[role] += 1
        n = asked[role]  # readings are asked in order within a judge (gather starts them so)
        if unscored and n in unscored.get(role, set()):
            return "not json"
        plan = FLIPPED if role in flips and n == 2 else PRO_STRONG
        scores = {a: graded(plan[a]) for a in schema_ids(schema)}
        return json.dumps({"scores": scores, "key_finding": f"{role} reading {n}"})

    return reply


def panel(fn: Any, **config: Any) -> tuple[MultiJudgePanel, FunctionModel]:
    model = FunctionModel(fn)
    return MultiJudgePanel(models=model, config=RunConfig(model="function", **config)), model


def test_three_samples_ask_each_judge_three_times_in_distinct_orders_and_seeds() -> None:
    p, model = panel(judge(set()), samples=3)
    result = p.evaluate_sync(T, seed=7)
    assert len(model.requests) == 4 * 3
    for e in result.evaluations:
        assert e.readings is not None and [r.index for r in e.readings] == [1, 2, 3]
        seeds = [r.seed for r in e.readings]
        assert seeds[0] == 7 and len(set(seeds)) == 3
        assert seeds == [reading_seed(7, e.judge, i) for i in range(3)]
        orders = [tuple(sorted(r.positions, key=r.positions.__getitem__)) for r in e.readings]
        assert len(set(orders)) == 3
        assert all(r.status == "scored" for r in e.readings) and e.consistency == 1.0
        assert e.scores == e.readings[0].scores and e.positions == e.readings[0].positions
    assert sorted({s.seed for s in model.request_settings}) == sorted(
        {r.seed for e in result.evaluations for r in e.readings or []}
    )
    actors = [c.actor for c in result.usage.per_call if c.phase == "judge"]
    assert len(actors) == 12 and "technical (reading 3)" in actors
    assert result.decision.outcome == "winner" and result.decision.winner == "PRO"


def test_a_replay_with_the_same_seed_asks_the_same_questions() -> None:
    first, a = panel(judge(set()), samples=2)
    second, b = panel(judge(set()), samples=2)
    first.evaluate_sync(T, seed=3)
    second.evaluate_sync(T, seed=3)
    assert sorted(m[1].content for m, _ in a.requests) == sorted(
        m[1].content for m, _ in b.requests
    )


def test_combined_scores_are_the_mean_of_the_readings() -> None:
    from debate.panel import score_matrices

    p, _ = panel(judge({"technical"}), samples=2)
    result = p.evaluate_sync(T, seed=1)
    weights = {j.name: j.weights for j in RunConfig().judges}
    scored = [e for e in result.evaluations if e.status == "scored"]
    matrices = score_matrices(T, scored, weights)
    row = matrices.judges.index("technical")
    for a, arg in enumerate(matrices.ids):
        assert matrices.raw[row, a] == pytest.approx((PRO_STRONG[arg] + FLIPPED[arg]) / 2)
    assert matrices.spread is not None


def test_score_matrices_fill_each_judges_row_as_the_cell_by_cell_means() -> None:
    # Rows are filled at once: every cell must be the mean of the readings, bit for bit.
    import numpy as np

    from debate.panel import score_matrices
    from debate.panel._samples import scored_readings
    from debate.records import DIMENSIONS

    p, _ = panel(judge({"technical"}), samples=3, swap=True)
    scored = [e for e in p.evaluate_sync(T, seed=2).evaluations if e.status == "scored"]
    weights = {j.name: j.weights for j in RunConfig().judges}
    found = score_matrices(T, scored, weights)
    for j, e in enumerate(scored):
        readings = scored_readings(e)
        for a, arg in enumerate(found.ids):
            cells = [r[arg] for r in readings]
            raw = np.round(np.mean([c.weighted(weights[e.judge]) for c in cells]), 6)
            assert found.raw[j, a] == raw
            for d in DIMENSIONS:
                assert found.dimensions[d][j, a] == np.mean([c.dimension(d) for c in cells])


def test_a_judge_whose_readings_flip_is_less_consistent_weighs_less_and_widens_the_interval() -> (
    None
):
    steady, _ = panel(judge(set()), samples=2)
    shaky, _ = panel(judge({"technical"}), samples=2)
    a = steady.evaluate_sync(T, seed=5)
    b = shaky.evaluate_sync(T, seed=5)
    tech_a = next(e for e in a.evaluations if e.judge == "technical")
    tech_b = next(e for e in b.evaluations if e.judge == "technical")
    assert tech_a.consistency == 1.0 and tech_b.consistency is not None
    assert tech_b.consistency < tech_a.consistency
    assert b.vote.judge_weights["technical"] < a.vote.judge_weights["technical"]
    assert b.vote.judge_weights["risk"] == a.vote.judge_weights["risk"]
    assert a.vote.margin_points_ci is not None and b.vote.margin_points_ci is not None
    width_a = a.vote.margin_points_ci[1] - a.vote.margin_points_ci[0]
    width_b = b.vote.margin_points_ci[1] - b.vote.margin_points_ci[0]
    assert width_b > width_a
    assert a.decision.p_agree is not None and b.decision.p_agree is not None
    assert b.decision.p_agree < a.decision.p_agree
    assert b.decision.judge_evidence is not None
    assert b.decision.judge_evidence["technical"] == pytest.approx(0.0)  # +1 and -1 cancel


def test_an_unscored_reading_is_recorded_and_left_out() -> None:
    p, _ = panel(judge(set(), unscored={"risk": {1}, "business": {1, 2}}), samples=2, max_retries=0)
    result = p.evaluate_sync(T, seed=2)
    by = {e.judge: e for e in result.evaluations}
    risk = by["risk"]
    assert risk.status == "scored" and risk.readings is not None
    assert [r.status for r in risk.readings] == ["unscored", "scored"]
    assert risk.readings[0].raw == "not json" and risk.readings[0].reason is not None
    assert risk.scores == risk.readings[1].scores and risk.consistency is None
    business = by["business"]
    assert business.status == "unscored" and business.scores is None
    assert business.detail is not None and "all 2 readings unscored" in business.detail
    assert result.agreement.judges_scored == 3 and result.agreement.judges_unscored == 1


def test_one_sample_is_the_panel_without_samples() -> None:
    plain, a = panel(judge({"technical"}))
    once, b = panel(judge({"technical"}), samples=1)
    x = plain.evaluate_sync(T, seed=4)
    y = once.evaluate_sync(T, seed=4)
    assert x.model_dump_json() == y.model_dump_json()
    assert len(a.requests) == len(b.requests) == 4
    assert all(e.readings is None and e.consistency is None for e in y.evaluations)


def test_a_judge_can_read_more_often_than_the_panel() -> None:
    judges = [
        j.model_copy(update={"samples": 3} if j.role == "risk" else {}) for j in RunConfig().judges
    ]
    p, model = panel(judge(set()), judges=[j.model_dump() for j in judges])
    result = p.evaluate_sync(T, seed=1)
    assert len(model.requests) == 3 + 3
    assert {e.judge: len(e.readings or [None]) for e in result.evaluations}["risk"] == 3


@pytest.mark.parametrize("bad", [0, 17, 2.5])
def test_samples_out_of_range_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="samples"):
        RunConfig(samples=bad)
    with pytest.raises(ValueError, match="samples"):
        JudgeSpec(name="x", role="technical", weights=RunConfig().judges[0].weights, samples=bad)
