"""Shared builders for tests: transcripts and judge functions with planted scores."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from debate.models._base import Message
from debate.records._transcript import Argument, Closing, CrossExamination, Transcript
from tests.openai_server import FakeOpenAIServer

ROLE = re.compile(r"# Your role: (\w+) judge")


def transcript(pro: int = 3, con: int = 3, topic: str = "Should we adopt the plan?") -> Transcript:
    args = [
        Argument(id=f"{side}-{i}", claim=f"{side} claim {i}", reasoning="because", evidence="data")
        for side, n in (("PRO", pro), ("CON", con))
        for i in range(1, n + 1)
    ]
    cross = [
        CrossExamination(
            round=1,
            by="CON" if a.side == "PRO" else "PRO",
            target=a.id,
            challenge="why?",
            concession="",
            rebuttal="no",
        )
        for a in args
    ]
    closings = [Closing(side="PRO", statement="yes"), Closing(side="CON", statement="no")]
    return Transcript(topic=topic, arguments=args, cross_examinations=cross, closings=closings)


def schema_ids(schema: type[BaseModel]) -> list[str]:
    js = schema.model_json_schema()
    scores = js["properties"]["scores"]
    ref = scores["$ref"].rsplit("/", 1)[-1]
    return list(js["$defs"][ref]["properties"])


def role_of(messages: list[Message]) -> str:
    match = ROLE.search(messages[1].content)
    assert match, "not a judge request"
    return match.group(1)


def rubric(score: int, standing: str = "UPHELD") -> dict[str, Any]:
    return {
        "logic": score,
        "evidence": score,
        "responsiveness": score,
        "honesty": score,
        "standing": standing,
        "note": "n",
    }


def planted_judges(
    plan: Callable[[str, str], int | str | dict[str, Any]],
) -> Callable[[list[Message], type[BaseModel]], str]:
    """A judge function: ``plan(role, argument_id)`` gives a score (standing derived from it),
    a full rubric dict, or the string "RAW:..." to return that raw text for the whole reply."""

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        role = role_of(messages)
        scores: dict[str, Any] = {}
        for arg_id in schema_ids(schema):
            value = plan(role, arg_id)
            if isinstance(value, str) and value.startswith("RAW:"):
                return value[4:]
            if isinstance(value, int):
                standing = (
                    "UPHELD" if value >= 7 else "REFUTED" if value <= 4 else "PARTIALLY_UPHELD"
                )
                value = rubric(value, standing)
            scores[arg_id] = value
        return json.dumps({"scores": scores, "key_finding": f"{role} done"})

    return reply


def served(server: FakeOpenAIServer) -> list[str]:
    """The flags that point a command at the test server."""
    return ["--model", "m", "--base-url", server.base_url]
