"""A policy on a live panel: each tier's decision is ruled on, tier 2 asked only below threshold.

The policy here is written by hand (weights 1, a fixed calibration, threshold 0.8), so the
arithmetic is visible: a judge whose PRO arguments outscore CON's by 3 points or more gives
evidence +1, so two such judges give L = 2 and p_agree = sigmoid(2 * 2 - 1) = 0.95.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate import PolicyRule, judge_transcript_sync
from debate._cli.main import main
from debate.records import Policy, TierPolicy, guarantee_sentence
from debate.stats import Platt
from debate.storage import write_policy
from tests.panel.test_tiers import (
    AGREE,
    FLIP,
    PRO,
    SPLIT,
    TIERED_TOML,
    Plan,
    calls,
    judge_models,
    judge_server,
    tiered,
)
from tests.support.helpers import ROLE, served, transcript
from tests.support.openai_server import FakeOpenAIServer

T = transcript()
PLATT = Platt(slope=2.0, intercept=-1.0, n=100)
DEADLOCK: Plan = {"technical": PRO, "business": FLIP, "risk": PRO, "general": FLIP}


def tier(number: int, judges: list[str], declared: int, labelled: int) -> TierPolicy:
    return TierPolicy(
        tier=number,
        judges=judges,
        weights=dict.fromkeys(judges, 1.0),
        calibrator=PLATT,
        threshold=0.8,
        declared=declared,
        coverage=declared / 100,
        agreement=0.9,
        labelled=labelled,
    )


POLICY = Policy(
    kind="scores",
    target_agreement=0.85,
    risk=0.1,
    tiers=[
        tier(1, ["technical", "business"], 60, 100),
        tier(2, ["technical", "business", "risk", "general"], 20, 40),
    ],
    labelled_units=100,
    calibration_items=100,
    coverage=0.8,
    agreement=0.9,
    guarantee=guarantee_sentence(100, 0.85, 0.1),
    condition="hand-written for a test",
    source="test",
    seed=0,
    folds=5,
)


@pytest.mark.parametrize(
    ("plan", "asked", "outcome", "tier_", "p"),
    [
        (AGREE, 2, "winner", 1, 0.953),  # L = 2 at tier 1
        (SPLIT, 4, "winner", 2, 0.953),  # L = 0 at tier 1 (no lead); L = 1 - 1 + 1 + 1 at tier 2
        (DEADLOCK, 4, "escalate", 2, None),  # even at both tiers: for people
    ],
)
def test_each_tier_is_ruled_on_and_tier_2_is_asked_only_below_threshold(
    plan: Plan, asked: int, outcome: str, tier_: int, p: float | None
) -> None:
    models = judge_models(plan)
    result = judge_transcript_sync(
        T, config=tiered(), judges=models, seed=1, escalation=PolicyRule(POLICY)
    )
    assert sum(calls(models).values()) == asked
    d = result.decision
    assert (d.outcome, d.tier) == (outcome, tier_)
    assert d.gate is not None  # what the rules alone said is kept
    if p is None:
        assert d.p_agree is None and d.lead is None and d.winner is None
        assert POLICY.guarantee not in d.recommendation and "people" in d.recommendation
    else:
        assert d.p_agree == pytest.approx(p, abs=1e-3) and d.p_agree_calibrated
        assert d.winner == "PRO" == d.lead and POLICY.guarantee in d.recommendation
    assert set(d.judge_evidence) == {e.judge for e in result.evaluations if e.status == "scored"}


def test_a_verdicts_policy_is_refused_on_a_live_panel() -> None:
    verdicts = POLICY.model_copy(update={"kind": "verdicts"})
    with pytest.raises(ValueError, match="choose one on score tables"):
        PolicyRule(verdicts)


def test_judge_with_a_policy_at_the_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(TIERED_TOML)
    policy = write_policy(tmp_path / "policy.json", POLICY)
    path = tmp_path / "t.json"
    path.write_text(transcript(topic="Adopt [split]?").model_dump_json())
    with FakeOpenAIServer(responder=judge_server) as server:
        argv = ["judge", str(path), "--config", str(config), *served(server)]
        code = main([*argv, "--policy", str(policy), "--out", str(tmp_path), "--no-store"])
    out, err = capsys.readouterr()
    assert code == 0, err
    roles = sorted(ROLE.search(str(r.body["messages"])).group(1) for r in server.records)  # type: ignore[union-attr]
    assert roles == ["business", "general", "risk", "technical"]  # tier 1 had no lead
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["decision"]["outcome"] == "winner" and result["decision"]["tier"] == 2
    assert "p_agree for PRO: 0.953 (calibrated by the policy)" in out


def test_a_policy_file_that_is_not_one_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "policy.json"
    bad.write_text("{}")
    code = main(
        ["judge", str(tmp_path / "missing.json"), "--policy", str(bad), "--model", "scripted"]
    )
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1


ONE_TIER = POLICY.model_copy(
    update={
        "tiers": [tier(1, ["technical", "business", "risk", "general"], 80, 100)],
        "coverage": 0.8,
    }
)


def test_run_with_a_policy_rules_on_the_decision(tmp_path: Path) -> None:
    """`debate run --policy` on the offline scripted model: the decision is the policy's."""
    policy = write_policy(tmp_path / "policy.json", ONE_TIER)
    outcomes = {}
    for name, extra in (("plain", []), ("policy", ["--policy", str(policy)])):
        out = tmp_path / name
        argv = ["run", "Adopt it?", "--model", "scripted", "--seed", "7", "--arguments", "1"]
        assert main([*argv, *extra, "--out", str(out), "--no-store", "--quiet"]) == 0
        outcomes[name] = json.loads((out / "result.json").read_text())["decision"]
    assert outcomes["plain"]["p_agree_calibrated"] is False and outcomes["plain"]["gate"] is None
    ruled = outcomes["policy"]
    assert ruled["gate"] == outcomes["plain"]["outcome"]  # the rules' outcome is kept
    assert ruled["outcome"] in ("winner", "escalate")
    if ruled["lead"] is not None:
        assert ruled["p_agree_calibrated"] is True
        assert (ruled["outcome"] == "winner") == (ruled["p_agree"] >= 0.8)
