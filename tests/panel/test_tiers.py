"""The cascade of judge tiers on a live run (issue 27, part 3): tier 1 decides alone, and a
higher tier is asked only for the items the tiers below could not settle. The calls are
counted on the in-package doubles and at the OpenAI-compatible test server."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from debate import (
    ConfigurationError,
    DebateResult,
    Escalation,
    FunctionModel,
    MultiJudgePanel,
    PanelResult,
    PriceTable,
    TestModel,
    ask_every_tier,
    judge_transcript_sync,
    run_council_sync,
    run_debate_sync,
)
from debate._cli.main import main
from debate.council._review import Council, Reviewer
from debate.judgments import TrackRecords
from debate.models import Message
from debate.panel._positions import presentations
from debate.quality._benchmark import DebateItem, calibrate_debates
from debate.records import Candidate, RunConfig, build_config, load_config
from debate.runtime import Run
from tests.support.helpers import (
    RESPONSE,
    ROLE,
    graded,
    planted_judges,
    review_reply,
    served,
    shown_candidates,
    transcript,
)
from tests.support.openai_server import FakeOpenAIServer, Record, Reply, request_schema

T = transcript()
PRO = {"PRO-1": 9, "PRO-2": 8, "PRO-3": 7, "CON-1": 4, "CON-2": 3, "CON-3": 2}
FLIP = {k: 11 - v for k, v in PRO.items()}
MILD = {"PRO-1": 7, "PRO-2": 7, "PRO-3": 6, "CON-1": 6, "CON-2": 5, "CON-3": 6}
"""Leans PRO by a point: with PRO's strong judge its offsets split the panel on PRO-1."""

Plan = Mapping[str, Mapping[str, int]]
AGREE: Plan = {"technical": PRO, "business": PRO, "risk": FLIP, "general": FLIP}
"""Tier 1 agrees on PRO; tier 2 would reverse it, so a tier-2 call could not go unseen."""
SPLIT: Plan = {"technical": PRO, "business": FLIP, "risk": PRO, "general": PRO}
SETTLED: Plan = {"technical": PRO, "business": MILD, "risk": PRO, "general": PRO}
"""Tier 1 is split (irreconcilable); with tier 2's two strong PRO judges, PRO wins."""

TIERED = [
    {"role": "technical"},
    {"role": "business"},
    {"role": "risk", "tier": 2},
    {"role": "general", "tier": 2},
]
TIERED_TOML = """
[[judges]]
role = "technical"

[[judges]]
role = "business"

[[judges]]
role = "risk"
tier = 2

[[judges]]
role = "general"
tier = 2
"""


def tiered(judges: list[dict[str, Any]] = TIERED, **settings: Any) -> RunConfig:
    return build_config({"model": "function", "judges": judges, **settings})


def judge_models(plan: Plan) -> dict[str, FunctionModel]:
    """One double per judge (named by its role), scoring as ``plan`` says."""
    return {
        role: FunctionModel(planted_judges(lambda r, a: plan[r][a]), name=role) for role in plan
    }


def calls(models: Mapping[str, FunctionModel]) -> dict[str, int]:
    return {name: len(m.requests) for name, m in models.items()}


# --- a debate's panel, on the in-package doubles ------------------------------------------


def test_an_agreeing_tier_1_decides_and_tier_2_is_never_called() -> None:
    models = judge_models(AGREE)
    result = judge_transcript_sync(T, config=tiered(), judges=models, seed=1)
    assert calls(models) == {"technical": 1, "business": 1, "risk": 0, "general": 0}
    d = result.decision
    assert (d.outcome, d.winner, d.tier) == ("winner", "PRO", 1)
    # the judges not asked are not unscored: they are in no statistic and no evaluation
    assert [e.judge for e in result.evaluations] == ["technical", "business"]
    assert (result.agreement.judges_scored, result.agreement.judges_unscored) == (2, 0)
    assert set(result.vote.judge_weights) == {"technical", "business"}
    assert result.cascade is not None
    first, second = result.cascade.steps
    assert (first.tier, first.judges, first.asked, first.escalated) == (
        1,
        ["technical", "business"],
        True,
        False,
    )
    assert first.reason == "tier 1: PRO wins; tier 2 not needed"
    assert (second.tier, second.judges, second.asked) == (2, ["risk", "general"], False)
    assert second.reason == "not asked: tier 1 decided" and second.usage.calls == 0
    assert first.usage.calls == 2 == result.cascade.calls == result.usage.calls
    assert result.cascade.calls_all_tiers == 4


