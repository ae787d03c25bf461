"""One structured model call with re-asking, retries, accounting and the response cache.

Every model call of the package (debaters, judges, the topic classifier, council reviewers)
goes through :func:`ask`, the one place above the model boundary where a raw reply becomes
a typed object. So a reply that does not validate is always handled the same way whatever
the backend: the model is shown its own reply and the validation error and asked again, up
to ``max_retries`` times, then the last error is raised with the raw reply, the attempts and
their total usage. A refusal is an invalid reply. A call's token budget (``max_tokens``)
is, unless the caller set one, derived from its reply schema so that every reply within the
schema's lengths fits (:func:`~debate.models._schema.reply_max_tokens`): on a backend whose
grammar enforces those lengths (the embedded model) no valid reply is ever cut off. A reply
cut off by the budget anyway (``finish_reason == "length"``: a cap the caller set, or a
server that does not enforce lengths) is asked afresh with twice the budget, since showing
the model its truncated text would not help. Provider faults (timeouts, 5xx, 429, refused
connections) are retried with exponential backoff. Every attempt's usage is counted, valid
or not. Only a valid reply is stored in the cache, under the call's original request (the
re-asks and retries are attempts of the call, not other keys), with what all the call's
attempts cost; a cached reply is replayed (and validated) before any request is sent, and
counted as the call was when it was made, so a resumed run sends only the calls that had
not completed and records the same usage as an uninterrupted one. Nothing here ever
substitutes a value for a missing one.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from debate.exceptions import BudgetExceeded, ModelOutputError, ProviderError
from debate.models import Message, Model, ModelSettings, Reply, TokenUsage, call_max_tokens
from debate.records import CallUsage, RunConfig, SkippedCall, TokenCounts, Usage
from debate.runtime._budget import Budget, Hold, prompt_bound
from debate.runtime._cached import Replayed, cache_slot
from debate.runtime._events import EventHandler, Phase, StepFinished, StepRetried, StepStarted
from debate.runtime._parse import Completion, T, check_reply, is_truncated
from debate.runtime._pricing import PriceTable
from debate.storage import CallCost, ResponseCache

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
    "deliberation": 6,
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
    """The run's price table; None for the shipped one."""
    budget: Budget | None = None
    """The cap every request of the run is checked against (shared by a batch's items)."""
    skipped: list[SkippedCall] = field(default_factory=list)

    @classmethod
    def for_run(
        cls, prices: PriceTable | None, budget: Budget | None, models: Iterable[str]
    ) -> UsageMeter:
        """A run's meter; a cost cap over a model the table cannot price is refused here.

        Called once the run's models are known and before its first call, so the refusal
        comes before any work (and any spend).
        """
        if budget is not None:
            budget.check_priced(models, prices)
        return cls(prices=prices, budget=budget)

    @property
    def table(self) -> PriceTable:
        """The price table costs are worked out with."""
        return self.prices if self.prices is not None else PriceTable.default()

    def add_tokens(
        self, model: str, prompt: int, completion: int, cached: int, replies: int = 1
    ) -> None:
        """Count the tokens of ``replies`` attempts that got a reply (one, unless replayed)."""
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cached_tokens += cached
        row = self.by_model.setdefault(model, [0, 0, 0, 0])
        row[0] += replies
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
        per_call = sorted(self.per_call, key=_call_order)
        return Usage(
            calls=self.calls,
            **token_counts(self),
            retries=self.retries,
            by_model=by_model,
            per_call=per_call,
            cost_usd=self.table.cost(by_model),
            skipped=sorted(self.skipped, key=_call_order),
            budget=None if self.budget is None else self.budget.caps(),
        )


def token_counts(counted: UsageMeter | _Step) -> dict[str, int]:
    """A meter's or a step's prompt, completion and cached tokens, as keywords.

    For the records that carry all three: the run's usage, a call's row, a step's event.
    """
    return {
        "prompt_tokens": counted.prompt_tokens,
        "completion_tokens": counted.completion_tokens,
        "cached_tokens": counted.cached_tokens,
    }


def _call_order(c: CallUsage | SkippedCall) -> tuple[int, int, str, str]:
    return (PHASE_ORDER.get(c.phase, 9), c.round or 0, c.actor, c.model)


