"""--max-cost and --max-tokens: no call starts once its worst case could pass the cap.

The scripted model answers without yielding to the event loop, so the calls of a run are
made one after another in a fixed order; the tests use that to know which calls fit.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from debate._cli import costs
from debate._cli.main import main
from debate.api import judge_transcript, run_debate
from debate.exceptions import BudgetExceeded, ConfigurationError
from debate.models import TokenUsage
from debate.models.test import TestModel
from debate.records import DebateResult, RunConfig
from debate.runtime import RateLimiter, Run
from debate.runtime._budget import Budget, prompt_bound
from debate.runtime._pricing import Price, PriceTable
from tests.support.helpers import transcript

MAX_TOKENS = 320
"""Per-call max_tokens of these runs: above every scripted reply (at most ~310 tokens)."""
PER_TOKEN = 0.001
"""The scripted model's completion price in USD per token (its prompts cost nothing), so a
call's worst case is exactly MAX_TOKENS * PER_TOKEN whatever its prompt."""
WORST = MAX_TOKENS * PER_TOKEN


def files(tmp_path: Path) -> list[str]:
    prices = tmp_path / "prices.toml"
    prices.write_text(f"[models.scripted]\nprompt = 0\ncompletion = {PER_TOKEN * 1e6}\n")
    config = tmp_path / "config.toml"
    config.write_text(f"max_tokens = {MAX_TOKENS}\n")
    return ["--prices", str(prices), "--config", str(config)]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--model", "scripted", "--quiet", "--no-store", "--no-cache"])
    out, err = capsys.readouterr()
    return code, out, err


def cost_of(per_call: list[Any]) -> float:
    return sum(c.completion_tokens for c in per_call) * PER_TOKEN


def test_max_cost_below_the_full_cost_stops_calls_at_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common_flags = ["--seed", "7", *files(tmp_path)]
    code, _, err = run(capsys, "run", "Should we?", *common_flags, "--out", str(tmp_path / "a"))
    assert code == 0, err
    full = DebateResult.model_validate_json((tmp_path / "a" / "result.json").read_text())
    debate_cost = cost_of([c for c in full.usage.per_call if c.phase != "judge"])
    assert full.usage.cost_usd == pytest.approx(cost_of(full.usage.per_call), abs=1e-6)
    # room for the whole debate and the worst case of one judge, not of a second
    cap = round(debate_cost + WORST + 0.0005, 6)
    assert full.usage.cost_usd is not None and full.usage.cost_usd > cap

    out_dir = tmp_path / "b"
    argv = ["run", "Should we?", *common_flags, "--max-cost", str(cap), "--out", str(out_dir)]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    result = DebateResult.model_validate_json((out_dir / "result.json").read_text())
    usage = result.usage
    assert usage.budget is not None and usage.budget.max_cost_usd == cap
    assert usage.cost_usd is not None and usage.cost_usd <= cap
    assert usage.budget.spent_usd == pytest.approx(usage.cost_usd, abs=1e-6)
    assert usage.budget.spent_usd <= cap
    assert usage.cost_usd == pytest.approx(cost_of(usage.per_call), abs=1e-6)
    scored = [e for e in result.evaluations if e.status == "scored"]
    refused = [e for e in result.evaluations if e.status == "unscored"]
    assert len(scored) == 1 and len(refused) == 3
    for evaluation in refused:  # nothing filled in: no scores, the reason and why
        assert evaluation.reason == "budget" and evaluation.scores is None
        assert evaluation.detail is not None and evaluation.detail.startswith("budget: ")
        assert evaluation.attempts == 0
    skipped = {(s.phase, s.actor, s.attempt) for s in usage.skipped}
    assert skipped == {("judge", e.judge, 1) for e in refused}
    assert all("--max-cost" in s.reason for s in usage.skipped)
    assert {c.actor for c in usage.per_call if c.phase == "judge"} == {scored[0].judge}
    assert result.decision.outcome == "insufficient"
    assert "3 calls not made" in out and f"not made: judge {refused[0].judge}" in out


