"""The LLM boundary: one protocol that every backend implements.

Everything above this module talks to a :class:`Model`; only the backends know about HTTP,
llama.cpp or scripted replies. Backends move bytes: a backend returns the :class:`Reply` as
the model gave it (text, usage, why it stopped, a refusal) or raises
:class:`~debate.exceptions.ProviderError`; it never parses, validates or invents a reply.
Parsing, re-asking, truncation and caching happen once, above this boundary, in
:func:`debate.runtime._ask.ask`, so every backend gets the same rules and every attempt's
usage is counted.
"""

from __future__ import annotations

from typing import Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class ModelSettings(BaseModel):
    """Sampling settings of one call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = 0.2
    max_tokens: int | None = None
    """Cap on generated tokens; None: the bound derived from the reply schema (``ask``
    resolves it before a request is sent, so a backend always receives a number)."""
    seed: int | None = None
    timeout: float = 120.0
    """Seconds one call to a server may take in all (connecting, queueing, every byte of the
    reply), not the gap allowed between two bytes: a reply trickled past it fails the call.
    The embedded model does not use it."""


class TokenUsage(BaseModel):
    """Tokens of one call, as the provider reported them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the provider did not have to evaluate again (prefix cache)."""


ReplySchema: TypeAlias = type[BaseModel]
"""The pydantic model a reply must validate against (backends send its JSON schema)."""


class Reply(BaseModel):
    """A model's raw reply, before anyone parsed it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    """The reply exactly as received (empty when the model sent no content)."""
    usage: TokenUsage = Field(default_factory=TokenUsage)
    finish_reason: str | None = "stop"
    """Why generation stopped: ``stop``, ``length`` (cut off by ``max_tokens``),
    ``content_filter``, another provider-specific value, or None when not reported."""
    refusal: str | None = None
    """The model's refusal message, when it declined to answer (OpenAI's ``refusal``)."""
    latency: float = 0.0
    """Seconds from request to reply."""
    model: str = ""
    """The model name the server reported (may name a snapshot of the requested model)."""


@runtime_checkable
class Model(Protocol):
    """What the debate and the panel need from a language model."""

    @property
    def name(self) -> str:
        """Model name, recorded in every evaluation."""
        ...

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Ask for one reply; ``schema`` is sent as the response format or grammar.

        The reply is returned as given, valid or not: the caller validates it.

        Raises:
            ProviderError: the call failed (HTTP error, timeout, connection).
        """
        ...
