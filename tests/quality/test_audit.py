"""The bias audit separates position from side and argument, and audits council runs.

Judges are function models whose scores we choose: true quality per argument plus noise,
plus a planted side preference or a planted bonus for whatever they read first. Runs go
through the real panel (counterbalanced orders) and the real run store.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from debate import FunctionModel, MultiJudgePanel, RunConfig, judge_transcript_sync
from debate._cli.main import main
from debate.council import run_council_sync
from debate.models import Message
from debate.quality._audit import Audit, Estimate, JudgeAudit, audit
from debate.quality._effects import fit, identified
from debate.records import Candidate
from debate.storage import RunStore
from tests.support.helpers import (
    as_result,
    graded,
    planted_judges,
    review_reply,
    role_of,
    schema_ids,
    shown_candidates,
    transcript,
)

RUNS = 16
ROLES = ("technical", "business", "risk", "general")


def quality_of(seed: int) -> dict[str, float]:
    """Each argument's true quality in one debate (both sides alike on average)."""
    rng = random.Random(f"quality:{seed}")
    return {f"{side}-{i}": rng.uniform(4.0, 7.0) for side in ("PRO", "CON") for i in (1, 2, 3)}


def judges(
    seed: int,
    *,
    favour: dict[str, float] | None = None,
    first: dict[str, float] | None = None,
    models: bool = False,
) -> FunctionModel | dict[str, FunctionModel]:
    """Judges scoring quality + noise; ``favour[role]`` points go to every PRO argument,
    ``first[role]`` points to whatever argument that judge reads first. ``models``: each
    judge its own model, named ``m-<role>``."""
    quality = quality_of(seed)

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        role = role_of(messages)
        scores = {}
        for position, arg_id in enumerate(schema_ids(schema)):
            rng = random.Random(f"{seed}:{role}:{arg_id}:{position}")
            value = quality[arg_id] + rng.gauss(0, 0.5)
            value += (favour or {}).get(role, 0.0) if arg_id.startswith("PRO") else 0.0
            value += (first or {}).get(role, 0.0) if position == 0 else 0.0
            scores[arg_id] = graded(int(min(10, max(1, round(value)))), note="")
        return json.dumps({"scores": scores, "key_finding": "k"})

    if models:
        return {role: FunctionModel(reply, name=f"m-{role}") for role in ROLES}
    return FunctionModel(reply, name="f")


def record_debates(
    store: RunStore,
    runs: int = RUNS,
    *,
    config: RunConfig | None = None,
    per_side: int = 3,
    authors: dict[str, str] | None = None,
    **planted: dict[str, float],
) -> None:
    """Judge ``runs`` debates with planted judges and record each in the store;
    ``authors`` (side -> model) gives each judge its own model."""
    config = config or RunConfig(model="f")
    for seed in range(runs):
        models = judges(seed, models=authors is not None, **planted)
        panel = MultiJudgePanel(models=models, config=config)
        debate = transcript(per_side, per_side)
        judged = panel.evaluate_sync(debate, seed=seed)
        store.record(as_result(judged, debate, config), authors=authors)


def by_role(result: Audit) -> dict[str, JudgeAudit]:
    return {j.role: j for j in result.judges}


def covers_zero(est: Estimate) -> bool:
    assert est.value is not None and est.low is not None and est.high is not None, est
    return est.low <= 0 <= est.high


def test_side_favouring_judge_shows_no_position_bias(tmp_path: Path) -> None:
    """The issue's confound: a judge that favours PRO, read in counterbalanced orders."""
    store = RunStore(tmp_path / "s.sqlite")
    record_debates(store, favour={"technical": 2.0})
    result = audit(store)
    assert len(result.judges) == 4 and result.pooled is not None
    for figures in (*result.judges, result.pooled):
        for est in (figures.primacy, figures.position_step, figures.first_side_advantage):
            assert covers_zero(est), (figures, est)
            assert abs(est.value or 0) < 0.5, est
    technical = by_role(result)["technical"]
    assert technical.primacy.n == RUNS * 6 and technical.primacy.runs == RUNS


def test_fixed_order_cannot_tell_position_from_argument(tmp_path: Path) -> None:
    """Every judge reads PRO-1 first: no number, a reason; the swap check restores one."""
    fixed = RunStore(tmp_path / "fixed.sqlite")
    record_debates(
        fixed, config=RunConfig(model="f", presentation="fixed"), favour={"technical": 2.0}
    )
    result = audit(fixed)
    assert result.pooled is not None
    for figures in (*result.judges, result.pooled):
        assert figures.primacy.value is None
        assert "not identifiable" in (figures.primacy.note or "")
    swapped = RunStore(tmp_path / "swap.sqlite")
    config = RunConfig(model="f", presentation="fixed", swap=True)
    record_debates(swapped, config=config, favour={"technical": 2.0})
    result = audit(swapped)
    assert result.pooled is not None
    for figures in (*result.judges, result.pooled):
        assert covers_zero(figures.primacy), figures.primacy
        assert abs(figures.primacy.value or 0) < 0.5


@pytest.mark.parametrize("k", [1.0, 2.0])
def test_planted_primacy_is_found_and_sized(tmp_path: Path, k: float) -> None:
    """One judge adds k points to whatever it reads first; the others are neutral."""
    store = RunStore(tmp_path / "s.sqlite")
    record_debates(store, first={"technical": k})
    result = audit(store)
    roles = by_role(result)
    planted = roles.pop("technical").primacy
    assert planted.low is not None and planted.low > 0, planted
    assert abs((planted.value or 0) - k) < 0.35 * k + 0.2, planted
    for judge in roles.values():
        assert covers_zero(judge.primacy), judge
    assert result.pooled is not None and result.pooled.primacy.value is not None
    assert abs(result.pooled.primacy.value - k / 4) < 0.2  # one judge in four


