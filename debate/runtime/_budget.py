"""A cap on what a run (or a whole batch) may spend: no call starts once it could exceed it.

Before a request is sent its worst case is worked out: the prompt's tokens bounded from the
rendered messages and the reply schema, plus the request's ``max_tokens``, priced with the
run's table. If what is spent, plus what calls in flight may still spend, plus this worst
case would pass a cap, the request is not sent and :class:`~debate.exceptions.BudgetExceeded`
says why. A request that is sent holds its worst case until its reply's real usage replaces
it, so concurrent calls can never together pass the cap. Replies replayed from the response
cache cost nothing and are not charged, so a stopped run re-run with a larger cap continues
where it stopped.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass

from debate._checks import check_cap
from debate.exceptions import BudgetExceeded, ConfigurationError
from debate.models import Message, ReplySchema, TokenUsage, schema_bytes
from debate.records import BudgetCaps
from debate.runtime._pricing import PriceTable

logger = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 16
"""Tokens a chat template may add around one message (role markers, separators)."""
MAX_BUDGET_TOKENS = 10**12


def prompt_bound(messages: list[Message], schema: ReplySchema) -> int:
    """An upper bound of a request's prompt tokens, from its text alone.

    Every token of a byte-level tokenizer (BPE, or sentencepiece with byte fallback) covers
    at least one byte, so the UTF-8 length bounds the count; the reply schema is counted as
    if it were sent as prompt, and each message gets room for its template markers. A
    bound, not an estimate: it is what lets "could exceed" be a promise.
    """
    text = sum(len(m.content.encode("utf-8")) for m in messages)
    return text + schema_bytes(schema) + MESSAGE_OVERHEAD * (len(messages) + 1)


@dataclass
class Hold:
    """The worst case of one request in flight, held against the budget until it returns."""

    model: str
    tokens: int
    usd: float


SPENT_USD, HELD_USD, SPENT_TOKENS, HELD_TOKENS = range(4)


class Ledger:
    """What a budget has spent and holds, in this process's memory.

    A hold is a check and an update with no ``await`` between them, so the items of one
    process (one asyncio loop) need no lock. Several processes capped together share one
    ledger kept elsewhere: a subclass that forwards :meth:`hold` and :meth:`settle` to
    where the numbers live (``debate batch --engine ray`` keeps them in one Ray actor, see
    :mod:`debate.batch._ray`).
    """

    def __init__(self) -> None:
        self.values: list[float] = [0.0, 0.0, 0.0, 0.0]

    def spent(self) -> tuple[float, int]:
        """Dollars and tokens the requests sent have cost."""
        return self.values[SPENT_USD], int(self.values[SPENT_TOKENS])

    def hold(
        self, usd: float, tokens: int, max_cost_usd: float | None, max_tokens: int | None
    ) -> None:
        """Hold a request's worst case, or raise BudgetExceeded if it could pass a cap."""
        values = self.values
        if max_cost_usd is not None and (values[SPENT_USD] + values[HELD_USD] + usd > max_cost_usd):
            raise BudgetExceeded(
                f"budget: this call could cost up to ${usd:.6f} ({tokens} tokens); "
                f"${values[SPENT_USD]:.6f} spent and ${values[HELD_USD]:.6f} held by "
                f"calls in flight of the ${max_cost_usd:g} cap (--max-cost)"
            )
        if max_tokens is not None and (
            values[SPENT_TOKENS] + values[HELD_TOKENS] + tokens > max_tokens
        ):
            raise BudgetExceeded(
                f"budget: this call could use up to {tokens} tokens; "
                f"{int(values[SPENT_TOKENS])} spent and {int(values[HELD_TOKENS])} held by "
                f"calls in flight of the {max_tokens} token cap (--max-tokens)"
            )
        values[HELD_USD] += usd
        values[HELD_TOKENS] += tokens

    async def hold_async(
        self, usd: float, tokens: int, max_cost_usd: float | None, max_tokens: int | None
    ) -> None:
        """:meth:`hold`, awaited where the numbers live elsewhere (here: at once)."""
        self.hold(usd, tokens, max_cost_usd, max_tokens)

    def settle(self, held_usd: float, held_tokens: int, cost: float, used: int) -> None:
        """Replace a hold of ``held_usd``/``held_tokens`` with what the request cost."""
        values = self.values
        values[HELD_USD] = max(0.0, values[HELD_USD] - held_usd)
        values[HELD_TOKENS] -= held_tokens
        values[SPENT_TOKENS] += used
        values[SPENT_USD] += cost