def test_max_tokens_follows_the_rule_call_by_call() -> None:
    """Which calls a token cap lets through, worked out here from the documented bound."""
    config = RunConfig(max_tokens=MAX_TOKENS)
    model = TestModel(seed=3)
    full = asyncio.run(run_debate("Should we?", config=config, model=model, seed=3))
    worst = [prompt_bound(m, s) + MAX_TOKENS for m, s in model.requests]
    used = [c.prompt_tokens + c.completion_tokens for c in _in_request_order(full, model)]
    cap = sum(used[:6]) + worst[6] + 5  # the debate and the first judge's worst case
    spent, made = 0, []
    for index, (bound, actual) in enumerate(zip(worst, used, strict=True)):
        if spent + bound <= cap:
            spent += actual
            made.append(index)
    assert made[:7] == list(range(7)) and len(made) < len(worst)

    capped_model = TestModel(seed=3)
    budget = Budget(max_tokens=cap)
    result = asyncio.run(
        run_debate("Should we?", config=config, model=capped_model, seed=3, run=Run(budget=budget))
    )
    usage = result.usage
    assert len(capped_model.requests) == len(made)
    assert usage.prompt_tokens + usage.completion_tokens == spent == budget.spent_tokens <= cap
    assert usage.budget is not None and usage.budget.spent_tokens == spent
    assert len(usage.skipped) == len(worst) - len(made)
    assert all(
        s.reason.startswith("budget: ") and "--max-tokens" in s.reason for s in usage.skipped
    )


