"""A global limiter for requests and tokens per minute, shared by every call of a batch.

Sliding 60-second windows: a call waits until both the number of requests and the number of
tokens started in the last 60 seconds leave room for it. Token use is estimated before the
call (prompt characters / 4 + ``max_tokens``) and corrected with the provider's count after.
The clock and the sleep are injectable so the rule can be tested on a fake clock.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from debate._checks import check_cap
from debate.models import Message, Model, ModelSettings, Reply, ReplySchema
from debate.records import MAX_PER_MINUTE

WINDOW = 60.0


@dataclass
class _Entry:
    at: float
    tokens: int
    ref: int = 0
    """The grant's number where the window is held (:class:`RemoteLimiter`)."""


class RateLimiter:
    """At most ``rpm`` requests and ``tpm`` tokens in any 60-second window."""

    def __init__(
        self,
        rpm: int | None = None,
        tpm: int | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        check_cap("--rpm", rpm, MAX_PER_MINUTE, "no limit")
        check_cap("--tpm", tpm, MAX_PER_MINUTE, "no limit")
        self.rpm = rpm
        self.tpm = tpm
        self.clock = clock
        self.sleep = sleep
        self._log: deque[_Entry] = deque()
        self._lock = asyncio.Lock()

    def _trim(self, now: float) -> None:
        while self._log and self._log[0].at <= now - WINDOW:
            self._log.popleft()

    def _wait_time(self, now: float, tokens: int) -> float:
        self._trim(now)
        waits = [0.0]
        if self.rpm is not None and len(self._log) >= self.rpm:
            waits.append(self._log[len(self._log) - self.rpm].at + WINDOW - now)
        if self.tpm is not None:
            used = sum(e.tokens for e in self._log)
            if used + tokens > self.tpm and self._log:
                # wait until enough of the oldest entries have left the window
                freed, target = 0, used + tokens - self.tpm
                for entry in self._log:
                    freed += entry.tokens
                    if freed >= target:
                        waits.append(entry.at + WINDOW - now)
                        break
        return max(waits)

    async def acquire(self, tokens: int = 0) -> _Entry:
        """Wait for room, then record a request of (estimated) ``tokens``."""
        if self.tpm is not None:
            tokens = min(tokens, self.tpm)  # a single call larger than the budget still runs
        async with self._lock:  # first come, first served
            while True:
                now = self.clock()
                wait = self._wait_time(now, tokens)
                if wait <= 0:
                    entry = _Entry(now, tokens)
                    self._log.append(entry)
                    return entry
                await self.sleep(wait)

    def settle(self, entry: _Entry, actual_tokens: int) -> None:
        """Replace the estimate with the provider's count."""
        entry.tokens = actual_tokens


Ask = Callable[[int], Awaitable[int]]
"""Asks the window's holder for a request of ``tokens``; awaits its grant's number."""
Tell = Callable[[int, int], None]
"""Tells that process a grant's real token count (``ref``, ``tokens``)."""


class RemoteLimiter(RateLimiter):
    """A limiter whose window is kept by another process (a Ray actor, for a batch's workers).

    The workers of ``debate batch --engine ray`` share one ``--rpm``/``--tpm`` (and each
    endpoint's limits) by asking the actor that holds the one :class:`RateLimiter` of each
    (:mod:`debate.batch._ray`): ``acquire`` is one round trip there, and ``settle`` one
    message. The window stays one window, first come first served, whichever worker or
    machine a call is from.
    """

    def __init__(self, rpm: int | None, tpm: int | None, ask: Ask, tell: Tell) -> None:
        super().__init__(rpm, tpm)
        self._ask = ask
        self._tell = tell

    async def acquire(self, tokens: int = 0) -> _Entry:
        """Wait for the window holder's grant of a request of (estimated) ``tokens``."""
        return _Entry(self.clock(), tokens, await self._ask(tokens))

    def settle(self, entry: _Entry, actual_tokens: int) -> None:
        """Send the provider's count to the window's holder."""
        self._tell(entry.ref, actual_tokens)


class LimitedModel:
    """A model whose calls pass through a shared :class:`RateLimiter`.

    It stays a wrapper (unlike the cache, which ``ask`` consults) because it only meters
    requests: it neither reads nor judges a reply, and a cached reply never reaches it.
    It forwards ``name``, ``base_url``, ``endpoint`` and ``aclose`` to the wrapped model, so
    results, track records and cache keys name the real model and where it is served.
    """

    def __init__(self, inner: Model, limiter: RateLimiter) -> None:
        self.inner = inner
        self.limiter = limiter

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    @property
    def base_url(self) -> str | None:
        """The wrapped model's endpoint, if it has one."""
        return getattr(self.inner, "base_url", None)

    @property
    def endpoint(self) -> str | None:
        """The wrapped model's endpoint name, if it is served by a named endpoint."""
        return getattr(self.inner, "endpoint", None)

    async def aclose(self) -> None:
        """Close the wrapped model's client, if it has one."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Wait for the limiter, call, and settle the token count."""
        settings = settings or ModelSettings()
        estimate = sum(len(m.content) for m in messages) // 4 + (settings.max_tokens or 0)
        entry = await self.limiter.acquire(estimate)
        reply = await self.inner.complete(messages, schema, settings)
        usage = reply.usage
        self.limiter.settle(entry, usage.prompt_tokens + usage.completion_tokens or estimate)
        return reply
