"""The response cache as :func:`~debate.runtime._ask.ask` uses it: look up, then store.

The cache is consulted above the model boundary, so what is stored is decided where the
reply is validated: only a valid reply is stored, and a replayed reply is validated again
like a fresh one. A call has one slot, keyed by its original request: the re-asks and
retries it took are its attempts, stored beside the reply (:class:`CallCost`) so that a
replay counts them as the run that made them did. Writes run in a worker thread so the
event loop keeps going (those waiting together share one transaction); so do lookups,
unless they are local reads (SQLite's); a network's are grouped likewise.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from debate.models import Message, Model, ModelSettings, Reply, ReplySchema, json_schema_of
from debate.storage import CallCost, ResponseCache, canonical_json, keyed_request


@dataclass(frozen=True)
class Replayed:
    """A call's stored reply and what the call took when it was made."""

    reply: Reply
    cost: CallCost


@dataclass(frozen=True)
class CacheSlot:
    """Where one call's reply lives in the cache."""

    cache: ResponseCache
    key: str
    model: str

    async def replay(self) -> Replayed | None:
        """The stored reply, with the usage it cost when it was made; None on a miss."""
        if self.cache.local_reads:
            stored = self.cache.get(self.key)
        else:
            stored = await self.cache.get_async(self.key)
        if stored is None:
            return None
        answered = stored.model or self.model  # who answered when the reply was made
        reply = Reply(text=stored.text, usage=stored.usage, finish_reason=None, model=answered)
        return Replayed(reply, stored.call_cost)

    async def store(self, reply: Reply, cost: CallCost, *, replace: bool = False) -> None:
        """Keep a reply that validated (never call this with an invalid one).

        ``replace`` overwrites a stored reply (one that no longer validated when replayed).
        """
        answered = reply.model or self.model
        await self.cache.put_async(
            self.key, answered, reply.text, reply.usage, cost, replace=replace
        )


@lru_cache(maxsize=1024)
def _schema_key(schema: ReplySchema) -> str:
    """A reply model's part of its calls' keys, serialized once per model."""
    return canonical_json(json_schema_of(schema))


def cache_slot(
    cache: ResponseCache | None,
    model: Model,
    messages: list[Message],
    schema: ReplySchema,
    settings: ModelSettings,
) -> CacheSlot | None:
    """The slot of one call, keyed by its original request.

    ``messages`` and ``settings`` are those of the call's first attempt (``max_tokens``
    resolved): model, endpoint, messages, schema and settings make the key, never a re-ask's
    conversation or a retry's larger budget, so a re-run finds every call that completed
    however many attempts it took.
    """
    if cache is None:
        return None
    endpoint = getattr(model, "base_url", None)
    key = keyed_request(model.name, endpoint, messages, _schema_key(schema), settings)
    return CacheSlot(cache, key, model.name)
