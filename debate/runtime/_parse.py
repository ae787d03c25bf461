"""Turning a model's raw reply into a typed object, or into a reason why it cannot be one.

This is the only place a reply is parsed: every backend hands back bytes
(:class:`~debate.models.Reply`), and :func:`check_reply` applies the same rules to all of
them, so a refusal, a reply cut off by the token budget and a schema violation mean the
same thing whichever backend produced them.
"""

from __future__ import annotations

import json
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from debate.exceptions import ModelOutputError
from debate.models import Reply, TokenUsage

T = TypeVar("T", bound=BaseModel)

TRUNCATED = "length"
"""The ``finish_reason`` of a reply cut off by ``max_tokens``."""

LOOPED = "repetition"
"""The ``finish_reason`` of a reply the embedded model stopped because it was repeating itself
(:class:`debate.models.local.RepetitionGuard`)."""


class Completion(BaseModel, Generic[T]):
    """A valid reply: the parsed object, the text it came from, usage and latency."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    parsed: T
    text: str
    usage: TokenUsage = Field(default_factory=TokenUsage)
    """Tokens of the attempt that gave this reply (a call's total is in its usage record)."""
    latency: float = 0.0
    """Seconds from request to reply (0 for a reply replayed from the cache)."""
    model: str = ""
    """The model name the server reported."""


def is_truncated(reply: Reply) -> bool:
    """True when the model ran out of ``max_tokens`` before it finished its reply."""
    return reply.finish_reason == TRUNCATED


def check_reply(reply: Reply, schema: type[T], *, max_tokens: int) -> T:
    """The reply parsed into ``schema``.

    Raises:
        ModelOutputError: the model refused (``refused``), was cut off by the token budget
            (``parse_failure``: a cut-off reply is never accepted, even when its prefix
            parses), was stopped in a loop (``parse_failure``), or wrote text that is not
            JSON or does not match the schema.
    """
    if reply.refusal:
        raise ModelOutputError(
            f"{reply.model or 'the model'} refused: {reply.refusal}",
            raw=reply.refusal,
            reason="refused",
        )
    if is_truncated(reply):
        raise ModelOutputError(
            f"reply cut off by the token budget (max_tokens={max_tokens})",
            raw=reply.text,
            reason="parse_failure",
        )
    if reply.finish_reason == LOOPED:
        raise ModelOutputError(
            "reply stopped: it kept repeating the same few tokens; write each field once, "
            "in your own words",
            raw=reply.text,
            reason="parse_failure",
        )
    return parse_reply(reply.text, schema)


def parse_reply(text: str, schema: type[T]) -> T:
    """Parse a reply into ``schema``; failures keep the raw text and say why.

    Code fences around the JSON are tolerated (some servers add them in JSON mode); nothing
    else is repaired, because a repaired reply would be a reply the model did not give.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body.removeprefix("json").strip()
    try:
        data = json.loads(body, strict=False)  # raw newlines inside strings are fine
    except json.JSONDecodeError as exc:
        raise ModelOutputError(
            f"reply is not valid JSON: {exc}", raw=text, reason="parse_failure"
        ) from exc
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ModelOutputError(
            f"reply does not match the schema: {_short(exc)}", raw=text, reason="schema_violation"
        ) from exc


def _short(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