def test_planted_primacy_with_one_argument_per_side_and_swap(tmp_path: Path) -> None:
    """Two arguments, so first position = first side: the swap reading separates them."""
    store = RunStore(tmp_path / "s.sqlite")
    config = RunConfig(model="f", arguments=1, swap=True)
    record_debates(store, config=config, per_side=1, first={r: 2.0 for r in ROLES})
    result = audit(store)
    for judge in result.judges:
        est = judge.primacy
        assert est.low is not None and est.low > 0 and abs((est.value or 0) - 2) < 0.5, est


def test_self_preference_is_measured_against_the_panel_on_the_same_arguments(
    tmp_path: Path,
) -> None:
    """The technical judge's model wrote PRO's arguments and it gives them +1.5."""
    store = RunStore(tmp_path / "s.sqlite")
    authors = {"PRO": "m-technical", "CON": "m-business"}
    record_debates(store, authors=authors, favour={"technical": 1.5})
    roles = by_role(audit(store))
    own = roles["technical"].self_preference
    assert own.low is not None and own.low > 0 and abs((own.value or 0) - 1.5) < 0.4, own
    assert covers_zero(roles["business"].self_preference)
    assert roles["risk"].self_preference.note == "no variation"


def test_estimator_recovers_a_slope_under_fixed_effects_and_refuses_an_absorbed_one() -> None:
    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(50), 4)  # 50 items, each read 4 times
    quality = rng.normal(0, 3, 50)[items]  # large item effects, correlated with nothing
    x = rng.integers(0, 4, items.size).astype(float)
    y = quality - 0.5 * x + rng.normal(0, 0.3, items.size)
    runs = items // 5
    slope = fit(y, x[:, None], [items], runs)[0]
    assert slope.low is not None and slope.high is not None
    assert slope.low < -0.5 < slope.high and slope.high - slope.low < 0.2
    constant_within = (items % 3).astype(float)  # a property of the item: absorbed
    lost = fit(y, constant_within[:, None], [items], runs)[0]
    assert lost.value is None and "not identifiable" in (lost.note or "")
    pair = np.column_stack([x * (items < 25), x * (items >= 25), x])  # third = sum of two
    assert not identified(pair - pair.mean(axis=0), (pair**2).sum(axis=0)).all()


def reviewer(seed: int, name: str, first: float) -> FunctionModel:
    """A council reviewer: the candidate's quality plus noise, plus ``first`` points for
    the answer shown first (Response A)."""

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        scores = {}
        for position, (label, text) in enumerate(shown_candidates(messages)):
            rng = random.Random(f"{seed}:{name}:{text}")
            quality = float(text.split()[-1])
            s = int(min(10, max(1, round(quality + rng.gauss(0, 0.5) + first * (position == 0)))))
            scores[label] = s
        return review_reply(scores)

    return FunctionModel(reply, name=name)


def record_councils(
    store: RunStore, runs: int, first: dict[str, float], candidates: int = 6
) -> None:
    """Rank ``runs`` questions' candidates with the given reviewers and record each council."""
    for seed in range(runs):
        rng = random.Random(f"council:{seed}")
        answers = [
            Candidate(id=f"c{i}", text=f"answer {i} of quality {rng.uniform(4, 8):.2f}")
            for i in range(candidates)
        ]
        reviewers = {name: reviewer(seed, name, k) for name, k in first.items()}
        result = run_council_sync("Which answer?", answers, reviewers=reviewers, seed=seed)
        store.record_council(result)


def test_council_position_bias_against_adr_017_bound(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    record_councils(store, 60, {"primed": 2.0, "fair": 0.0, "plain": 0.0}, candidates=8)
    council = audit(store).council
    assert council.runs == 60 and council.bound == 0.1
    found = {r.reviewer: r for r in council.reviewers}
    primed = found.pop("primed")
    r = primed.correlation
    assert r.high is not None and r.high < 0 and r.value is not None and r.value < -0.1, r
    assert primed.within_bound is False
    assert primed.step.value is not None and primed.step.value < 0
    for neutral in found.values():
        assert neutral.within_bound is True, neutral
        assert covers_zero(neutral.correlation), neutral
        assert neutral.correlation.n == 60 * 8


def test_audit_cli_prints_verdicts_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.sqlite"
    store = RunStore(path)
    record_debates(store, favour={"technical": 2.0})
    record_councils(store, 8, {"primed": 3.0, "fair": 0.0})
    assert main(["audit", "--store", str(path)]) == 0
    text = capsys.readouterr().out
    assert "no evidence of position bias" in text
    assert "ADR-017" in text and "reviewer primed" in text
    assert main(["audit", "--store", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    parsed = Audit.model_validate(data)
    assert {j.role for j in parsed.judges} == set(ROLES)
    assert parsed.council.runs == 8
    assert {r.reviewer for r in parsed.council.reviewers} == {"primed", "fair"}


def test_stored_calibrated_scores_are_the_ones_the_panel_voted_with(tmp_path: Path) -> None:
    """A judge separating the sides by one point is stored on the panel's floored scale."""
    judge = FunctionModel(planted_judges(lambda role, arg_id: 6 if arg_id[:3] == "PRO" else 5))
    result = judge_transcript_sync(transcript(), model=judge, seed=1)
    assert result.vote.calibration == "minmax" and result.decision.thresholds.min_spread == 3.0
    store = RunStore(tmp_path / "s.sqlite")
    store.record(result)
    stored = {round(float(str(r["calibrated_score"])), 6) for r in store.observations()}
    assert stored == {round(1 / 3, 6), round(2 / 3, 6)}  # 5 and 6 within a 3-point floor
