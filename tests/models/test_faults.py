"""Fault injection: every failure is visible, no score is invented, completed calls survive.

An OpenAI-compatible server on 127.0.0.1 injects faults into 30 % of replies; the tests
compare each result with the server's own log of what it sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from debate import DebaterError, RunConfig, run_debate
from debate.models.openai import OpenAIModel
from debate.models.test import fill_schema
from debate.records import DebateResult
from debate.runtime import Run
from debate.storage import ResponseCache
from tests.support.openai_server import FakeOpenAIServer, Reply, empty_first_try, is_reask

KINDS = ("http_500", "http_429", "hang", "truncated", "missing_key", "empty", "wrong_ids")
REASON = {
    "http_500": "provider_error",
    "http_429": "provider_error",
    "hang": "timeout",
    "truncated": "parse_failure",
    "empty": "parse_failure",
    "missing_key": "schema_violation",
    "wrong_ids": "schema_violation",
}
HANG = 3.5
TIMEOUT = 2.0  # a whole call (connect and every byte), far above a normal reply even on a busy CPU


@dataclass
class Sent:
    body: dict[str, Any]
    kind: str | None
    valid: Any

    @property
    def step(self) -> str:
        system, prompt = self.body["messages"][0]["content"], self.body["messages"][1]["content"]
        if "# Your role:" in prompt:
            return "judge:" + prompt.split("# Your role: ")[1].split(" judge")[0]
        side = "PRO" if "You are the PRO side" in system else "CON"
        for marker, name in (
            ("Write your opening", "opening"),
            ("Cross-examination, round", "cross"),
            ("Write your closing", "closing"),
        ):
            if marker in prompt:
                return f"{name}:{side}"
        raise AssertionError("unknown request")


def _rename_ids(value: dict[str, Any]) -> dict[str, Any]:
    if "scores" in value:
        return {**value, "scores": {k.replace("-", "_"): v for k, v in value["scores"].items()}}
    return {k.replace("-", "_") + "_": v for k, v in value.items()}


class FaultInjector:
    """Faults drawn from a generator seeded by the request and how often it was seen, so the
    same debates get the same faults however the concurrent requests interleave."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.seed = seed
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.sent: list[Sent] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        schema = body["response_format"]["json_schema"]["schema"]
        key = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()
        with self.lock:
            self.seen[key] += 1
            rng = random.Random(f"{self.seed}:{key}:{self.seen[key]}")
            kind = rng.choice(KINDS) if rng.random() < self.rate else None
            valid = fill_schema(schema, rng)
            self.sent.append(Sent(body, kind, valid))
        text = json.dumps(valid)
        if kind == "http_500":
            return Reply(status=500)
        if kind == "http_429":
            return Reply(status=429, headers={"retry-after-ms": "20"})
        if kind == "hang":
            return Reply(content=text, hang=HANG)
        if kind == "truncated":
            return Reply(content=text[: len(text) // 2])
        if kind == "missing_key":
            first = next(iter(valid))
            return Reply(content=json.dumps({k: v for k, v in valid.items() if k != first}))
        if kind == "empty":
            return Reply(content="")
        if kind == "wrong_ids":
            return Reply(content=json.dumps(_rename_ids(valid)))
        return Reply(content=text)


def test_fault_injection_suite() -> None:
    injector = FaultInjector(rate=0.3, seed=13)
    config = RunConfig(model="m", timeout=TIMEOUT, backoff=0.01)
    topics = [f"Debate {i}: should team {i} adopt the plan?" for i in range(40)]

    async def one(server: FakeOpenAIServer, topic: str) -> DebateResult | DebaterError:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        try:
            return await run_debate(topic, config=config, model=model, seed=1)
        except DebaterError as exc:
            return exc
        finally:
            await model.aclose()

    async def all_debates(server: FakeOpenAIServer) -> list[DebateResult | DebaterError]:
        outcomes: list[DebateResult | DebaterError] = []
        for start in range(0, len(topics), 6):
            batch = topics[start : start + 6]
            outcomes += await asyncio.gather(*(one(server, t) for t in batch))
        return outcomes

    with FakeOpenAIServer(responder=injector) as server:
        outcomes = asyncio.run(all_debates(server))
        time.sleep(HANG + 0.2)  # let hung handlers finish so the log is complete

    faults = Counter(s.kind for s in injector.sent if s.kind)
    totals = Counter()
    for topic, outcome in zip(topics, outcomes, strict=True):
        mine = [s for s in injector.sent if topic in json.dumps(s.body)]
        if isinstance(outcome, DebaterError):
            totals["debater_failures"] += 1
            print("debater failure:", outcome)
            assert "could not produce" in str(outcome)
            continue
        totals["debates"] += 1
        assert outcome.usage.calls == len(mine)
        steps = Counter(s.step for s in mine)
        assert len(steps) == 10
        assert outcome.usage.retries == len(mine) - 10
        totals["retries"] += outcome.usage.retries
        unscored = 0
        for evaluation in outcome.evaluations:
            tries = [s for s in mine if s.step == f"judge:{evaluation.role}"]
            last = tries[-1]
            if last.kind is None:
                assert evaluation.status == "scored"
                assert evaluation.scores is not None
                sent = last.valid["scores"]
                got = {k: v.model_dump(exclude={"note_cut"}) for k, v in evaluation.scores.items()}
                assert got == sent, "a score the server did not send"
                assert not any(v.note_cut for v in evaluation.scores.values())  # notes fit
                totals["scores_checked"] += len(got)
            else:
                unscored += 1
                assert evaluation.status == "unscored" and evaluation.scores is None
                assert evaluation.reason == REASON[last.kind]
                if evaluation.reason in ("parse_failure", "schema_violation"):
                    assert evaluation.raw is not None
        assert outcome.agreement.judges_unscored == unscored
        totals["unscored"] += unscored
        if outcome.agreement.judges_scored < 2:
            assert outcome.decision.outcome == "insufficient"
    print(
        f"\nfault suite: {dict(totals)}; faults injected {dict(faults)}; "
        f"requests {len(injector.sent)}"
    )
    assert totals["debates"] + totals["debater_failures"] == len(topics)
    assert totals["debater_failures"] <= 4
    assert totals["unscored"] > 0  # the unscored path was exercised
    assert sum(faults.values()) > 0.2 * len(injector.sent)
    assert set(faults) == set(KINDS)


def test_retry_after_is_honoured() -> None:
    calls: list[float] = []

    def responder(body: dict[str, Any]) -> Reply:
        if "# Your role: technical judge" in body["messages"][1]["content"]:
            calls.append(time.monotonic())
            if len(calls) == 1:
                return Reply(status=429, headers={"Retry-After": "1"})
        schema = body["response_format"]["json_schema"]["schema"]
        return Reply(content=json.dumps(fill_schema(schema, random.Random(0))))

    from debate import judge_transcript_sync
    from tests.support.helpers import transcript

    with FakeOpenAIServer(responder=responder) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        config = RunConfig(model="m", judges=RunConfig().judges[:2], backoff=0.01)
        result = judge_transcript_sync(transcript(), config=config, model=model)
    assert len(calls) == 2
    assert calls[1] - calls[0] >= 0.95  # waited for Retry-After, not the 10 ms backoff
    assert result.usage.retries == 1
    assert all(e.status == "scored" for e in result.evaluations)


def test_deadline_leaves_slow_judges_unscored() -> None:
    from debate import judge_transcript_sync
    from tests.support.helpers import transcript

    def responder(body: dict[str, Any]) -> Reply:
        slow = "# Your role: risk judge" in body["messages"][1]["content"]
        valid = fill_schema(body["response_format"]["json_schema"]["schema"], random.Random(1))
        return Reply(content=json.dumps(valid), hang=6.0 if slow else 0.0)

    with FakeOpenAIServer(responder=responder) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        config = RunConfig(model="m", deadline=1.0, timeout=10)
        start = time.monotonic()
        result = judge_transcript_sync(transcript(), config=config, model=model)
        elapsed = time.monotonic() - start
    assert elapsed < 4.5  # the 1 s deadline, not the 6 s hang (margin for a busy CPU)
    risk = next(e for e in result.evaluations if e.role == "risk")
    assert risk.status == "unscored" and risk.reason == "timeout"
    assert result.agreement.judges_scored == 3
    assert any("risk" in r for r in result.decision.reasons)


class GatedServer:
    """Deterministic replies (seeded by the request); after ``gate`` answers, requests wait."""

    def __init__(self, gate: int | None) -> None:
        self.gate = gate
        self.answered = 0
        self.waiting = 0
        self.dropped = 0
        self.release = threading.Event()
        self.drop = False
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            blocked = self.gate is not None and self.answered >= self.gate
            if blocked:
                self.waiting += 1
        if blocked:
            self.release.wait(30)
            if self.drop:
                with self.lock:
                    self.dropped += 1
                return Reply(status=599, body="dropped")
        digest = hashlib.sha256(json.dumps(body["messages"]).encode()).digest()
        valid = fill_schema(body["response_format"]["json_schema"]["schema"], random.Random(digest))
        with self.lock:
            self.answered += 1
        return Reply(content=json.dumps(valid))


def _command(base_url: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "debate._cli.main",
        "run",
        "Should we adopt the plan?",
        "--model",
        "m",
        "--base-url",
        base_url,
        "--api-key-env",
        "",
        "--out",
        str(out),
        "--seed",
        "3",
        "--quiet",
    ]


def test_killed_run_resumes_and_resends_only_unfinished_calls(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    straight = GatedServer(gate=None)
    with FakeOpenAIServer(responder=straight) as server:
        subprocess.run(_command(server.base_url, tmp_path / "a"), check=True, env=env, timeout=120)
    uninterrupted = straight.answered
    assert uninterrupted == 10

    gated = GatedServer(gate=2)
    with FakeOpenAIServer(responder=gated) as server:
        proc = subprocess.Popen(_command(server.base_url, tmp_path / "b"), env=env)
        deadline = time.monotonic() + 60
        while not (gated.answered == 2 and gated.waiting == 2):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        gated.drop = True
        gated.release.set()
        time.sleep(0.3)
        assert not (tmp_path / "b" / "result.json").exists()
        gated.gate, gated.drop = None, False
        subprocess.run(_command(server.base_url, tmp_path / "b"), check=True, env=env, timeout=120)
    print(
        f"\nkill/resume: uninterrupted {uninterrupted} calls; interrupted run answered 2, "
        f"dropped {gated.dropped} in flight; total answered {gated.answered}"
    )
    assert gated.dropped == 2
    assert gated.answered == uninterrupted  # only the two unfinished calls were sent again
    first = json.loads((tmp_path / "a" / "result.json").read_text())
    resumed = json.loads((tmp_path / "b" / "result.json").read_text())
    first["config"].pop("base_url")  # the two servers listen on different ports
    resumed["config"].pop("base_url")
    assert first == resumed


def test_a_reply_cut_off_by_the_token_budget_is_asked_again_with_twice_the_budget() -> None:
    from pydantic import BaseModel

    from debate.models import Message, ModelSettings, Reply, TokenUsage
    from debate.runtime import CallContext, CallPolicy, UsageMeter, ask

    class Said(BaseModel):
        text: str

    class CutOff:
        """Runs out of budget below 2048 tokens; answers within it."""

        name = "cut-off"

        def __init__(self) -> None:
            self.seen: list[tuple[int, int]] = []

        async def complete(
            self, messages: list[Message], schema: type[Said], settings: ModelSettings
        ) -> Reply:
            self.seen.append((settings.max_tokens, len(messages)))
            if settings.max_tokens < 2048:
                usage = TokenUsage(prompt_tokens=50, completion_tokens=settings.max_tokens)
                return Reply(
                    text='{"text": "and so on and so on', usage=usage, finish_reason="length"
                )
            usage_ok = TokenUsage(prompt_tokens=50, completion_tokens=1500)
            return Reply(text='{"text": "done"}', usage=usage_ok, finish_reason="stop")

    model = CutOff()
    completion, attempts = asyncio.run(
        ask(
            model,  # type: ignore[arg-type]
            [Message(role="user", content="say it")],
            Said,
            ModelSettings(max_tokens=1024),
            CallContext(CallPolicy(max_retries=2), UsageMeter()),
            phase="opening",
            actor="PRO",
        )
    )
    assert completion.parsed.text == "done" and attempts == 2
    # the second ask doubled the budget and did not carry the truncated text along
    assert model.seen == [(1024, 1), (2048, 1)]


# -- issue 28 item 1: a call that needed a re-ask is replayed whole ---------------------------


def _run_argv(base_url: str, out: Path) -> list[str]:
    return _command(base_url, out)[3:]  # the same command, run in this process


def test_a_run_whose_every_call_needed_a_re_ask_is_replayed_and_sends_nothing(
    tmp_path: Path,
) -> None:
    """Every call's first try is empty, so every call needs a re-ask. The same command again
    sends 0 requests (the valid replies were stored under the re-ask conversation: the
    re-run sent every call's first request again, 10 of 20) and is the same debate."""
    from debate._cli.main import main

    out = tmp_path / "out"
    with FakeOpenAIServer(responder=empty_first_try) as server:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(_run_argv(server.base_url, out)) == 0
            first = json.loads((out / "result.json").read_text())
            sent = len(server.records)
            assert main(_run_argv(server.base_url, out)) == 0
        again = len(server.records) - sent
    second = json.loads((out / "result.json").read_text())
    print(f"\nre-ask then re-run: first run {sent} requests, second {again}")
    assert sent == 20 and sum(is_reask(r.body) for r in server.records) == 10
    assert again == 0
    assert second == first  # decision, scores, usage: nothing in result.json is timing
    assert first["usage"]["calls"] == 20 and first["usage"]["retries"] == 10


def test_a_function_model_empty_on_every_first_try_is_replayed_whole(tmp_path: Path) -> None:
    """The issue's measurement with a FunctionModel: first run 18 requests, the same run
    again 9 (0 expected)."""
    from debate.models import Message
    from debate.models.test import FunctionModel

    def reply(messages: list[Message], schema: Any) -> str:
        if not is_reask({"messages": [m.model_dump() for m in messages]}):
            return ""
        digest = hashlib.sha256(json.dumps([m.model_dump() for m in messages]).encode()).digest()
        return json.dumps(fill_schema(schema.model_json_schema(), random.Random(digest)))

    config = RunConfig(arguments=1, rounds=1, judges=RunConfig().judges[:3])
    cache = tmp_path / "cache.sqlite"
    results, counts = [], []
    for _ in range(2):
        model = FunctionModel(reply, name="m")
        again = Run(cache=ResponseCache(cache))  # a fresh process on the same file
        run = run_debate("Adopt it?", config=config, model=model, seed=5, run=again)
        results.append(asyncio.run(run))
        counts.append(len(model.requests))
    assert counts == [18, 0]
    assert results[1] == results[0]
