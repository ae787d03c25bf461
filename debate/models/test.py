"""Offline test doubles, shipped in the package so that users' tests can use them too.

:class:`ScriptedModel` replays a list of replies and raises once they run out;
:class:`FunctionModel` lets a function compute each reply from the request.
Neither touches the network. Like every backend they return the raw :class:`Reply` (text,
usage, ``finish_reason="stop"``) and leave parsing to the caller; a scripted reply may also be
a ready :class:`Reply`, so a test can script a reply cut off by the budget
(``finish_reason="length"``) or a refusal.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pydantic import BaseModel

from debate.exceptions import DebateError
from debate.models._base import Message, ModelSettings, Reply, ReplySchema, TokenUsage
from debate.models._schema import json_schema_of

ScriptedReply = Reply | str | dict[str, Any] | BaseModel | Exception
"""A reply a double gives: a raw :class:`Reply` as is, JSON text, a dict or pydantic object
(serialised to JSON), or an exception to raise."""
ReplyFunction = Callable[[list[Message], type[BaseModel]], ScriptedReply | Awaitable[ScriptedReply]]


def _to_text(reply: str | dict[str, Any] | BaseModel) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json(by_alias=True)
    return json.dumps(reply)


def _approx_tokens(text: str) -> int:
    # A rough count (4 characters a token) so that usage totals are not all zero offline.
    return max(1, len(text) // 4)


class _DoubleBase:
    __test__ = False  # not a pytest test class, despite the module name

    def __init__(self, name: str, delay: float) -> None:
        self._name = name
        self.delay = delay
        self.requests: list[tuple[list[Message], type[BaseModel]]] = []
        """Messages and schema of each request, in order."""
        self.request_settings: list[ModelSettings] = []
        """Settings of each request, in order (e.g. to see a doubled ``max_tokens``)."""

    @property
    def name(self) -> str:
        """Model name recorded in results."""
        return self._name

    def _record(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None
    ) -> None:
        self.requests.append((messages, schema))
        self.request_settings.append(settings or ModelSettings())

    async def _finish(self, messages: list[Message], reply: ScriptedReply) -> Reply:
        if self.delay:
            await asyncio.sleep(self.delay)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, Reply):
            return reply if reply.model else reply.model_copy(update={"model": self._name})
        text = _to_text(reply)
        prompt = sum(_approx_tokens(m.content) for m in messages)
        usage = TokenUsage(prompt_tokens=prompt, completion_tokens=_approx_tokens(text))
        return Reply(text=text, usage=usage, finish_reason="stop", model=self._name)


class ScriptedModel(_DoubleBase):
    """Replies from a fixed script, in order; raises :class:`DebateError` when it runs out.

    A reply may be a JSON string, a dict, a pydantic object, a raw :class:`Reply` (to script
    ``finish_reason`` or a refusal), or an exception to raise.
    """

    def __init__(
        self, outputs: Iterable[ScriptedReply], *, name: str = "scripted", delay: float = 0.0
    ) -> None:
        super().__init__(name, delay)
        self._outputs = list(outputs)
        self._next = 0

    @property
    def remaining(self) -> int:
        """Replies not used yet."""
        return len(self._outputs) - self._next

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Return the next scripted reply."""
        self._record(messages, schema, settings)
        if self._next >= len(self._outputs):
            raise DebateError(
                f"ScriptedModel {self._name!r} ran out of replies after {len(self._outputs)}"
            )
        reply = self._outputs[self._next]
        self._next += 1
        return await self._finish(messages, reply)


class FunctionModel(_DoubleBase):
    """Computes each reply with ``function(messages, schema)`` (sync or async)."""

    def __init__(
        self, function: ReplyFunction, *, name: str = "function", delay: float = 0.0
    ) -> None:
        super().__init__(name, delay)
        self._function = function

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Call the function and return what it gives as a reply."""
        self._record(messages, schema, settings)
        reply = self._function(messages, schema)
        if inspect.isawaitable(reply):
            reply = await reply
        return await self._finish(messages, reply)


_WORDS = (
    "the team measured latency cost risk evidence deployment budget users incident data "
    "release growth audit plan trade-off baseline estimate quarter service scale review"
).split()


def fill_schema(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value that satisfies a JSON schema, drawn from ``rng`` (placeholder text, random ints).

    Shared by :class:`TestModel` and by test servers that must answer any request validly.
    """
    return _fill(schema, schema.get("$defs", {}), rng)


def _fill(node: dict[str, Any], defs: dict[str, Any], rng: random.Random) -> Any:
    if "$ref" in node:
        return _fill(defs[node["$ref"].rsplit("/", 1)[-1]], defs, rng)
    if "enum" in node:
        return rng.choice(node["enum"])
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        return _fill(options[0], defs, rng)
    kind = node.get("type")
    if kind == "object":
        return {key: _fill(sub, defs, rng) for key, sub in node.get("properties", {}).items()}
    if kind == "array":
        return [_fill(node.get("items", {}), defs, rng) for _ in range(2)]
    if kind == "integer":
        return rng.randint(int(node.get("minimum", 0)), int(node.get("maximum", 10)))
    if kind == "number":
        return round(rng.uniform(node.get("minimum", 0.0), node.get("maximum", 1.0)), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    limit = int(node.get("maxLength", 200))
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 14)))
    return words[: max(limit, 1)].strip() or "text"


class TestModel(_DoubleBase):
    """Fills any requested schema with valid, seeded placeholder values.

    Useful to exercise the whole pipeline offline (``--model scripted``): the text is
    filler and the scores are random within their bounds, so its verdicts mean nothing.
    """

    def __init__(self, *, seed: int = 0, name: str = "scripted", delay: float = 0.0) -> None:
        super().__init__(name, delay)
        self._rng = random.Random(seed)

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Generate a value of ``schema`` from its JSON schema."""
        self._record(messages, schema, settings)
        value = fill_schema(json_schema_of(schema), self._rng)
        return await self._finish(messages, value)
