"""A model wrapper that replays completed calls from the response cache."""

from __future__ import annotations

import asyncio
from functools import partial

from debate.exceptions import ModelOutputError
from debate.models._base import (
    Completion,
    Message,
    Model,
    ModelSettings,
    T,
    TokenUsage,
    json_schema_of,
    parse_reply,
)
from debate.runtime._wrapper import ModelWrapper
from debate.storage._cache import ResponseCache, request_key


class CachedModel(ModelWrapper):
    """Wraps a model: replies come from the cache when present, and are stored when new."""

    def __init__(self, inner: Model, cache: ResponseCache, *, endpoint: str | None = None) -> None:
        super().__init__(inner)
        self.cache = cache
        self.endpoint = endpoint
        self.hits = 0
        self.misses = 0

    async def complete(
        self, messages: list[Message], schema: type[T], settings: ModelSettings | None = None
    ) -> Completion[T]:
        """Replay a stored reply or ask the wrapped model and store what it said."""
        settings = settings or ModelSettings()
        key = request_key(self.name, self.endpoint, messages, json_schema_of(schema), settings)
        stored = await asyncio.to_thread(self.cache.get, key)
        if stored is not None:
            self.hits += 1
            if stored.reason is not None:
                raise ModelOutputError(
                    stored.error or stored.reason, raw=stored.text, reason=stored.reason
                )
            parsed = parse_reply(stored.text, schema)
            return Completion(parsed=parsed, text=stored.text, usage=stored.usage, model=self.name)
        self.misses += 1
        try:
            completion = await self.inner.complete(messages, schema, settings)
        except ModelOutputError as exc:
            store = partial(
                self.cache.put,
                key,
                self.name,
                exc.raw,
                TokenUsage(),
                reason=exc.reason,
                error=str(exc),
            )
            await asyncio.to_thread(store)
            raise
        await asyncio.to_thread(self.cache.put, key, self.name, completion.text, completion.usage)
        return completion