class Budget:
    """At most ``max_cost_usd`` dollars and ``max_tokens`` tokens, over every run given it.

    Give the same ``Budget`` to several runs (the items of a batch, a calibration) to cap
    them together; give each run its own to cap it alone. Tokens are prompt + completion
    tokens of the requests sent. What is spent and held lives in a :class:`Ledger`; one
    ledger kept elsewhere (a Ray actor) caps several processes together.
    """

    def __init__(
        self,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        *,
        ledger: Ledger | None = None,
    ) -> None:
        if max_cost_usd is not None and not (math.isfinite(max_cost_usd) and max_cost_usd > 0):
            raise ConfigurationError(
                f"max_cost_usd: {max_cost_usd} is not a positive finite number of US dollars; "
                "give one such as 0.50, or leave it out for no cap"
            )
        check_cap("max_tokens", max_tokens, MAX_BUDGET_TOKENS, "no cap")
        self.max_cost_usd = max_cost_usd
        self.max_tokens = max_tokens
        self.ledger = ledger or Ledger()

    @property
    def spent_usd(self) -> float:
        """Dollars the requests sent have cost (of every process sharing the ledger)."""
        return self.ledger.spent()[0]

    @property
    def spent_tokens(self) -> int:
        """Prompt + completion tokens of the requests sent."""
        return self.ledger.spent()[1]

    def check_priced(self, names: Iterable[str], prices: PriceTable | None) -> None:
        """Refuse a cost cap over a model the table (None: the shipped one) cannot price.

        Called before any work starts, so the refusal costs nothing.
        """
        if self.max_cost_usd is None:
            return
        prices = prices if prices is not None else PriceTable.default()
        missing = prices.unpriced(names)
        if missing:
            raise ConfigurationError(
                f"--max-cost: model {missing[0]!r} has no price in {prices.where()}; give a "
                f"price table that lists it (--prices FILE) or leave out --max-cost"
            )

    def hold(self, model: str, prompt: int, max_tokens: int, prices: PriceTable) -> Hold:
        """Hold a request's worst case, or raise BudgetExceeded if it could pass a cap."""
        worst = self._worst(model, prompt, max_tokens, prices)
        self.ledger.hold(worst.usd, worst.tokens, self.max_cost_usd, self.max_tokens)
        return worst

    async def hold_async(
        self, model: str, prompt: int, max_tokens: int, prices: PriceTable
    ) -> Hold:
        """:meth:`hold` for a call about to be sent: a ledger kept elsewhere is awaited.

        With this process's ledger it is :meth:`hold` (nothing is awaited, so the check
        and the hold stay one step); a Ray worker's ledger answers from its actor while
        the worker's other items go on.
        """
        worst = self._worst(model, prompt, max_tokens, prices)
        await self.ledger.hold_async(worst.usd, worst.tokens, self.max_cost_usd, self.max_tokens)
        return worst

    def _worst(self, model: str, prompt: int, max_tokens: int, prices: PriceTable) -> Hold:
        """A request's worst case in tokens and (under a cost cap) dollars."""
        usd = 0.0
        if self.max_cost_usd is not None:
            price = prices.models.get(model)
            if price is None:  # the run checked its models; this is a model it did not name
                self.check_priced([model], prices)
            else:
                usd = price.worst(prompt, max_tokens)
        return Hold(model, prompt + max_tokens, usd)

    def settle(self, hold: Hold, usage: TokenUsage | None, prices: PriceTable) -> None:
        """Replace a request's hold with what it really used (None: nothing came back)."""
        cost = 0.0
        if usage is not None and (price := prices.models.get(hold.model)) is not None:
            cost = price.cost(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)
        used = 0 if usage is None else usage.prompt_tokens + usage.completion_tokens
        self.ledger.settle(hold.usd, hold.tokens, cost, used)
        if usage is None:
            return
        if usage.prompt_tokens + usage.completion_tokens > hold.tokens:
            logger.warning(
                "%s used %d tokens, more than the bound of %d held for it",
                hold.model,
                usage.prompt_tokens + usage.completion_tokens,
                hold.tokens,
            )

    def caps(self) -> BudgetCaps:
        """The record of this budget for a result."""
        return BudgetCaps(
            max_cost_usd=self.max_cost_usd,
            max_tokens=self.max_tokens,
            spent_usd=round(self.spent_usd, 6),
            spent_tokens=self.spent_tokens,
        )
