"""Reply bounds: the grammar's longest reply, max_tokens derived from it, the loop guard, and
the plan line that comes before any model work (no model is run here; the real grammar on
the embedded model is in tests/e2e/test_local_model.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, Field

from debate._cli.progress import ProgressPrinter
from debate.council._review import Answer, review_reply
from debate.exceptions import ModelOutputError
from debate.models import Message, ModelSettings, Reply
from debate.models._schema import (
    FALLBACK_MAX_TOKENS,
    UnsupportedSchema,
    reply_grammar,
    reply_max_tokens,
    sent_schema,
)
from debate.models.local import RepetitionGuard
from debate.models.test import ScriptedModel
from debate.runtime import (
    CallContext,
    CallPolicy,
    ClosingDraft,
    Planned,
    StepFinished,
    UsageMeter,
    ask,
    deliberation_reply,
    judge_reply,
    keyed_reply,
)

IDS = ("PRO-1", "PRO-2", "CON-1", "CON-2")
SCHEMAS = [
    keyed_reply("argument", ("PRO-1", "PRO-2", "PRO-3")),
    keyed_reply("exam", ("CON-1", "CON-2")),
    ClosingDraft,
    judge_reply(IDS),
    review_reply(("A", "B", "C"), True),
    Answer,
    deliberation_reply(("PRO-1", "CON-2")),
]


def _longest(node: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The longest value the schema allows: every string full, every choice the longest."""
    if "$ref" in node:
        return _longest(defs[node["$ref"].removeprefix("#/$defs/")], defs)
    if "enum" in node:
        return max(node["enum"], key=lambda v: len(json.dumps(v)))
    if "anyOf" in node:
        return max((_longest(o, defs) for o in node["anyOf"]), key=lambda v: len(_spaced(v)))
    kind = node["type"]
    if kind == "null":
        return None
    if kind == "object":
        return {k: _longest(v, defs) for k, v in node["properties"].items()}
    if kind == "array":
        items = node["items"]
        return [_longest(items, defs)] * node["maxItems"] if "enum" not in items else items["enum"]
    if kind == "boolean":
        return False
    return "x" * node["maxLength"]


def _spaced(value: Any) -> str:
    """JSON text with a space in every place the grammar allows one."""
    if isinstance(value, dict):
        body = " , ".join(f"{json.dumps(k)} : {_spaced(v)}" for k, v in value.items())
        return "{ " + body + " }"
    if isinstance(value, list):
        return "[ " + " , ".join(_spaced(v) for v in value) + " ]"
    return json.dumps(value)


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
def test_the_bound_is_the_longest_valid_reply(schema: type[BaseModel]) -> None:
    """The counted bound is exactly the byte size of the longest reply, which validates."""
    node = sent_schema(schema)
    text = _spaced(_longest(node, node.get("$defs", {})))
    schema.model_validate_json(text)
    grammar = reply_grammar(schema)
    assert grammar.max_bytes == len(text.encode())
    assert reply_max_tokens(schema) == len(text.encode()) + 1


@pytest.mark.parametrize("ids", [("A1", "B1", "A2"), ("B2", "A1", "B1", "A2", "B3")])
def test_the_bound_alone_is_the_grammars(ids: tuple[str, ...]) -> None:
    """reply_max_tokens walks the schema without writing the grammar: the same bound."""
    for schema in (judge_reply(ids), judge_reply(tuple(sorted(ids)))):
        assert reply_max_tokens(schema) == reply_grammar(schema).max_tokens


def test_the_grammar_bounds_every_string_in_bytes() -> None:
    grammar = reply_grammar(ClosingDraft).gbnf
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    assert rules["reply"].count("b899") == 1  # minLength 1: one character, then <= 899 bytes
    assert rules["b1"] == "( c1 )?"
    assert rules["b4"] == "( c1 b3 | c2 b2 | c3 b1 | c4 )?"
    assert "b901" not in rules and "b900" in rules


class Loose(BaseModel):
    text: str


class Pattern(BaseModel):
    code: str = Field(pattern="^[A-Z]+$", max_length=5)


def test_a_schema_without_a_bound_has_no_derived_max_tokens() -> None:
    assert reply_grammar(Loose).max_bytes is None and reply_max_tokens(Loose) is None
    with pytest.raises(UnsupportedSchema):
        reply_grammar(Pattern)  # a pattern is not bounded here: llama.cpp's converter is used
    assert reply_max_tokens(Pattern) is None