def test_a_split_tier_1_asks_tier_2_and_the_panel_concludes_on_both() -> None:
    models = judge_models(SPLIT)
    result = judge_transcript_sync(T, config=tiered(), judges=models, seed=1)
    assert calls(models) == {"technical": 1, "business": 1, "risk": 1, "general": 1}
    assert result.decision.tier == 2
    assert result.decision.outcome == "irreconcilable"  # business still disagrees with all
    assert [e.judge for e in result.evaluations] == ["technical", "business", "risk", "general"]
    assert result.agreement.judges_scored == 4
    assert result.cascade is not None
    first, second = result.cascade.steps
    assert first.escalated and first.reason == (
        "tier 1: irreconcilable, not a winner; tier 2 asked"
    )
    assert second.asked and not second.escalated
    assert second.reason == "tiers 1-2: irreconcilable, not a winner; no higher tier to ask"
    assert first.usage.calls == second.usage.calls == 2
    assert result.cascade.calls == result.cascade.calls_all_tiers == 4


def test_a_higher_tier_settles_what_tier_1_could_not_and_the_one_above_is_not_asked() -> None:
    judges = [*TIERED, {"name": "referee", "role": "general", "tier": 3}]
    models = judge_models(SETTLED)
    models["referee"] = FunctionModel(planted_judges(lambda r, a: FLIP[a]), name="referee")
    result = judge_transcript_sync(T, config=tiered(judges), judges=models, seed=1)
    assert calls(models) == {
        "technical": 1,
        "business": 1,
        "risk": 1,
        "general": 1,
        "referee": 0,
    }
    assert (result.decision.outcome, result.decision.winner, result.decision.tier) == (
        "winner",
        "PRO",
        2,
    )
    assert result.cascade is not None
    assert [(s.tier, s.asked, s.escalated) for s in result.cascade.steps] == [
        (1, True, True),
        (2, True, False),
        (3, False, False),
    ]
    assert result.cascade.steps[1].reason == "tiers 1-2: PRO wins; tier 3 not needed"
    assert result.cascade.steps[2].reason == "not asked: tiers 1-2 decided"
    assert (result.cascade.calls, result.cascade.calls_all_tiers) == (4, 5)


def test_with_swap_a_judge_not_asked_would_have_made_two_calls() -> None:
    models = judge_models(AGREE)
    result = judge_transcript_sync(T, config=tiered(swap=True), judges=models, seed=1)
    assert calls(models) == {"technical": 2, "business": 2, "risk": 0, "general": 0}
    assert result.cascade is not None
    assert (result.cascade.calls, result.cascade.calls_all_tiers) == (4, 8)


def test_a_debate_asks_tier_2_only_when_needed_and_its_debaters_are_not_the_cascades() -> None:
    models = judge_models(AGREE)
    result = run_debate_sync(
        "Should we adopt the plan?", config=tiered(), model=TestModel(seed=3), judges=models, seed=2
    )
    assert calls(models)["risk"] == calls(models)["general"] == 0
    assert result.decision.tier == 1 and result.cascade is not None
    debaters = sum(c.attempts for c in result.usage.per_call if c.phase != "judge")
    assert result.usage.calls == debaters + result.cascade.calls
    assert result.cascade.calls == 2 and result.cascade.calls_all_tiers == 4


def test_the_cascade_costs_what_the_run_meter_counted() -> None:
    prices = PriceTable.model_validate(
        {"models": {r: {"prompt": 1.0, "completion": 3.0} for r in SPLIT}}
    )
    result = judge_transcript_sync(
        T, config=tiered(), judges=judge_models(SPLIT), seed=1, run=Run(prices=prices)
    )
    c, u = result.cascade, result.usage
    assert c is not None and u.cost_usd is not None and u.cost_usd > 0
    # a transcript judged as given: every call of the run is a judge's
    assert c.cost_usd == pytest.approx(u.cost_usd)
    assert c.tokens == u.prompt_tokens + u.completion_tokens
    assert sum(s.cost_usd or 0 for s in c.steps) == pytest.approx(u.cost_usd)
    assert all(s.cost_usd is not None and s.cost_usd > 0 for s in c.steps)
    unpriced = judge_transcript_sync(T, config=tiered(), judges=judge_models(SPLIT), seed=1)
    assert unpriced.cascade is not None and unpriced.cascade.cost_usd is None


