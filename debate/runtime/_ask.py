"""One structured model call with re-asking, retries and accounting.

Debaters and judges both go through :func:`ask`, so that a reply that does not validate is
always handled the same way: the model is shown its own reply and the validation error and
asked again, up to ``max_retries`` times; then the last error is raised with the raw reply
kept. Provider faults (timeouts, 5xx, 429, refused connections) are retried with
exponential backoff. Nothing here ever substitutes a value for a missing one.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field

from debate.exceptions import ModelOutputError, ProviderError
from debate.models._base import Completion, Message, Model, ModelSettings, T
from debate.records._config import RunConfig
from debate.records._result import CallUsage, TokenCounts, Usage
from debate.runtime._events import EventHandler, Phase, StepFinished, StepStarted
from debate.runtime._pricing import PriceTable

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


async def ask(
    model: Model,
    messages: list[Message],
    schema: type[T],
    settings: ModelSettings,
    *,
    policy: CallPolicy,
    meter: UsageMeter,
    phase: Phase,
    actor: str,
    round: int | None = None,
    on_event: EventHandler | None = None,
) -> tuple[Completion[T], int]:
    """Ask ``model`` for a reply matching ``schema``; re-ask on invalid output.

    Returns:
        The completion and the number of attempts it took.

    Raises:
        ModelOutputError: still invalid after ``policy.max_retries`` re-asks (raw kept).
        ProviderError: the provider kept failing after ``policy.provider_retries`` retries.
    """
    if on_event:
        on_event(StepStarted(phase=phase, actor=actor, round=round))
    start = time.perf_counter()
    conversation = list(messages)
    attempts = 0
    invalid = 0
    faults = 0
    tokens = [0, 0, 0]
    busy = [0.0]

    def finish(ok: bool, detail: str | None = None) -> None:
        meter.per_call.append(
            CallUsage(
                phase=phase,
                actor=actor,
                round=round,
                model=model.name,
                attempts=attempts,
                ok=ok,
                prompt_tokens=tokens[0],
                completion_tokens=tokens[1],
                cached_tokens=tokens[2],
            )
        )
        if on_event:
            on_event(
                StepFinished(
                    phase=phase,
                    actor=actor,
                    elapsed=time.perf_counter() - start,
                    prompt_tokens=tokens[0],
                    completion_tokens=tokens[1],
                    cached_tokens=tokens[2],
                    attempts=attempts,
                    ok=ok,
                    round=round,
                    detail=detail,
                    model_seconds=busy[0],
                )
            )

    def count(prompt: int, completion: int, cached: int) -> None:
        tokens[0] += prompt
        tokens[1] += completion
        tokens[2] += cached
        meter.add_tokens(model.name, prompt, completion, cached)

    while True:
        attempts += 1
        meter.calls += 1
        if attempts > 1:
            meter.retries += 1
        try:
            completion = await model.complete(conversation, schema, settings)
        except ModelOutputError as exc:
            if exc.usage is not None:
                count(*exc.usage)
            invalid += 1
            logger.info("%s %s: invalid reply (%s), attempt %d", phase, actor, exc.reason, attempts)
            if invalid > policy.max_retries:
                finish(False, exc.reason)
                raise
            if exc.usage is not None and exc.usage[1] >= settings.max_tokens:
                # Cut off by the token budget, not wrong: showing the model its truncated
                # text would not help, so ask afresh with twice the budget.
                settings = settings.model_copy(update={"max_tokens": settings.max_tokens * 2})
                conversation = list(messages)
                continue
            conversation = [
                *messages,
                Message(role="assistant", content=exc.raw),
                Message(role="user", content=REASK.format(error=str(exc))),
            ]
            continue
        except ProviderError as exc:
            faults += 1
            logger.info("%s %s: provider fault (%s), attempt %d", phase, actor, exc.kind, attempts)
            if faults > policy.provider_retries:
                finish(False, exc.kind)
                raise
            delay = policy.backoff * (2 ** (faults - 1)) * (0.5 + random.random())
            if exc.retry_after is not None:
                delay = max(delay, min(exc.retry_after, policy.max_wait))
            await asyncio.sleep(delay)
            continue
        usage = completion.usage
        busy[0] += completion.latency
        count(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)
        finish(True)
        return completion, attempts
