"""The JSON shapes the models are asked to produce.

Length limits are part of the shape: they keep a structured debate structured, and they
bound what a small local model can generate (every limit becomes part of its grammar).

Free text that is commentary (a judge's note and key finding, a reviewer's notes) is
different: its limit is still in the JSON schema, so a grammar keeps it short, but a longer
text is cut to the limit and marked cut (``note_cut``, ``key_finding_cut``, ``notes_cut``)
rather than rejected, because rejecting it would throw away the scores beside it.

Keyed replies are built per debate so that every argument id is a *required* property of
one object: a grammar (llama.cpp) or a strict schema (OpenAI) then forces exactly one entry
per argument, and a reply that skips, repeats or invents an id fails validation instead of
being matched by list position.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any, ClassVar

from pydantic import BaseModel, Field, create_model, model_validator
from pydantic.json_schema import SkipJsonSchema

from debate.models import json_schema_of
from debate.records import Frozen, RubricScore

NOTE_CHARS = 200
KEY_FINDING_CHARS = 300


def commentary(limit: int) -> Any:
    """A free-text reply field whose limit goes to the model but is not enforced on the reply.

    The limit is in the JSON schema (so a grammar or a strict schema keeps the text short);
    a reply over it is cut by :func:`cut_commentary`, not rejected.
    """
    return Field(json_schema_extra={"maxLength": limit})


def cut_commentary(data: Any, limits: Mapping[str, int]) -> Any:
    """A raw reply object with each commentary field cut to its limit and marked cut.

    ``limits`` maps a field name to its limit; a field cut gets ``<name>_cut = True``. The
    marks are set here only: a reply that carries one itself is rejected, since the model
    does not get to say what it wrote.
    """
    if not isinstance(data, dict):
        return data
    for name in limits:
        if f"{name}_cut" in data:
            raise ValueError(f"{name}_cut is not a field of the reply; leave it out")
    cut = dict(data)
    for name, limit in limits.items():
        text = data.get(name)
        if isinstance(text, str) and len(text) > limit:
            cut[name] = text[:limit]
            cut[f"{name}_cut"] = True
    return cut


class Commented(Frozen):
    """A reply whose commentary fields are cut to their limits instead of rejected.

    A commentary field is one made by :func:`commentary` with a ``<name>_cut`` flag beside
    it; the limits are read from the fields, so a reply type states each limit once.
    """

    @model_validator(mode="before")
    @classmethod
    def _cut_commentary(cls, data: Any) -> Any:
        return cut_commentary(data, _limits(cls))


@cache
def _limits(model: type[BaseModel]) -> dict[str, int]:
    """The limit of each commentary field of ``model`` (see :class:`Commented`)."""
    found: dict[str, int] = {}
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and f"{name}_cut" in model.model_fields:
            found[name] = int(extra["maxLength"])  # type: ignore[arg-type]
    return found


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


class RubricDraft(RubricScore, Commented):
    """A judge's assessment of one argument."""

    note: str = commentary(NOTE_CHARS)
    """Asked for in every reply, and bounded (the record's note may be empty)."""
    note_cut: SkipJsonSchema[bool] = False
    """Set by the validator when the note was cut; not part of the schema sent."""


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


class _JudgeReplyBase(Commented):
    """A judge's reply, whose schema in any order of the ids is derived from one order's."""

    ids: ClassVar[tuple[str, ...]] = ()
    """The argument ids, in the order the judge was shown them (set by :func:`judge_reply`)."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Pydantic's schema, made from that of the ids in sorted order when they are not.

        Each judge is shown the arguments in its own order, so nearly every debate has a
        new order, and generating a schema cost pydantic more CPU than the rest of a judge's
        call. Only the order of the scores' properties and required ids depends on it.
        """
        ids = cls.ids
        canonical = tuple(sorted(ids))
        if args or kwargs or ids == canonical or len(set(ids)) != len(ids):
            return super().model_json_schema(*args, **kwargs)
        schema = json_schema_of(judge_reply(canonical))
        scores = schema["$defs"][keyed_reply("rubric", ids).__name__]
        scores["properties"] = {key: scores["properties"][key] for key in ids}
        scores["required"] = list(ids)
        return schema


@lru_cache(maxsize=256)
def judge_reply(ids: tuple[str, ...]) -> type[BaseModel]:
    """The judge's reply: scores keyed by every argument id, then a key finding."""
    model: type[_JudgeReplyBase] = create_model(
        "JudgeReply",
        __base__=_JudgeReplyBase,  # an over-long key finding is cut, the scores kept
        scores=(keyed_reply("rubric", ids), ...),
        key_finding=(str, commentary(KEY_FINDING_CHARS)),
        key_finding_cut=(SkipJsonSchema[bool], False),
    )
    model.ids = ids
    return model


def keyed_items(reply: BaseModel, ids: tuple[str, ...]) -> dict[str, Any]:
    """The drafts of a keyed reply, by id, in the given order."""
    return {key: getattr(reply, f"k{i}") for i, key in enumerate(ids)}
