"""The response cache as :func:`~debate.runtime._ask.ask` uses it: look up, then store.

The cache is consulted above the model boundary, so what is stored is decided where the
reply is validated: only a valid reply is stored, and a replayed reply is validated again
like a fresh one. SQLite work runs in a worker thread so the event loop keeps going.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from debate.models._base import Message, Model, ModelSettings, Reply, ReplySchema
from debate.models._schema import json_schema_of
from debate.storage._cache import ResponseCache, request_key


@dataclass(frozen=True)
class CacheSlot:
    """Where one request's reply lives in the cache."""

    cache: ResponseCache
    key: str
    model: str

    async def replay(self) -> Reply | None:
        """The stored reply, with the usage it cost when it was made; None on a miss."""
        stored = await asyncio.to_thread(self.cache.get, self.key)
        if stored is None:
            return None
        answered = stored.model or self.model  # who answered when the reply was made
        return Reply(text=stored.text, usage=stored.usage, finish_reason=None, model=answered)

    async def store(self, reply: Reply) -> None:
        """Keep a reply that validated (never call this with an invalid one)."""
        answered = reply.model or self.model
        await asyncio.to_thread(self.cache.put, self.key, answered, reply.text, reply.usage)


def cache_slot(
    cache: ResponseCache | None,
    model: Model,
    messages: list[Message],
    schema: ReplySchema,
    settings: ModelSettings,
) -> CacheSlot | None:
    """The slot of one request, keyed by model, endpoint, messages, schema and settings."""
    if cache is None:
        return None
    endpoint = getattr(model, "base_url", None)
    key = request_key(model.name, endpoint, messages, json_schema_of(schema), settings)
    return CacheSlot(cache, key, model.name)