def test_the_escalation_rule_is_pluggable_and_sees_every_tiers_decision() -> None:
    seen: list[tuple[str, int, int]] = []

    def never(decided: PanelResult, tier: int) -> Escalation:
        seen.append((decided.decision.outcome, decided.decision.tier, tier))
        return Escalation(False, f"tier {tier}: the caller's rule settles on anything")

    models = judge_models(SPLIT)
    result = judge_transcript_sync(T, config=tiered(), judges=models, seed=1, escalation=never)
    assert calls(models) == {"technical": 1, "business": 1, "risk": 0, "general": 0}
    assert seen == [("irreconcilable", 1, 1)]
    assert result.cascade is not None
    assert result.cascade.steps[0].reason == (
        "tier 1: the caller's rule settles on anything; tier 2 not needed"
    )
    # asking every tier: tier 2 is called although tier 1 declared a winner
    models = judge_models(AGREE)
    panel = MultiJudgePanel(models=models, config=tiered(), escalation=ask_every_tier)
    result = panel.evaluate_sync(T, seed=1)
    assert calls(models) == {"technical": 1, "business": 1, "risk": 1, "general": 1}
    assert result.decision.tier == 2 and result.cascade is not None
    assert result.cascade.steps[0].reason == "tier 1: every tier is asked; tier 2 asked"
    assert result.cascade.steps[1].reason == (
        "tiers 1-2: every tier is asked; no higher tier to ask"
    )


def test_without_tiers_every_judge_is_asked_at_once_in_the_orders_drawn_before_tiers() -> None:
    config = RunConfig(model="function")
    panel = MultiJudgePanel(
        models=FunctionModel(planted_judges(lambda r, a: PRO[a])), config=config
    )
    result = panel.evaluate_sync(T, seed=4)
    before = presentations(
        4,
        ["PRO-1", "PRO-2", "PRO-3"],
        ["CON-1", "CON-2", "CON-3"],
        rng=random.Random("4:presentation"),
    )
    assert panel.presentations(T, 4) == before
    assert [e.positions for e in result.evaluations] == [p.positions for p in before]
    assert result.decision.tier == 1 and result.cascade is not None
    [step] = result.cascade.steps
    assert step.judges == ["technical", "business", "risk", "general"] and step.asked
    assert step.reason == "tier 1: PRO wins"
    assert result.cascade.calls == result.cascade.calls_all_tiers == result.usage.calls == 4


@pytest.mark.parametrize("seed", range(6))
def test_each_tier_reads_in_counterbalanced_orders(seed: int) -> None:
    panel = MultiJudgePanel(models=TestModel(), config=tiered())
    names = ["technical", "business", "risk", "general"]
    orders = dict(zip(names, panel.presentations(T, seed), strict=True))
    for tier in (("technical", "business"), ("risk", "general")):
        assert sorted(orders[name].sides[0] for name in tier) == ["CON", "PRO"]


def test_a_calibration_asks_every_tier_on_every_item(tmp_path: Path) -> None:
    """A track record needs each judge's call on every item, not only on the hard ones."""
    models = judge_models(AGREE)
    items = [DebateItem(id=f"i{n}", transcript=T, verdict="PRO") for n in range(3)]
    records = TrackRecords(tmp_path / "records.sqlite")
    report = asyncio.run(
        calibrate_debates(items, config=tiered(), records=records, judges=models, seed=1)
    )
    assert calls(models) == dict.fromkeys(AGREE, 3)
    rows = {r.judge: r for r in report.rows}
    assert rows["risk"].items == 3 and rows["risk"].accuracy.value == 0.0
    assert rows["technical"].accuracy.value == 1.0


def test_a_result_written_before_tiers_still_loads() -> None:
    result = judge_transcript_sync(T, config=tiered(), judges=judge_models(AGREE), seed=1)
    data = json.loads(result.model_dump_json())
    del data["cascade"], data["decision"]["tier"]
    for judge in data["config"]["judges"]:
        del judge["tier"]
    old = DebateResult.model_validate(data)
    assert old.cascade is None and old.decision.tier == 1


# --- config -------------------------------------------------------------------------------


@pytest.mark.parametrize("tier", [0, -1, 2.5, 2.0, "2", True, 10])
def test_a_tier_that_is_not_a_whole_number_from_1_is_refused_naming_the_field(
    tier: object,
) -> None:
    judges = [*TIERED[:3], {"role": "general", "tier": tier}]
    with pytest.raises(ConfigurationError) as caught:
        tiered(judges)
    message = str(caught.value)
    assert message.startswith("config.judges.3.tier: ") and "\n" not in message


