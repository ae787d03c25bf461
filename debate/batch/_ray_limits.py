"""One rate-limit window of each kind and one cost ledger for every worker of a Ray cluster.

Each kind is one Ray actor: a worker's call asks :class:`LimitsActor` for a grant before it is
sent and tells it the real token count after; it holds its worst case in
:class:`LedgerActor` (through :class:`RayLedger`, the worker's
:class:`~debate.runtime._budget.Ledger`) and settles there. An actor runs its calls one
at a time (the ledger) or on one event loop behind the limiter's first-come lock (the
windows), so the whole cluster never passes a limit or a cap. Imported only when a batch
runs on Ray.
"""

from __future__ import annotations

import itertools
from typing import Any

from debate.exceptions import BudgetExceeded
from debate.runtime import Ledger, RateLimiter

try:
    import ray
except ImportError:  # pragma: no cover - the engine checks for Ray first
    ray = None  # type: ignore[assignment]

GLOBAL_LIMITER = ""
"""The key of the batch's ``--rpm``/``--tpm`` window (endpoints' windows have their own)."""


class LimitsActor:
    """The one window of each rate limit of the batch, for every worker of the cluster."""

    def __init__(self) -> None:
        self.limiters: dict[str, RateLimiter] = {}
        self.grants: dict[int, tuple[RateLimiter, Any]] = {}
        self.refs = itertools.count(1)

    async def acquire(self, key: str, rpm: int | None, tpm: int | None, tokens: int) -> int:
        """Wait for room for a request of ``tokens`` in window ``key``; the grant's number."""
        limiter = self.limiters.get(key)
        if limiter is None:
            limiter = self.limiters[key] = RateLimiter(rpm, tpm)
        entry = await limiter.acquire(tokens)
        ref = next(self.refs)
        self.grants[ref] = (limiter, entry)
        return ref

    async def settle(self, ref: int, tokens: int) -> None:
        """Replace a grant's estimate with the provider's count."""
        grant = self.grants.pop(ref, None)
        if grant is not None:
            grant[0].settle(grant[1], tokens)


class LedgerActor:
    """The batch's one :class:`~debate.runtime._budget.Ledger`, for every worker.

    A plain (not async) actor: Ray runs its calls one at a time, in the order each worker
    sent them, so a check and its hold are one step for the whole cluster.
    """

    def __init__(self) -> None:
        self.ledger = Ledger()

    def hold(
        self, usd: float, tokens: int, max_cost_usd: float | None, max_tokens: int | None
    ) -> str | None:
        """Hold, or say why not (BudgetExceeded's message)."""
        try:
            self.ledger.hold(usd, tokens, max_cost_usd, max_tokens)
        except BudgetExceeded as exc:
            return str(exc)
        return None

    def settle(self, held_usd: float, held_tokens: int, cost: float, used: int) -> None:
        """Replace a hold with what the request cost."""
        self.ledger.settle(held_usd, held_tokens, cost, used)

    def spent(self) -> tuple[float, int]:
        """Dollars and tokens spent by the whole cluster."""
        return self.ledger.spent()


class RayLedger(Ledger):
    """A worker's view of the :class:`LedgerActor`: every hold asks it, every settle tells it.

    A call's hold awaits the actor's answer (:meth:`hold_async`, one round trip) before
    the request is sent; :meth:`hold` (``ray.get``) is for a caller outside a call.
    """

    def __init__(self, actor: Any) -> None:
        super().__init__()
        self.actor = actor

    def spent(self) -> tuple[float, int]:
        """What the cluster has spent (asked of the actor)."""
        usd, tokens = ray.get(self.actor.spent.remote())
        return float(usd), int(tokens)

    def hold(
        self, usd: float, tokens: int, max_cost_usd: float | None, max_tokens: int | None
    ) -> None:
        """Hold in the actor, or raise BudgetExceeded with its reason."""
        refused = ray.get(self.actor.hold.remote(usd, tokens, max_cost_usd, max_tokens))
        if refused is not None:
            raise BudgetExceeded(refused)

    async def hold_async(
        self, usd: float, tokens: int, max_cost_usd: float | None, max_tokens: int | None
    ) -> None:
        """Hold in the actor, awaiting its answer (the worker's other items go on)."""
        refused = await self.actor.hold.remote(usd, tokens, max_cost_usd, max_tokens)
        if refused is not None:
            raise BudgetExceeded(refused)

    def settle(self, held_usd: float, held_tokens: int, cost: float, used: int) -> None:
        """Tell the actor (no wait: it applies each worker's calls in order)."""
        self.actor.settle.remote(held_usd, held_tokens, cost, used)