def _in_request_order(result: DebateResult, model: TestModel) -> list[Any]:
    """The per-call rows in the order the requests were sent (one request per call here)."""
    assert len(model.requests) == len(result.usage.per_call)
    order = {"opening": 0, "cross_examination": 1, "closing": 2}
    debate = sorted(
        (c for c in result.usage.per_call if c.phase != "judge"), key=lambda c: order[c.phase]
    )
    sent = [_judge_of(m[1].content) for m, _ in model.requests[len(debate) :]]
    judges = {c.actor: c for c in result.usage.per_call if c.phase == "judge"}
    rows = debate + [judges[name] for name in sent]
    # each debate phase has two calls in either order; match them to the requests by tokens
    for i in range(0, len(debate), 2):
        first = model.requests[i][0]
        if sum(len(m.content) // 4 for m in first) != rows[i].prompt_tokens:
            rows[i], rows[i + 1] = rows[i + 1], rows[i]
    return rows


def _judge_of(prompt: str) -> str:
    match = re.search(r"# Your role: (\w+) judge", prompt)
    assert match is not None
    return match.group(1)


def test_max_tokens_flag_caps_a_judged_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.json"
    path.write_text(transcript().model_dump_json())
    flags = ["--seed", "1", *files(tmp_path), "--json"]
    code, out, err = run(capsys, "judge", str(path), *flags, "--out", str(tmp_path / "a"))
    assert code == 0, err
    full = json.loads(out)["usage"]
    total = full["prompt_tokens"] + full["completion_tokens"]
    argv = ["judge", str(path), *flags, "--max-tokens", str(total - 1)]
    code, out, err = run(capsys, *argv, "--out", str(tmp_path / "b"))
    assert code == 0, err
    result = json.loads(out)
    usage = result["usage"]
    assert usage["skipped"] and usage["budget"]["max_tokens"] == total - 1
    assert usage["prompt_tokens"] + usage["completion_tokens"] == usage["budget"]["spent_tokens"]
    assert usage["budget"]["spent_tokens"] <= total - 1
    refused = {e["judge"] for e in result["evaluations"] if e["reason"] == "budget"}
    assert refused == {s["actor"] for s in usage["skipped"]}
    made = {c["actor"] for c in usage["per_call"]}
    assert made.isdisjoint(refused) and len(made | refused) == 4


def test_a_topic_classifier_refused_by_the_budget_falls_back_on_keywords() -> None:
    config = RunConfig(topic_classifier="model")
    budget = Budget(max_tokens=10)
    result = asyncio.run(
        judge_transcript(transcript(), config=config, model=TestModel(), run=Run(budget=budget))
    )
    assert result.vote.topic_source == "keywords_fallback"
    assert {s.phase for s in result.usage.skipped} == {"topic", "judge"}
    assert result.usage.calls == 0 and budget.spent_tokens == 0
    assert all(e.reason == "budget" for e in result.evaluations)


def test_a_debater_refused_by_the_budget_stops_the_debate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "o"
    argv = ["run", "Should we?", *files(tmp_path), "--max-cost", str(WORST * 2.5)]
    code, _, err = run(capsys, *argv, "--out", str(out_dir))
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert "the debate stopped before its end, budget:" in err and "--max-cost" in err
    assert "larger cap to continue" in err
    assert not (out_dir / "result.json").exists()


def test_a_generator_refused_by_the_budget_stops_the_council(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["council", "Which?", "--generate", "scripted-a,scripted-b", "--max-tokens", "10"]
    code, _, err = run(capsys, *argv, "--out", str(tmp_path))
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "the council stopped before its reviews, budget:" in err and "--max-tokens" in err
    assert not (tmp_path / "result.json").exists()


def test_replayed_calls_cost_nothing_so_a_rerun_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "o"
    flags = [*files(tmp_path), "--seed", "5", "--out", str(out_dir), "--quiet", "--no-store"]
    argv = ["run", "Should we?", "--model", "scripted", *flags]
    assert main(argv) == 0
    capsys.readouterr()
    assert main([*argv, "--max-cost", str(WORST / 2), "--json"]) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert usage["skipped"] == [] and usage["budget"]["spent_usd"] == 0
    assert usage["calls"] == 10  # every call replayed from OUT/cache.sqlite


def test_a_cost_cap_over_a_model_without_a_price_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text('{"topic": "Should we?"}\n')
    for command in (["run", "Should we?"], ["batch", str(batch)]):
        out_dir = tmp_path / command[0]
        code, _, err = run(capsys, *command, "--max-cost", "1", "--out", str(out_dir))
        assert code == 2
        assert len(err.strip().splitlines()) == 1
        assert "--max-cost: model 'scripted' has no price" in err and "--prices" in err
        assert not list(out_dir.glob("**/result.json"))
    with pytest.raises(ConfigurationError, match="'scripted' has no price"):
        asyncio.run(
            judge_transcript(
                transcript(), model=TestModel(), run=Run(budget=Budget(max_cost_usd=1.0))
            )
        )


def test_a_batch_cap_is_one_cap_over_all_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.jsonl"
    lines = [{"id": f"t{i}", "transcript": transcript().model_dump()} for i in range(3)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cap = WORST * 4 + 0.0005  # about one item's four judges, not three items'
    argv = ["batch", str(path), *files(tmp_path), "--max-cost", str(cap)]
    code, out, err = run(capsys, *argv, "--out", str(tmp_path / "o"))
    assert code == 0, err
    results = [json.loads((tmp_path / "o" / f"t{i}" / "result.json").read_text()) for i in range(3)]
    costs = [r["usage"]["cost_usd"] for r in results]
    assert 0 < sum(costs) <= cap
    for cost, result in zip(costs, results, strict=True):
        assert cost == pytest.approx(cost_of_rows(result["usage"]["per_call"]), abs=1e-6)
    skipped = [s for r in results for s in r["usage"]["skipped"]]
    assert skipped and all(s["phase"] == "judge" for s in skipped)
    spent = max(r["usage"]["budget"]["spent_usd"] for r in results)
    assert spent == pytest.approx(sum(costs), abs=1e-6)
    assert "cost $" in out and f"{len(skipped)} calls not made (budget)" in out
    text = (tmp_path / "o" / "results.jsonl").read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert sum(line["skipped"] for line in lines) == len(skipped)


def cost_of_rows(rows: list[dict[str, Any]]) -> float:
    return sum(r["completion_tokens"] for r in rows) * PER_TOKEN


def test_calls_in_flight_hold_their_worst_case() -> None:
    prices = PriceTable(models={"m": Price(prompt=1e6, completion=1e6)})  # $1 a token
    budget = Budget(max_cost_usd=10.0, max_tokens=100)
    first = budget.hold("m", 3, 1, prices)
    second = budget.hold("m", 3, 1, prices)  # 8 of 10 dollars held
    with pytest.raises(BudgetExceeded, match="could cost up to"):
        budget.hold("m", 2, 1, prices)
    budget.settle(first, TokenUsage(prompt_tokens=1, completion_tokens=1), prices)
    third = budget.hold("m", 3, 1, prices)  # 2 spent + 4 held + 4: exactly the cap
    assert (budget.spent_usd, budget.spent_tokens) == (2.0, 2)
    budget.settle(second, None, prices)  # a request that failed spends nothing
    budget.settle(third, TokenUsage(prompt_tokens=3, completion_tokens=1), prices)
    assert budget.spent_usd == 6.0 and budget.caps().spent_tokens == 6
    with pytest.raises(BudgetExceeded, match="token cap"):
        Budget(max_tokens=5).hold("m", 5, 1, prices)


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--max-cost", "inf"), ("--max-cost", "nan"), ("--max-cost", "0"), ("--max-cost", "-1")]
    + [("--max-tokens", "0"), ("--max-tokens", "x")],
)
def test_bad_caps_are_one_line_errors_naming_the_flag(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    code = main(["run", "Should we?", "--model", "scripted", flag, value])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and flag in err


def test_bad_caps_in_the_python_api_name_the_field() -> None:
    with pytest.raises(ConfigurationError, match="max_cost_usd: inf"):
        Budget(max_cost_usd=math.inf)
    with pytest.raises(ConfigurationError, match="max_tokens: 0"):
        Budget(max_tokens=0)


class CountingLimiter(RateLimiter):
    """The CLI's limiter, on a fake clock that only moves when the limiter sleeps."""

    made: list[CountingLimiter] = []

    def __init__(self, rpm: int | None = None, tpm: int | None = None) -> None:
        self.now = 0.0
        self.waits: list[float] = []
        super().__init__(rpm, tpm, clock=lambda: self.now, sleep=self._sleep)
        self.acquired = 0
        CountingLimiter.made.append(self)

    async def _sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    async def acquire(self, tokens: int = 0) -> Any:
        self.acquired += 1
        return await super().acquire(tokens)


@pytest.mark.parametrize(
    ("command", "limit"),
    [(c, f) for c in ("council", "calibrate", "run", "judge") for f in ("--rpm", "--tpm")],
)
def test_every_command_sends_its_calls_through_the_rate_limiter(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    limit: str,
) -> None:
    monkeypatch.setattr(costs, "RateLimiter", CountingLimiter)
    CountingLimiter.made.clear()
    argv = command_argv(command, tmp_path)
    value = "2" if limit == "--rpm" else "3000"  # two calls a minute either way
    # a fixed seed: the placeholder's replies (and so the tokens a window holds) are seeded
    code, _, err = run(capsys, *argv, limit, value, "--seed", "3", "--out", str(tmp_path / "o"))
    assert code == 0, err
    (limiter,) = CountingLimiter.made
    name = "calibration.json" if command == "calibrate" else "result.json"
    usage = json.loads((tmp_path / "o" / name).read_text())["usage"]
    assert limiter.acquired == usage["calls"] >= 4  # every request went through the limiter
    assert limiter.waits and limiter.now >= 60.0  # a later call waited for the window


def command_argv(command: str, tmp_path: Path) -> list[str]:
    """``command`` with a small input of its kind (run, judge, council, calibrate)."""
    if command == "council":
        source = tmp_path / "c.jsonl"
        source.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n')
        return ["council", "Which?", "--candidates", str(source)]
    if command == "calibrate":
        source = tmp_path / "v.jsonl"
        item = {"id": "d", "transcript": transcript().model_dump(), "verdict": "PRO"}
        source.write_text(json.dumps(item) + "\n")
        return ["calibrate", str(source), "--format", "debate"]
    if command == "judge":
        source = tmp_path / "t.json"
        source.write_text(transcript().model_dump_json())
        return ["judge", str(source)]
    return ["run", "Should we?"]


@pytest.mark.parametrize("command", ["judge", "council", "calibrate"])
@pytest.mark.parametrize("cap", ["--max-cost", "--max-tokens"])
def test_every_command_stops_its_judges_calls_at_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, cap: str
) -> None:
    """Below one call's worst case, no judge or reviewer call is made, and each is listed."""
    value = str(WORST / 2) if cap == "--max-cost" else str(MAX_TOKENS // 2)
    argv = [*command_argv(command, tmp_path), *files(tmp_path), cap, value]
    code, _, err = run(capsys, *argv, "--out", str(tmp_path / "o"))
    assert code == 0, err
    name = "calibration.json" if command == "calibrate" else "result.json"
    usage = json.loads((tmp_path / "o" / name).read_text())["usage"]
    assert usage["calls"] == 0 and usage["skipped"]
    assert all(s["reason"].startswith("budget") for s in usage["skipped"])


def test_a_batch_token_cap_is_one_cap_over_all_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.jsonl"
    lines = [{"id": f"t{i}", "transcript": transcript().model_dump()} for i in range(3)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, _, err = run(capsys, "batch", str(path), *files(tmp_path), "--out", str(tmp_path / "a"))
    assert code == 0, err
    full = [json.loads((tmp_path / "a" / f"t{i}" / "result.json").read_text()) for i in range(3)]
    cap = sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in full) - 1
    argv = ["batch", str(path), *files(tmp_path), "--max-tokens", str(cap)]
    code, _, err = run(capsys, *argv, "--out", str(tmp_path / "o"))
    assert code == 0, err
    usages = [
        json.loads((tmp_path / "o" / f"t{i}" / "result.json").read_text())["usage"]
        for i in range(3)
    ]
    spent = sum(u["prompt_tokens"] + u["completion_tokens"] for u in usages)
    assert 0 < spent <= cap
    assert sum(len(u["skipped"]) for u in usages) >= 1  # below the batch's need: calls not made
    assert all(u["budget"]["max_tokens"] == cap for u in usages)