def test_a_bad_tier_in_the_toml_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(TIERED_TOML.replace("tier = 2", "tier = 0", 1))
    with pytest.raises(ConfigurationError, match=r"panel\.toml\.judges\.2\.tier: "):
        load_config(config)
    (tmp_path / "t.json").write_text(T.model_dump_json())
    code = main(["judge", str(tmp_path / "t.json"), "--config", str(config), "--no-store"])
    out, err = capsys.readouterr()
    assert code == 2 and "judges.2.tier" in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out


def test_tiers_read_from_toml(tmp_path: Path) -> None:
    (tmp_path / "panel.toml").write_text(TIERED_TOML)
    config = load_config(tmp_path / "panel.toml")
    assert [(j.name, j.tier) for j in config.judges] == [
        ("technical", 1),
        ("business", 1),
        ("risk", 2),
        ("general", 2),
    ]


def test_tiers_with_a_gap_are_refused_rather_than_renumbered() -> None:
    judges = [{"role": "technical"}, {"role": "business"}, {"role": "risk", "tier": 3}]
    with pytest.raises(ConfigurationError) as caught:
        tiered(judges)
    assert str(caught.value) == (
        "config.judges: tier 2 has no judge, yet tier 3 has; number the tiers 1, 2, 3 ... "
        "without a gap (here: 1, 3)"
    )


def test_a_tier_1_of_one_judge_is_refused_since_it_decides_alone() -> None:
    judges = [{"role": "technical"}, {"role": "business", "tier": 2}, {"role": "risk", "tier": 2}]
    with pytest.raises(ConfigurationError, match=r"^config\.judges: tier 1 has 1 judge; "):
        tiered(judges)


def test_a_council_given_reviewers_with_a_gap_is_refused() -> None:
    model = TestModel()
    reviewers = [Reviewer("a", model), Reviewer("b", model), Reviewer("c", model, tier=3)]
    with pytest.raises(ConfigurationError, match=r"^reviewers: tier 2 has no reviewer, yet"):
        Council(reviewers)


# --- a council, on the in-package doubles -------------------------------------------------

CANDIDATES = [Candidate(id=c, text=f"{c} answer") for c in ("alpha", "beta", "gamma")]
COUNCIL_PLANS: dict[str, Plan] = {
    "clear": {
        "technical": {"alpha": 9, "beta": 5, "gamma": 2},
        "business": {"alpha": 8, "beta": 5, "gamma": 3},
        "risk": {"alpha": 2, "beta": 9, "gamma": 5},
        "general": {"alpha": 2, "beta": 9, "gamma": 5},
    },
    "tied": {
        "technical": {"alpha": 9, "beta": 5, "gamma": 2},
        "business": {"alpha": 5, "beta": 9, "gamma": 2},
        "risk": {"alpha": 9, "beta": 4, "gamma": 2},
        "general": {"alpha": 9, "beta": 5, "gamma": 3},
    },
}
"""Each reviewer's score per candidate; in ``clear`` tier 2 would reverse tier 1's top."""


def reviewer_models(plan: Plan) -> dict[str, FunctionModel]:
    def reviewer(role: str) -> FunctionModel:
        def reply(messages: list[Message], schema: object) -> str:
            shown = shown_candidates(messages)
            return review_reply({label: plan[role][text.split()[0]] for label, text in shown})

        return FunctionModel(reply, name=role)

    return {role: reviewer(role) for role in plan}


@pytest.mark.parametrize(("case", "asked"), [("clear", 0), ("tied", 1)])
def test_council_tier_2_reviews_only_when_tier_1s_top_is_tied(case: str, asked: int) -> None:
    models = reviewer_models(COUNCIL_PLANS[case])
    config = build_config({"model": "f", "judges": TIERED})
    result = run_council_sync("Which?", CANDIDATES, reviewers=models, config=config, seed=3)
    assert calls(models) == {"technical": 1, "business": 1, "risk": asked, "general": asked}
    assert result.tier == 1 + asked and result.cascade is not None
    first, second = result.cascade.steps
    assert first.escalated == bool(asked) and second.asked == bool(asked)
    assert [r.reviewer for r in result.reviews] == list(models)[: 2 + 2 * asked]
    if case == "clear":
        assert result.rankings[0].candidate == "alpha"
        assert first.reason == "tier 1: alpha ranks first, not tied; tier 2 not needed"
    else:
        assert first.reason == "tier 1: alpha is tied for first place; tier 2 asked"
        assert second.reason == "tiers 1-2: alpha is tied for first place; no higher tier to ask"
    assert (result.cascade.calls, result.cascade.calls_all_tiers) == (2 + 2 * asked, 4)


# --- at the OpenAI-compatible test server -------------------------------------------------

