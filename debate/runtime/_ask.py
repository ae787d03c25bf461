"""One structured model call with re-asking, retries, accounting and the response cache.

Every model call of the package (debaters, judges, the topic classifier, council reviewers)
goes through :func:`ask`, the one place above the model boundary where a raw reply becomes
a typed object. So a reply that does not validate is always handled the same way whatever
the backend: the model is shown its own reply and the validation error and asked again, up
to ``max_retries`` times, then the last error is raised with the raw reply, the attempts and
their total usage. A refusal is an invalid reply. A reply cut off by the token budget
(``finish_reason == "length"``) is asked afresh with twice the budget, since showing the
model its truncated text would not help. Provider faults (timeouts, 5xx, 429, refused
connections) are retried with exponential backoff. Every attempt's usage is counted, valid
or not. Only a valid reply is stored in the cache, and a cached reply is replayed (and
validated) before any request is sent. Nothing here ever substitutes a value for a missing
one.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field

from debate.exceptions import ModelOutputError, ProviderError
from debate.models._base import Message, Model, ModelSettings, Reply
from debate.records._config import RunConfig
from debate.records._result import CallUsage, TokenCounts, Usage
from debate.runtime._cached import CacheSlot, cache_slot
from debate.runtime._events import EventHandler, Phase, StepFinished, StepRetried, StepStarted
from debate.runtime._parse import Completion, T, check_reply, is_truncated
from debate.runtime._pricing import PriceTable
from debate.storage._cache import ResponseCache

logger = logging.getLogger(__name__)

REASK = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only one JSON object that matches the required schema exactly."
)


PHASE_ORDER = {
    "opening": 0,
    "cross_examination": 1,
    "closing": 2,
    "topic": 3,
    "judge": 4,
    "council": 5,
}


@dataclass
class UsageMeter:
    """Accumulates usage over a run (asyncio is single-threaded, so no lock is needed)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    retries: int = 0
    by_model: dict[str, list[int]] = field(default_factory=dict)
    per_call: list[CallUsage] = field(default_factory=list)
    prices: PriceTable | None = None

    def add_tokens(self, model: str, prompt: int, completion: int, cached: int) -> None:
        """Count one attempt's tokens."""
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cached_tokens += cached
        row = self.by_model.setdefault(model, [0, 0, 0, 0])
        row[0] += 1
        row[1] += prompt
        row[2] += completion
        row[3] += cached

    def snapshot(self) -> Usage:
        """Frozen copy for a result; per-call rows in a stable order (not arrival order)."""
        by_model = {
            name: TokenCounts(
                calls=r[0], prompt_tokens=r[1], completion_tokens=r[2], cached_tokens=r[3]
            )
            for name, r in sorted(self.by_model.items())
        }
        per_call = sorted(
            self.per_call,
            key=lambda c: (PHASE_ORDER.get(c.phase, 9), c.round or 0, c.actor, c.model),
        )
        return Usage(
            calls=self.calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cached_tokens=self.cached_tokens,
            retries=self.retries,
            by_model=by_model,
            per_call=per_call,
            cost_usd=None if self.prices is None else self.prices.cost(by_model),
        )


@dataclass(frozen=True)
class CallPolicy:
    """How hard to try."""

    max_retries: int = 2
    """Re-asks after an invalid reply."""
    provider_retries: int = 3
    """Retries after a provider fault."""
    backoff: float = 0.5
    """First backoff delay in seconds; doubles each time, with jitter."""
    max_wait: float = 60.0
    """Longest ``Retry-After`` honoured for one wait, in seconds."""

    @classmethod
    def of(cls, config: RunConfig) -> CallPolicy:
        """The policy a run config asks for."""
        return cls(
            max_retries=config.max_retries,
            provider_retries=config.provider_retries,
            backoff=config.backoff,
        )


@dataclass(frozen=True)
class CallContext:
    """What every call of one run shares, handed to :func:`ask` as one object."""

    policy: CallPolicy
    """How hard to try."""
    meter: UsageMeter
    """Where every attempt's usage is counted."""
    cache: ResponseCache | None = None
    """Valid replies of earlier runs (and of this one); None to always ask the model."""
    on_event: EventHandler | None = None
    """Progress callback."""


@dataclass(frozen=True)
class _Request:
    """What one attempt sends: the conversation and its settings."""

    messages: list[Message]
    settings: ModelSettings


