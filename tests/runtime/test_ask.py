"""One ask above the model boundary: parse, re-ask, truncation, usage of every attempt, cache.

Backends return raw replies; these tests script those replies (test doubles, or the
OpenAI-compatible test server on 127.0.0.1) and check what ``ask`` and a whole run make of
them.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from debate import DebaterError, RunConfig, judge_transcript_sync, run_debate
from debate.exceptions import ModelOutputError, ProviderError
from debate.models import Message, ModelSettings, Reply, ScriptedModel, TokenUsage
from debate.models.openai import OpenAIModel
from debate.models.test import fill_schema
from debate.records import DebateResult
from debate.runtime import CallContext, CallPolicy, Event, Run, StepFinished, UsageMeter, ask
from debate.runtime._cached import cache_slot
from debate.storage import ResponseCache
from tests.support.helpers import transcript
from tests.support.openai_server import FakeOpenAIServer
from tests.support.openai_server import Reply as ServerReply

PROMPT = [Message(role="user", content="say it")]
BUDGET = 64


class Said(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str


def _ask(
    model: ScriptedModel,
    *,
    cache: ResponseCache | None = None,
    meter: UsageMeter | None = None,
    max_retries: int = 2,
    provider_retries: int = 0,
    events: list[Event] | None = None,
) -> tuple[Any, int]:
    policy = CallPolicy(max_retries=max_retries, provider_retries=provider_retries, backoff=0.0)
    call = CallContext(
        policy, meter or UsageMeter(), cache, None if events is None else events.append
    )
    settings = ModelSettings(max_tokens=BUDGET)
    return asyncio.run(ask(model, PROMPT, Said, settings, call, phase="opening", actor="PRO"))


def _usage(prompt: int, completion: int, cached: int = 0) -> TokenUsage:
    return TokenUsage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached)


# -- usage, the final error, refusal, truncation (test doubles) --------------------------------


def test_usage_of_every_attempt_is_counted_valid_or_not() -> None:
    model = ScriptedModel(
        [
            Reply(text="not json", usage=_usage(11, 5, 1)),
            Reply(text='{"text": "and so o', usage=_usage(13, BUDGET, 2), finish_reason="length"),
            Reply(text='{"text": "ok"}', usage=_usage(17, 3)),
        ]
    )
    meter = UsageMeter()
    completion, attempts = _ask(model, meter=meter)
    assert completion.parsed == Said(text="ok") and attempts == 3
    assert completion.usage == _usage(17, 3)  # the attempt that gave the reply
    expected = (11 + 13 + 17, 5 + BUDGET + 3, 1 + 2)
    assert (meter.prompt_tokens, meter.completion_tokens, meter.cached_tokens) == expected
    assert (meter.calls, meter.retries) == (3, 2)
    row = meter.snapshot().per_call[0]
    assert (row.prompt_tokens, row.completion_tokens, row.cached_tokens) == expected
    assert (row.attempts, row.ok) == (3, True)
    by_model = meter.snapshot().by_model["scripted"]
    assert (by_model.calls, by_model.completion_tokens) == (3, 5 + BUDGET + 3)
    # the invalid reply was shown back with the error; the cut-off one was not, and the
    # attempt after it had twice the budget
    second, third = model.requests[1][0], model.requests[2][0]
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[1].content == "not json" and "not valid JSON" in second[2].content
    assert third == PROMPT
    assert [s.max_tokens for s in model.request_settings] == [BUDGET, BUDGET, 2 * BUDGET]


def test_the_final_error_carries_the_attempts_and_their_total_usage() -> None:
    model = ScriptedModel(
        [
            ProviderError("server error 500"),
            Reply(text="first", usage=_usage(10, 1)),
            Reply(text='{"wrong": 1}', usage=_usage(20, 2)),
            Reply(text="last", usage=_usage(30, 3, 4)),
        ]
    )
    meter = UsageMeter()
    events: list[Event] = []
    with pytest.raises(ModelOutputError) as info:
        _ask(model, meter=meter, max_retries=2, provider_retries=1, events=events)
    error = info.value
    assert error.attempts == 4  # the provider fault is an attempt too
    assert error.usage == (60, 6, 4)
    assert error.raw == "last" and error.reason == "parse_failure"
    assert isinstance(error.__cause__, ModelOutputError)
    row = meter.snapshot().per_call[0]
    assert (row.attempts, row.ok, row.prompt_tokens, row.completion_tokens) == (4, False, 60, 6)
    finished = [e for e in events if isinstance(e, StepFinished)]
    assert len(finished) == 1 and not finished[0].ok and finished[0].attempts == 4
    assert model.remaining == 0


def test_a_refusal_is_an_invalid_reply_even_when_its_text_would_parse() -> None:
    model = ScriptedModel(
        [
            Reply(text='{"text": "would parse"}', refusal="I will not take a side."),
            {"text": "ok"},
        ]
    )
    completion, attempts = _ask(model)
    assert completion.parsed == Said(text="ok") and attempts == 2
    reask = model.requests[1][0]
    assert reask[1] == Message(role="assistant", content="I will not take a side.")
    assert "refused" in reask[2].content


def test_a_cut_off_reply_is_never_accepted_even_when_its_prefix_parses() -> None:
    model = ScriptedModel(
        [Reply(text='{"text": "a"}', finish_reason="length"), {"text": "complete"}]
    )
    completion, _ = _ask(model)
    assert completion.parsed == Said(text="complete")
    assert [s.max_tokens for s in model.request_settings] == [BUDGET, 2 * BUDGET]


# -- the cache: only valid replies, replayed before any request ------------------------------


def test_a_call_that_needed_a_re_ask_is_replayed_whole_and_sends_nothing(tmp_path: Path) -> None:
    """Issue 28 item 1: the valid reply was stored under the re-ask conversation, so a re-run
    sent the first request again (and got another reply, changing every later call)."""
    cache = ResponseCache(tmp_path / "cache.sqlite")
    first = ScriptedModel([Reply(text='{"nope": 1}', usage=_usage(11, 5, 1)),
                           Reply(text='{"text": "ok"}', usage=_usage(17, 3))])  # fmt: skip
    made = UsageMeter()
    completion, attempts = _ask(first, cache=cache, meter=made)
    assert completion.parsed == Said(text="ok") and attempts == 2
    assert len(cache) == 1  # the valid reply only, invalid one never

    second = ScriptedModel([])  # raises if asked anything
    meter = UsageMeter()
    replayed, attempts = _ask(second, cache=cache, meter=meter)
    assert second.requests == [] and cache.hits == 1
    assert replayed.parsed == Said(text="ok") and attempts == 2
    assert replayed.usage == completion.usage == _usage(17, 3)
    # counted as the run that made it counted it: both attempts, the re-ask, all tokens
    assert meter.snapshot() == made.snapshot()
    assert (meter.calls, meter.retries, meter.prompt_tokens, meter.completion_tokens) == (
        2, 1, 28, 8)  # fmt: skip
    assert meter.by_model["scripted"][0] == 2


def test_a_call_left_unfinished_after_an_invalid_reply_starts_again_from_its_first_request(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    broken = ScriptedModel(['{"nope": 1}'])
    with pytest.raises(ModelOutputError):
        _ask(broken, cache=cache, max_retries=0)
    assert len(cache) == 0
    healthy = ScriptedModel([{"text": "ok"}])
    completion, attempts = _ask(healthy, cache=cache)
    assert completion.parsed == Said(text="ok") and attempts == 1
    assert healthy.requests[0][0] == PROMPT  # the first request, not a re-ask


def test_a_provider_fault_before_the_reply_is_replayed_as_its_two_attempts(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    made = UsageMeter()
    faulty = ScriptedModel([ProviderError("scripted: server error 500"), {"text": "ok"}])
    _, attempts = _ask(faulty, cache=cache, meter=made, provider_retries=1)
    assert attempts == 2 and made.calls == 2 and made.by_model["scripted"][0] == 1
    meter = UsageMeter()
    _, attempts = _ask(ScriptedModel([]), cache=cache, meter=meter)
    assert attempts == 2 and meter.snapshot() == made.snapshot()


def test_a_cached_reply_that_no_longer_validates_is_asked_afresh_and_replaced(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    model = ScriptedModel([{"text": "fresh"}])
    settings = ModelSettings(max_tokens=BUDGET)
    slot = cache_slot(cache, model, PROMPT, Said, settings)
    assert slot is not None
    cache.put(slot.key, model.name, '{"text": 5}', TokenUsage())  # e.g. written by hand
    completion, attempts = _ask(model, cache=cache)
    assert completion.parsed == Said(text="fresh") and attempts == 1
    assert len(model.requests) == 1 and model.requests[0][0] == PROMPT  # the call, afresh
    stored = cache.get(slot.key)
    assert stored is not None and stored.text == '{"text": "fresh"}'
    again = ScriptedModel([])
    completion, _ = _ask(again, cache=cache)
    assert completion.parsed == Said(text="fresh") and again.requests == []


def test_a_cache_file_of_the_old_layout_opens_and_its_invalid_rows_are_dropped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    model = ScriptedModel([])
    valid_key = cache_slot(
        ResponseCache(tmp_path / "scratch.sqlite"),
        model,
        PROMPT,
        Said,
        ModelSettings(max_tokens=BUDGET),
    )
    assert valid_key is not None
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
            "text TEXT NOT NULL, reason TEXT, error TEXT, prompt_tokens INTEGER NOT NULL, "
            "completion_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, "
            "created REAL NOT NULL)"
        )
        db.execute(
            "INSERT INTO responses VALUES (?, 'scripted', '{\"text\": \"old\"}', NULL, NULL, "
            "7, 3, 0, 0)",
            (valid_key.key,),
        )
        db.execute(
            "INSERT INTO responses VALUES ('other', 'scripted', '{\"te', 'parse_failure', "
            "'reply is not valid JSON', 7, 0, 0, 0)"
        )
    cache = ResponseCache(path)
    assert len(cache) == 1
    meter = UsageMeter()
    completion, attempts = _ask(model, cache=cache, meter=meter)
    assert completion.parsed == Said(text="old") and model.requests == []
    # a row without its call's cost is replayed as one attempt that cost its reply's tokens
    assert attempts == 1 and (meter.prompt_tokens, meter.completion_tokens) == (7, 3)
    # the previous version still writes its nine-column rows into this file
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO responses VALUES ('older', 'm', '{}', NULL, NULL, 1, 1, 0, 0)")
    assert len(cache) == 2


# -- an OpenAI-compatible server that cuts replies off -----------------------------------------


def _valid(body: dict[str, Any]) -> str:
    schema = body["response_format"]["json_schema"]["schema"]
    return json.dumps(fill_schema(schema, random.Random(json.dumps(body["messages"]))))


def test_a_truncated_reply_from_an_openai_server_is_asked_again_with_twice_the_budget() -> None:
    config = RunConfig(model="m", judges=RunConfig().judges[:2], max_tokens=300, backoff=0.01)

    def responder(body: dict[str, Any]) -> ServerReply:
        text = _valid(body)
        if body["max_tokens"] < 600:
            return ServerReply(content=text[: len(text) // 3], finish_reason="length")
        return ServerReply(content=text)

    with FakeOpenAIServer(responder=responder) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        result = judge_transcript_sync(transcript(), config=config, model=model, seed=1)
        budgets = sorted(r.body["max_tokens"] for r in server.records)
    assert budgets == [300, 300, 600, 600]
    assert all(e.status == "scored" and e.attempts == 2 for e in result.evaluations)
    assert result.usage.calls == 4 and result.usage.retries == 2
    # the truncated attempts' tokens are counted too
    assert result.usage.completion_tokens == sum(
        len(responder(r.body).content or "") // 4 for r in server.records
    )


def test_a_refusal_from_an_openai_server_leaves_the_judge_unscored_with_the_refusal() -> None:
    config = RunConfig(model="m", judges=RunConfig().judges[:2], max_retries=1, backoff=0.01)

    def responder(body: dict[str, Any]) -> ServerReply:
        # the content would parse into valid scores; the refusal says the model declined
        return ServerReply(content=_valid(body), refusal="I cannot judge this debate.")

    with FakeOpenAIServer(responder=responder) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        result = judge_transcript_sync(transcript(), config=config, model=model, seed=1)
        calls = len(server.records)
    assert calls == 4  # each judge was asked again once
    for evaluation in result.evaluations:
        assert evaluation.status == "unscored" and evaluation.scores is None
        assert evaluation.reason == "refused"
        assert evaluation.raw == "I cannot judge this debate."
        assert evaluation.attempts == 2
    assert result.decision.outcome == "insufficient"


# -- the cache-replay case: cut off, interrupted, resumed --------------------------------------


class CutOffClosing:
    """The PRO closing is cut off at the run's budget; with twice the budget it is answered,
    or, while ``broken``, the server fails (the first run dies there)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.broken = True

    @staticmethod
    def is_pro_closing(body: dict[str, Any]) -> bool:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        return "You are the PRO side" in system and "Write your closing" in user

    def __call__(self, body: dict[str, Any]) -> ServerReply:
        text = _valid(body)
        if not self.is_pro_closing(body):
            return ServerReply(content=text)
        if body["max_tokens"] < 2 * self.budget:
            return ServerReply(content=text[: len(text) // 2], finish_reason="length")
        return ServerReply(status=500) if self.broken else ServerReply(content=text)


def test_a_run_cut_off_by_the_budget_then_interrupted_resumes_from_the_cache(
    tmp_path: Path,
) -> None:
    config = RunConfig(model="m", max_tokens=200, provider_retries=0, backoff=0.01)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    responder = CutOffClosing(config.max_tokens)

    async def once(server: FakeOpenAIServer) -> DebateResult:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        try:
            return await run_debate(
                "Should we adopt the plan?",
                config=config,
                model=model,
                seed=3,
                run=Run(cache=cache),
            )
        finally:
            await model.aclose()

    with FakeOpenAIServer(responder=responder) as server:
        with pytest.raises(DebaterError, match="PRO debater could not produce its closing"):
            asyncio.run(once(server))
        first = len(server.records)
        stored = len(cache)  # the debaters' replies the interrupted run completed
        responder.broken = False
        resumed = asyncio.run(once(server))
        second = server.records[first:]
        again = asyncio.run(once(server))
        third = server.records[first + len(second) :]

    def kinds(records: list[Any]) -> list[str]:
        return sorted(
            f"closing@{r.body['max_tokens']}"
            if CutOffClosing.is_pro_closing(r.body)
            else ("judge" if r.system.startswith("You are one judge") else "debater")
            for r in records
        )

    # Resumed: the closing is asked at the run's budget (the cut-off reply was not stored),
    # then afresh at twice the budget; openings and cross-examinations come from the cache
    # (the CON closing too, unless the failure cancelled it before it was answered).
    assert [k for k in kinds(second) if k != "debater"] == [
        "closing@200",
        "closing@400",
        "judge",
        "judge",
        "judge",
        "judge",
    ]
    # Every other debater step (two openings, two cross-examinations, CON's closing) is asked
    # again exactly when the interrupted run had not stored its reply: none is repeated. How
    # many were still in flight when the failure cancelled them depends on timing (the
    # sides run concurrently; under load CON can be a step behind), so it is read, not fixed.
    assert kinds(second).count("debater") == 5 - stored
    assert len(resumed.transcript.closings) == 2
    assert resumed.usage.calls == 11  # ten steps, one re-ask
    # The valid reply at twice the budget was stored under the call's first request: a
    # third run sends nothing, and is the same debate with the same usage.
    assert kinds(third) == []
    assert again == resumed