def _asked(schema: type[BaseModel], reply: str, settings: ModelSettings) -> ScriptedModel:
    model = ScriptedModel([reply])
    call = CallContext(CallPolicy(max_retries=0, provider_retries=0, backoff=0.0), UsageMeter())
    messages = [Message(role="user", content="go")]
    asyncio.run(ask(model, messages, schema, settings, call, phase="closing", actor="PRO"))
    return model


def test_max_tokens_is_derived_from_the_reply_schema_unless_set() -> None:
    closing = '{"statement": "done"}'
    derived = _asked(ClosingDraft, closing, ModelSettings())
    assert derived.request_settings[0].max_tokens == reply_max_tokens(ClosingDraft) == 921
    explicit = _asked(ClosingDraft, closing, ModelSettings(max_tokens=300))
    assert explicit.request_settings[0].max_tokens == 300  # a cap set by hand is honoured
    loose = _asked(Loose, '{"text": "x"}', ModelSettings())
    assert loose.request_settings[0].max_tokens == FALLBACK_MAX_TOKENS


def test_a_looping_reply_is_a_failed_reply_shown_back_not_repaired() -> None:
    loop = '{"statement": "and so on and so on and so on'
    model = ScriptedModel(
        [Reply(text=loop, finish_reason="repetition"), Reply(text='{"statement": "done"}')]
    )
    call = CallContext(CallPolicy(max_retries=1, provider_retries=0, backoff=0.0), UsageMeter())
    messages = [Message(role="user", content="close")]
    completion, attempts = asyncio.run(
        ask(model, messages, ClosingDraft, ModelSettings(), call, phase="closing", actor="PRO")
    )
    assert attempts == 2 and completion.parsed.statement == "done"
    second = model.requests[1][0]
    assert second[1].content == loop and "kept repeating" in second[2].content
    # the same budget: a loop is not a reply that needed more room
    assert model.request_settings[1].max_tokens == model.request_settings[0].max_tokens
    only = ScriptedModel([Reply(text=loop, finish_reason="repetition")])
    none = CallContext(CallPolicy(max_retries=0, provider_retries=0, backoff=0.0), UsageMeter())
    with pytest.raises(ModelOutputError, match="kept repeating") as info:
        asyncio.run(
            ask(only, messages, ClosingDraft, ModelSettings(), none, phase="closing", actor="PRO")
        )
    assert info.value.raw == loop and info.value.reason == "parse_failure"


def test_the_plan_line_comes_first_and_each_step_counts_down(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printer = ProgressPrinter()
    printer(Planned(command="run", total=4))
    plan = capsys.readouterr().err
    assert plan.startswith("plan: 4 model calls")
    finished = StepFinished(
        phase="opening",
        actor="PRO",
        elapsed=1.0,
        prompt_tokens=10,
        completion_tokens=5,
        cached_tokens=0,
        attempts=1,
        ok=True,
    )
    printer(finished)
    printer(finished)
    lines = capsys.readouterr().err.splitlines()
    assert " 1/4, ~" in lines[0] and "s left" in lines[0]
    assert " 2/4, ~" in lines[1]
    printer(finished)
    printer(finished)
    last = capsys.readouterr().err.splitlines()[-1]
    assert " 4/4 " in last and "left" not in last


def _guard_stops(tokens: list[int], prompt: int = 5) -> tuple[bool, int | None]:
    """Feed ``tokens`` one at a time, as llama-cpp-python does; whether and where it stopped."""
    guard = RepetitionGuard()
    for end in range(prompt, len(tokens) + 1):
        if guard(np.array(tokens[:end]), None):
            return True, guard.cycle
    return False, None


def test_the_repetition_guard_stops_an_exact_loop_and_nothing_else() -> None:
    prompt = [9, 9, 9, 9, 9]  # a repetitive prompt is not the reply's loop
    assert _guard_stops(prompt + [7] * 30) == (True, 1)
    assert _guard_stops(prompt + [1, 2, 3] * 12) == (True, 3)
    assert _guard_stops(prompt + list(range(10, 22)) * 4) == (True, 12)
    assert _guard_stops(prompt + [7] * 20) == (False, None)  # under 24 tokens of loop
    assert _guard_stops(prompt + list(range(100))) == (False, None)
    varied = [t for i in range(20) for t in (1, 2, 3, 100 + i)]  # "item 1, item 2, ..."
    assert _guard_stops(prompt + varied) == (False, None)  # left to the penalty and bounds
