"""Shared builders for tests: transcripts, judge and reviewer replies with planted scores."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from debate.models import Message
from debate.records import (
    COUNCIL_DIMENSIONS,
    Argument,
    Closing,
    CrossExamination,
    DebateResult,
    PanelResult,
    RunConfig,
    Transcript,
)
from tests.support.openai_server import FakeOpenAIServer

ROLE = re.compile(r"# Your role: (\w+) judge")
RESPONSE = re.compile(r"## Response (\w+)\n<<response-\w+:\w+>>\n(.*?)\n<</", re.S)
"""A candidate in a council review request: its label and its text."""


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


def rubric(score: int, standing: str = "UPHELD", note: str = "n") -> dict[str, Any]:
    return {
        "logic": score,
        "evidence": score,
        "responsiveness": score,
        "honesty": score,
        "standing": standing,
        "note": note,
    }


def graded(score: int, note: str = "n") -> dict[str, Any]:
    """A rubric whose standing follows from the score, as a consistent judge's would."""
    standing = "UPHELD" if score >= 7 else "REFUTED" if score <= 4 else "PARTIALLY_UPHELD"
    return rubric(score, standing, note)


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
                value = graded(value)
            scores[arg_id] = value
        return json.dumps({"scores": scores, "key_finding": f"{role} done"})

    return reply


def served(server: FakeOpenAIServer) -> list[str]:
    """The flags that point a command at the test server."""
    return ["--model", "m", "--base-url", server.base_url, "--api-key-env", ""]


def as_result(panel: PanelResult, debate: Transcript, config: RunConfig) -> DebateResult:
    """The debate result a run would record for this panel's verdict on ``debate``."""
    return DebateResult(
        topic=debate.topic, transcript=debate, config=config, version="test", **dict(panel)
    )


def shown_candidates(messages: list[Message]) -> list[tuple[str, str]]:
    """The (label, text) of each candidate a council review request shows, in shown order."""
    return list(RESPONSE.findall(messages[1].content))


def review_reply(scores: Mapping[str, int]) -> str:
    """A council reviewer's reply: every dimension of each label at its score, ranked by
    score (highest first)."""
    evaluations = {
        label: dict.fromkeys(COUNCIL_DIMENSIONS, s) | {"notes": "n"} for label, s in scores.items()
    }
    ranking = sorted(scores, key=lambda label: -scores[label])
    return json.dumps({"evaluations": evaluations, "ranking": ranking})


def free_port() -> int:
    """A loopback port free now (for a server a test starts as a process of its own)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def processes_with(*parts: str) -> list[int]:
    """The pids of running processes whose command line holds every one of ``parts``.

    Forks share their parent's command line, so this finds a command's forked copies too.
    """
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and all(part.encode() in command for part in parts):
            found.append(int(entry.name))
    return found
