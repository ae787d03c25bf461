"""The LLM boundary: one protocol that every backend implements.

Everything above this module talks to a :class:`Model`; only the backends know about HTTP,
llama.cpp or scripted replies. A backend returns a :class:`Completion` holding the parsed
object, or raises :class:`~debate.exceptions.ModelOutputError` (keeping the raw text) or
:class:`~debate.exceptions.ProviderError`; it never invents a reply.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from debate.exceptions import ModelOutputError

T = TypeVar("T", bound=BaseModel)


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class ModelSettings(BaseModel):
    """Sampling settings of one call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = 0.2
    max_tokens: int = 1024
    seed: int | None = None
    timeout: float = 120.0


class TokenUsage(BaseModel):
    """Tokens of one call, as the provider reported them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the provider did not have to evaluate again (prefix cache)."""


class Completion(BaseModel, Generic[T]):
    """A model's reply: the parsed object, the text it came from, usage and latency."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    parsed: T
    text: str
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency: float = 0.0
    """Seconds from request to reply."""
    model: str = ""


@runtime_checkable
class Model(Protocol):
    """What the debate and the panel need from a language model."""

    @property
    def name(self) -> str:
        """Model name, recorded in every evaluation."""
        ...

    async def complete(
        self,
        messages: list[Message],
        schema: type[T],
        settings: ModelSettings | None = None,
    ) -> Completion[T]:
        """Ask for one reply that validates against ``schema``.

        Raises:
            ModelOutputError: the reply is not valid JSON or violates the schema.
            ProviderError: the call failed (HTTP error, timeout, connection).
        """
        ...


@lru_cache(maxsize=1024)
def _schema_text(schema: type[BaseModel]) -> str:
    return json.dumps(schema.model_json_schema())


def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to a provider or turned into a grammar (a fresh copy).

    Generating a schema costs pydantic a few milliseconds, which is most of this package's
    CPU time per call when it is done every call; it is generated once per model class.
    """
    value: dict[str, Any] = json.loads(_schema_text(schema))
    return value


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
