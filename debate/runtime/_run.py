"""One `Run`: the machinery every debate, judgement and council of a run shares.

Why one object: the model pool, response cache, rate limiter, prices, budget, track records,
event handler and embedded-model path travel together from the CLI, a batch, a calibration
or the service down to each call. Threaded as keyword arguments they were repeated in nine
signatures and re-bundled three times; here they are built once and passed as ``run=``
(the idea of pydantic-ai's ``RunContext``). What belongs to one debate and not to the run
(its seed, usage meter, deadline) is derived from it per debate: :meth:`Run.meter`,
:meth:`Run.call`, :meth:`Run.models`.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from debate.models import Model
from debate.records import RunConfig
from debate.runtime._ask import CallContext, UsageMeter
from debate.runtime._budget import Budget
from debate.runtime._events import EventHandler
from debate.runtime._limiter import LimitedModel, RateLimiter
from debate.runtime._pool import (
    ModelPool,
    close_models,
    no_running_loop,
    open_cache,
    owned_pool,
    run_prices,
)
from debate.runtime._pricing import PriceTable
from debate.storage import ResponseCache

T = TypeVar("T")


@dataclass(frozen=True)
class Run:
    """The run-wide machinery, built once and shared by every debate it runs.

    ``Run()`` is the simple case: models built (and closed) per call, no cache, no limits,
    the shipped prices. Give one ``Run`` to several calls (a batch's items, a calibration)
    to share its pool, cache, limiter and budget among them.
    """

    pool: ModelPool | None = None
    """Models shared with other runs; not closed here (None: built and closed per call)."""
    cache: ResponseCache | None = None
    """Valid replies replayed and stored (a path given to :meth:`of` is opened)."""
    limiter: RateLimiter | None = None
    """Requests/tokens-per-minute limiter every model call passes through."""
    prices: PriceTable | None = None
    """Price table for ``usage`` (None: the shipped one), joined with the endpoints' own."""
    budget: Budget | None = None
    """Caps on cost and tokens over every call of the run."""
    history: Mapping[str, float] | None = None
    """Judge track-record accuracies by identity (:mod:`debate.judgments._track`)."""
    on_event: EventHandler | None = None
    """Progress callback, told of every call."""
    model_path: str | None = None
    """A GGUF file for the embedded backend (used when the run builds its own pool)."""
    closes_given: bool = False
    """Close the models a caller handed in when its call ends (the ``*_sync`` wrappers:
    their clients belong to the event loop that ends with the call)."""

    @classmethod
    def of(
        cls,
        run: Run | None,
        legacy: Mapping[str, Any],
        where: str,
        took: Collection[str] | None = None,
    ) -> Run:
        """``run`` with the machinery still passed the old way, as keywords of ``where``.

        Those keywords keep working but are deprecated: give ``run=Run(...)`` instead.
        ``took``: the fields ``where`` took one by one (default: all of them).

        Raises:
            TypeError: a keyword that ``where`` never took (as Python itself would).
        """
        if not legacy:
            return run or cls()
        known = {f.name for f in fields(cls)} - {"closes_given"} if took is None else set(took)
        unknown = sorted(set(legacy) - known)
        if unknown:
            raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
        warnings.warn(
            f"{where}({', '.join(f'{k}=' for k in sorted(legacy))}) is deprecated; pass "
            f"run=Run({', '.join(f'{k}=...' for k in sorted(legacy))}) instead",
            DeprecationWarning,
            stacklevel=3,
        )
        changes = dict(legacy)
        if "cache" in changes:
            changes["cache"] = open_cache(changes["cache"])
        return replace(run or cls(), **changes)

    def with_(self, **changes: Any) -> Run:
        """A copy with ``changes`` (a batch item's event handler, a shared pool)."""
        return replace(self, **changes)

    def limit(self, model: Model) -> Model:
        """``model`` behind the run's rate limiter (itself when there is none).

        The cache is not a wrapper: :func:`~debate.runtime._ask.ask` consults it through
        :meth:`call`, and decides what is stored.
        """
        return model if self.limiter is None else LimitedModel(model, self.limiter)

    def meter(self, config: RunConfig, models: Iterable[str]) -> UsageMeter:
        """One debate's usage meter, on the run's prices and budget.

        Raises:
            ConfigurationError: a cost cap over a model that no table prices (before any
                call), or an endpoint's price table that cannot be read.
        """
        return UsageMeter.for_run(run_prices(config, self.prices), self.budget, models)

    def call(self, config: RunConfig, meter: UsageMeter) -> CallContext:
        """What every call of one debate shares: policy, meter, the run's cache and events.

        The policy is ``config``'s, the meter the debate's own (:meth:`meter`).
        """
        return CallContext.of(config, meter, self.cache, self.on_event)

    @asynccontextmanager
    async def models(
        self, config: RunConfig, seed: int, given: Iterable[Model | None] = ()
    ) -> AsyncIterator[ModelPool]:
        """The pool one call builds its models in: the run's, or one of its own, closed after.

        ``given``: the models the caller handed in; closed at the end when
        :attr:`closes_given` says so, never otherwise (a caller may share them).
        """
        try:
            async with owned_pool(self.pool, config, seed=seed, model_path=self.model_path) as pool:
                yield pool
        finally:
            if self.closes_given:
                await close_models([m for m in given if m is not None])


def given_models(*groups: Model | Mapping[str, Model] | Iterable[Model] | None) -> list[Model]:
    """The models a caller handed in, one by one, by name, or in a list.

    The ``*_sync`` wrappers close them when their call ends (:attr:`Run.closes_given`).
    """
    found: list[Model] = []
    for group in groups:
        if group is None:
            continue
        if isinstance(group, Mapping):
            found += list(group.values())
        elif isinstance(group, Iterable):
            found += list(group)
        else:
            found.append(group)
    return found


def closing(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A ``*_sync`` wrapper's arguments: its run closes the caller's models at its end."""
    run = kwargs.get("run")
    return {**kwargs, "run": replace(run if isinstance(run, Run) else Run(), closes_given=True)}


def blocking(main: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
    """``main(*args, **kwargs)`` run to its end: the body of every ``*_sync`` wrapper.

    Refused inside a running event loop (:func:`~debate.runtime._pool.no_running_loop`,
    naming ``main``); the run closes the caller's models at its end (:func:`closing`).
    """
    no_running_loop(main.__name__)
    return asyncio.run(main(*args, **closing(kwargs)))