DEBATE_PLANS: dict[str, Plan] = {"agree": AGREE, "split": SPLIT}
MARK = re.compile(r"\[(\w+)\]")
PERSPECTIVE = re.compile(r"You review as the (\w+) judge")


def judge_server(body: dict[str, Any]) -> Reply:
    """A judge scores as the plan the topic's mark names says for its role."""
    text = "\n".join(str(m["content"]) for m in body["messages"])
    mark, role = MARK.search(text), ROLE.search(text)
    assert mark is not None and role is not None
    plan = DEBATE_PLANS[mark.group(1)][role.group(1)]
    schema = request_schema(body)
    ref = schema["properties"]["scores"]["$ref"].rsplit("/", 1)[-1]
    scores = {arg_id: graded(plan[arg_id]) for arg_id in schema["$defs"][ref]["properties"]}
    return Reply(content=json.dumps({"scores": scores, "key_finding": "k"}))


def council_server(body: dict[str, Any]) -> Reply:
    """A reviewer scores as the plan the question's mark names says for its perspective."""
    text = str(body["messages"][-1]["content"])
    mark, role = MARK.search(text), PERSPECTIVE.search(text)
    assert mark is not None and role is not None
    plan = COUNCIL_PLANS[mark.group(1)][role.group(1)]
    shown = RESPONSE.findall(text)
    return Reply(content=review_reply({label: plan[t.split()[0]] for label, t in shown}))


def counted(records: list[Record], who: re.Pattern[str]) -> Counter[tuple[str, str]]:
    """Requests the server answered, by the item's mark and the judge's role."""
    found: Counter[tuple[str, str]] = Counter()
    for record in records:
        text = "\n".join(str(m["content"]) for m in record.body["messages"])
        mark, role = MARK.search(text), who.search(text)
        assert mark is not None and role is not None
        found[(mark.group(1), role.group(1))] += 1
    return found


def test_a_batch_at_the_server_makes_tier_2_calls_only_for_the_split_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(TIERED_TOML)
    batch = tmp_path / "items.jsonl"
    rows = [
        {
            "id": mark,
            "transcript": json.loads(transcript(topic=f"Adopt [{mark}]?").model_dump_json()),
        }
        for mark in DEBATE_PLANS
    ]
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    with FakeOpenAIServer(responder=judge_server) as server:
        argv = ["batch", str(batch), "--config", str(config), *served(server), "--out", str(out)]
        code = main([*argv, "--no-store", "--quiet", "--max-retries", "0"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert counted(server.records, ROLE) == {
        ("agree", "technical"): 1,
        ("agree", "business"): 1,
        ("split", "technical"): 1,
        ("split", "business"): 1,
        ("split", "risk"): 1,
        ("split", "general"): 1,
    }
    for mark, tier, made in (("agree", 1, 2), ("split", 2, 4)):
        result = DebateResult.model_validate_json((out / mark / "result.json").read_text())
        assert result.decision.tier == tier and result.cascade is not None
        assert result.cascade.calls == made and result.cascade.calls_all_tiers == 4


def test_judge_at_the_server_prints_the_cascade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(TIERED_TOML)
    path = tmp_path / "t.json"
    path.write_text(transcript(topic="Adopt [split]?").model_dump_json())
    with FakeOpenAIServer(responder=judge_server) as server:
        argv = ["judge", str(path), "--config", str(config), *served(server)]
        code = main([*argv, "--out", str(tmp_path), "--no-store", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(server.records) == 4
    assert "Cascade: decided by tier 2 of 2; 4 judge calls (asking every tier: 4 calls)" in out
    assert "  - tier 1 (technical, business): tier 1: irreconcilable, not a winner; " in out


@pytest.mark.parametrize(("case", "asked"), [("clear", 0), ("tied", 1)])
def test_a_council_at_the_server_asks_tier_2_reviewers_only_for_a_tied_top(
    case: str, asked: int
) -> None:
    with FakeOpenAIServer(responder=council_server) as server:
        config = build_config(
            {"model": "m", "base_url": server.base_url, "api_key_env": "", "judges": TIERED}
        )
        result = run_council_sync(f"Which is best [{case}]?", CANDIDATES, config=config, seed=3)
    assert counted(server.records, PERSPECTIVE) == Counter(
        {
            (case, "technical"): 1,
            (case, "business"): 1,
            **({(case, "risk"): 1, (case, "general"): 1} if asked else {}),
        }
    )
    assert result.tier == 1 + asked and result.cascade is not None
    assert result.cascade.calls == len(server.records)
