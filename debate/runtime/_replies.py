"""The JSON shapes the models are asked to produce.

Length limits are part of the shape: they keep a structured debate structured, and they
bound what a small local model can generate (every limit becomes part of its grammar).

Keyed replies are built per debate so that every argument id is a *required* property of
one object: a grammar (llama.cpp) or a strict schema (OpenAI) then forces exactly one entry
per argument, and a reply that skips, repeats or invents an id fails validation instead of
being matched by list position.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field, create_model

from debate.records._transcript import Frozen, RubricScore


class ArgumentDraft(Frozen):
    """An argument as a debater writes it (the id is the key it sits under)."""

    claim: str = Field(min_length=1, max_length=300)
    reasoning: str = Field(min_length=1, max_length=700)
    evidence: str = Field(min_length=1, max_length=500)


class ExamDraft(Frozen):
    """A debater's examination of one opposing argument."""

    challenge: str = Field(min_length=1, max_length=400)
    concession: str = Field(max_length=400)
    rebuttal: str = Field(min_length=1, max_length=400)


class ClosingDraft(Frozen):
    """A closing statement."""

    statement: str = Field(min_length=1, max_length=900)


class RubricDraft(RubricScore):
    """A judge's assessment of one argument."""

    note: str = Field(max_length=200)
    """Asked for in every reply, and bounded (the record's note may be empty)."""


_DRAFTS: dict[str, type[Frozen]] = {
    "argument": ArgumentDraft,
    "exam": ExamDraft,
    "rubric": RubricDraft,
}


@lru_cache(maxsize=256)
def keyed_reply(kind: str, ids: tuple[str, ...]) -> type[BaseModel]:
    """An object with one required property per id, each holding a draft of ``kind``."""
    item = _DRAFTS[kind]
    fields: dict[str, Any] = {f"k{i}": (item, Field(alias=key)) for i, key in enumerate(ids)}
    name = {"argument": "Opening", "exam": "CrossExamination", "rubric": "Scores"}[kind]
    model: type[BaseModel] = create_model(name, __base__=Frozen, **fields)
    return model


@lru_cache(maxsize=256)
def judge_reply(ids: tuple[str, ...]) -> type[BaseModel]:
    """The judge's reply: scores keyed by every argument id, then a key finding."""
    model: type[BaseModel] = create_model(
        "JudgeReply",
        __base__=Frozen,
        scores=(keyed_reply("rubric", ids), ...),
        key_finding=(str, Field(max_length=300)),
    )
    return model


def keyed_items(reply: BaseModel, ids: tuple[str, ...]) -> dict[str, Any]:
    """The drafts of a keyed reply, by id, in the given order."""
    return {key: getattr(reply, f"k{i}") for i, key in enumerate(ids)}