def total_usage(
    usages: Sequence[Usage], prices: PriceTable | None = None, budget: Budget | None = None
) -> Usage:
    """The usage of several runs (a calibration's items) as one, priced with ``prices``.

    Per-call rows and skipped calls are kept in the runs' order; the cost is the table
    applied to the summed tokens per model (None when a model is not priced).
    """
    meter = UsageMeter(prices=prices, budget=budget)
    for usage in usages:
        meter.calls += usage.calls
        meter.retries += usage.retries
        meter.prompt_tokens += usage.prompt_tokens
        meter.completion_tokens += usage.completion_tokens
        meter.cached_tokens += usage.cached_tokens
        for name, c in usage.by_model.items():
            row = meter.by_model.setdefault(name, [0, 0, 0, 0])
            counts = (c.calls, c.prompt_tokens, c.completion_tokens, c.cached_tokens)
            for i, value in enumerate(counts):
                row[i] += value
    total = meter.snapshot()
    return total.model_copy(
        update={
            "per_call": [c for u in usages for c in u.per_call],
            "skipped": [c for u in usages for c in u.skipped],
        }
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

    @classmethod
    def of(
        cls,
        config: RunConfig,
        meter: UsageMeter | None = None,
        cache: ResponseCache | None = None,
        on_event: EventHandler | None = None,
    ) -> CallContext:
        """The context of one run's calls: ``config``'s policy, a fresh meter unless given."""
        return cls(CallPolicy.of(config), meter or UsageMeter(), cache, on_event)


def run_settings(config: RunConfig, seed: int) -> ModelSettings:
    """The sampling settings of every judging call of a run (judges, reviewers, answers)."""
    return ModelSettings(
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        seed=seed,
        timeout=config.timeout,
    )


@dataclass(frozen=True)
class _Request:
    """What one attempt sends: the conversation and its settings (``max_tokens`` set)."""

    messages: list[Message]
    settings: ModelSettings
    max_tokens: int
    """``settings.max_tokens``, resolved (never None)."""

    @classmethod
    def of(cls, messages: list[Message], settings: ModelSettings, max_tokens: int) -> _Request:
        """A request whose settings carry ``max_tokens``."""
        update = {"max_tokens": max_tokens}
        return cls(list(messages), settings.model_copy(update=update), max_tokens)


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
    answered: int = 0
    """Attempts that got a reply (valid or not)."""
    invalid: int = 0
    faults: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    model_seconds: float = 0.0
    endpoint: str | None = None
    """Where the call goes (the model's endpoint name, if it has one)."""
    answered_by: str | None = None
    """The model named in the last reply (the server's report), once one came back."""

    def begin(self) -> None:
        """Count one more attempt."""
        self.attempts += 1
        self.call.meter.calls += 1
        if self.attempts > 1:
            self.call.meter.retries += 1

    def replayed(self, replay: Replayed) -> None:
        """Count a call replayed from the cache as it was counted when it was made.

        Its attempts, re-asks and tokens are those of the run that made it, so a resumed
        run's usage is the uninterrupted run's (the budget is not charged: nothing is sent).
        """
        cost, usage = replay.cost, replay.cost.usage
        meter = self.call.meter
        self.attempts = cost.attempts
        meter.calls += cost.attempts
        meter.retries += cost.attempts - 1
        self.prompt_tokens = usage.prompt_tokens
        self.completion_tokens = usage.completion_tokens
        self.cached_tokens = usage.cached_tokens
        self.answered_by = replay.reply.model or self.model
        meter.add_tokens(
            self.model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens,
            replies=cost.answered,
        )

    def cost(self) -> CallCost:
        """What the call's attempts so far took, as the cache keeps it beside the reply."""
        tokens = TokenUsage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cached_tokens=self.cached_tokens,
        )
        return CallCost(attempts=self.attempts, answered=self.answered, usage=tokens)

    async def hold(self, messages: list[Message], schema: type[T], max_tokens: int) -> Hold | None:
        """Hold the worst case of the request about to be sent; refuse it past the budget.

        A refused request is recorded in ``usage.skipped``; if it was a re-ask or a retry,
        the call's attempts so far get their usage row (not ok), as any failed call does.
        """
        meter = self.call.meter
        if meter.budget is None:
            return None
        prompt = prompt_bound(messages, schema)
        try:
            return await meter.budget.hold_async(self.model, prompt, max_tokens, meter.table)
        except BudgetExceeded as exc:
            logger.warning("%s %s: not sent, %s", self.phase, self.actor, exc)
            meter.skipped.append(
                SkippedCall(
                    phase=self.phase,
                    actor=self.actor,
                    round=self.round,
                    model=self.model,
                    attempt=self.attempts + 1,
                    reason=str(exc),
                )
            )
            self.finish(False, "budget", record=self.attempts > 0)
            exc.attempts = self.attempts
            raise

    def settle(self, hold: Hold | None, reply: Reply | None) -> None:
        """Charge the budget what a sent request really used (nothing if it failed)."""
        meter = self.call.meter
        if hold is not None and meter.budget is not None:
            meter.budget.settle(hold, None if reply is None else reply.usage, meter.table)

    def count(self, reply: Reply) -> None:
        """Count an attempt's tokens, whether its reply turns out valid or not."""
        usage = reply.usage
        self.answered += 1
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_tokens += usage.cached_tokens
        self.model_seconds += reply.latency
        self.answered_by = reply.model or self.model
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

    def finish(self, ok: bool, detail: str | None = None, *, record: bool = True) -> None:
        """Record the step's usage row (unless no request was made) and report its end."""
        tokens = token_counts(self)
        if record:
            self.call.meter.per_call.append(
                CallUsage(
                    phase=self.phase,
                    actor=self.actor,
                    round=self.round,
                    model=self.model,
                    endpoint=self.endpoint,
                    answered_by=self.answered_by,
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
        BudgetExceeded: the next request could pass the run's budget, so it was not sent.
    """
    step = _Step(call, model.name, phase, actor, round, endpoint=getattr(model, "endpoint", None))
    step.started()
    request = _Request.of(messages, settings, call_max_tokens(settings, schema))
    # One slot per call, keyed by its first request: a re-ask's conversation is an attempt.
    slot = cache_slot(call.cache, model, request.messages, schema, request.settings)
    stale = False
    if slot is not None and (replay := await slot.replay()) is not None:
        try:
            parsed = check_reply(replay.reply, schema, max_tokens=request.max_tokens)
        except ModelOutputError as exc:  # stored by a version that validated differently
            logger.warning("%s %s: cached reply no longer valid (%s)", phase, actor, exc)
            stale = True
        else:
            step.replayed(replay)
            step.finish(True)
            return _completion(parsed, replay.reply, model), step.attempts
    while True:
        try:
            reply = await _send(model, request, schema, step)
        except ProviderError as exc:
            await step.back_off(exc)
            continue
        step.count(reply)
        try:
            parsed = check_reply(reply, schema, max_tokens=request.max_tokens)
        except ModelOutputError as exc:
            step.reject(exc)
            request = _next_request(messages, request, reply, exc)
            continue
        if slot is not None:
            await slot.store(reply, step.cost(), replace=stale)
        step.finish(True)
        return _completion(parsed, reply, model), step.attempts


def _completion(parsed: T, reply: Reply, model: Model) -> Completion[T]:
    return Completion(
        parsed=parsed,
        text=reply.text,
        usage=reply.usage,
        latency=reply.latency,
        model=reply.model or model.name,
    )


async def _send(model: Model, request: _Request, schema: type[T], step: _Step) -> Reply:
    """The model's reply to one attempt, held against the budget before it is counted.

    A request the budget refuses is therefore no attempt.
    """
    hold = await step.hold(request.messages, schema, request.max_tokens)
    step.begin()
    try:
        reply = await model.complete(request.messages, schema, request.settings)
    except BaseException:
        step.settle(hold, None)
        raise
    step.settle(hold, reply)
    return reply


def _next_request(
    messages: list[Message], request: _Request, reply: Reply, exc: ModelOutputError
) -> _Request:
    """What to send after an invalid reply.

    A reply cut off by the token budget is not wrong, only short: the model is asked afresh
    (its truncated text is not shown) with twice the budget. Any other invalid reply is shown
    to the model with the error, after the original messages.
    """
    if is_truncated(reply):
        budget = request.max_tokens * 2
        logger.info("reply cut off by the token budget; asking again with max_tokens=%d", budget)
        return _Request.of(messages, request.settings, budget)
    conversation = [
        *messages,
        Message(role="assistant", content=exc.raw),
        Message(role="user", content=REASK.format(error=str(exc))),
    ]
    return _Request(conversation, request.settings, request.max_tokens)