@dataclass
class _Step:
    """One logical call across its attempts: the tally its usage record and events report."""

    call: CallContext
    model: str
    phase: Phase
    actor: str
    round: int | None
    start: float = field(default_factory=time.perf_counter)
    attempts: int = 0
    invalid: int = 0
    faults: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    model_seconds: float = 0.0

    def begin(self) -> None:
        """Count one more attempt (a replay from the cache is an attempt too)."""
        self.attempts += 1
        self.call.meter.calls += 1
        if self.attempts > 1:
            self.call.meter.retries += 1

    def count(self, reply: Reply) -> None:
        """Count an attempt's tokens, whether its reply turns out valid or not."""
        usage = reply.usage
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_tokens += usage.cached_tokens
        self.model_seconds += reply.latency
        self.call.meter.add_tokens(
            self.model, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens
        )

    def reject(self, exc: ModelOutputError) -> None:
        """Note an invalid reply; once the re-asks have run out, raise the final error."""
        self.invalid += 1
        logger.info(
            "%s %s: invalid reply (%s), attempt %d",
            self.phase,
            self.actor,
            exc.reason,
            self.attempts,
        )
        if self.invalid > self.call.policy.max_retries:
            self.finish(False, exc.reason)
            raise ModelOutputError(
                str(exc),
                raw=exc.raw,
                reason=exc.reason,
                usage=(self.prompt_tokens, self.completion_tokens, self.cached_tokens),
                attempts=self.attempts,
            ) from exc
        self.retried(exc.reason)

    async def back_off(self, exc: ProviderError) -> None:
        """Wait before retrying a provider fault; re-raise it once the retries have run out."""
        self.faults += 1
        policy = self.call.policy
        logger.info(
            "%s %s: provider fault (%s), attempt %d",
            self.phase,
            self.actor,
            exc.kind,
            self.attempts,
        )
        if self.faults > policy.provider_retries:
            self.finish(False, exc.kind)
            raise exc
        delay = policy.backoff * (2 ** (self.faults - 1)) * (0.5 + random.random())
        if exc.retry_after is not None:
            delay = max(delay, min(exc.retry_after, policy.max_wait))
        self.retried(exc.kind, delay)
        await asyncio.sleep(delay)

    def retried(self, reason: str, delay: float = 0.0) -> None:
        """Report that the attempt just made failed and another follows."""
        if self.call.on_event:
            self.call.on_event(
                StepRetried(
                    phase=self.phase,
                    actor=self.actor,
                    attempt=self.attempts,
                    reason=reason,
                    round=self.round,
                    delay=delay,
                )
            )

    def started(self) -> None:
        """Report the start of the step."""
        if self.call.on_event:
            self.call.on_event(StepStarted(phase=self.phase, actor=self.actor, round=self.round))

    def finish(self, ok: bool, detail: str | None = None) -> None:
        """Record the step's usage row and report its end."""
        tokens = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
        }
        self.call.meter.per_call.append(
            CallUsage(
                phase=self.phase,
                actor=self.actor,
                round=self.round,
                model=self.model,
                attempts=self.attempts,
                ok=ok,
                **tokens,
            )
        )
        if self.call.on_event:
            self.call.on_event(
                StepFinished(
                    phase=self.phase,
                    actor=self.actor,
                    elapsed=time.perf_counter() - self.start,
                    attempts=self.attempts,
                    ok=ok,
                    round=self.round,
                    detail=detail,
                    model_seconds=self.model_seconds,
                    **tokens,
                )
            )


async def ask(
    model: Model,
    messages: list[Message],
    schema: type[T],
    settings: ModelSettings,
    call: CallContext,
    *,
    phase: Phase,
    actor: str,
    round: int | None = None,
) -> tuple[Completion[T], int]:
    """Ask ``model`` for a reply matching ``schema``; re-ask on invalid output.

    Returns:
        The completion and the number of attempts it took.

    Raises:
        ModelOutputError: still invalid after ``policy.max_retries`` re-asks; it carries the
            last raw reply, the attempts and the total usage of all of them.
        ProviderError: the provider kept failing after ``policy.provider_retries`` retries.
    """
    step = _Step(call, model.name, phase, actor, round)
    step.started()
    request = _Request(list(messages), settings)
    while True:
        step.begin()
        slot = cache_slot(call.cache, model, request.messages, schema, request.settings)
        try:
            reply, replayed = await _fetch(model, request, schema, slot)
        except ProviderError as exc:
            await step.back_off(exc)
            continue
        step.count(reply)
        try:
            parsed = check_reply(reply, schema, max_tokens=request.settings.max_tokens)
        except ModelOutputError as exc:
            step.reject(exc)
            request = _next_request(messages, request, reply, exc)
            continue
        if slot is not None and not replayed:
            await slot.store(reply)
        step.finish(True)
        completion: Completion[T] = Completion(
            parsed=parsed,
            text=reply.text,
            usage=reply.usage,
            latency=reply.latency,
            model=reply.model or model.name,
        )
        return completion, step.attempts


async def _fetch(
    model: Model, request: _Request, schema: type[T], slot: CacheSlot | None
) -> tuple[Reply, bool]:
    """The cached reply of this request if there is one, else the model's; and which."""
    if slot is not None and (stored := await slot.replay()) is not None:
        return stored, True
    return await model.complete(request.messages, schema, request.settings), False


def _next_request(
    messages: list[Message], request: _Request, reply: Reply, exc: ModelOutputError
) -> _Request:
    """What to send after an invalid reply.

    A reply cut off by the token budget is not wrong, only short: the model is asked afresh
    (its truncated text is not shown) with twice the budget. Any other invalid reply is shown
    to the model with the error, after the original messages.
    """
    if is_truncated(reply):
        budget = request.settings.max_tokens * 2
        logger.info("reply cut off by the token budget; asking again with max_tokens=%d", budget)
        return _Request(list(messages), request.settings.model_copy(update={"max_tokens": budget}))
    conversation = [
        *messages,
        Message(role="assistant", content=exc.raw),
        Message(role="user", content=REASK.format(error=str(exc))),
    ]
    return _Request(conversation, request.settings)
