"""The models of a run: each distinct model built, rate-limited and closed once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from debate.exceptions import ConfigurationError
from debate.models import SCRIPTED, Model, in_process, resolve_model
from debate.records import DEFAULT_ENDPOINT, Endpoint, RunConfig, validation_message
from debate.runtime._limiter import LimitedModel, RateLimiter
from debate.runtime._pricing import PriceTable
from debate.storage import ResponseCache

CacheSpec = ResponseCache | str | Path | None
LimiterFactory = Callable[[str, int | None, int | None], RateLimiter]
"""Makes an endpoint's limiter from its key, ``rpm`` and ``tpm``."""
T_co = TypeVar("T_co")


def open_cache(cache: CacheSpec) -> ResponseCache | None:
    """The response cache a run was given (a path is opened; None means no cache)."""
    if cache is None or isinstance(cache, ResponseCache):
        return cache
    return ResponseCache(cache)


class ModelPool:
    """Builds each distinct model once (the embedded model is loaded a single time).

    A model is one name at one endpoint, built with that endpoint's key and no other. Every
    model on an endpoint with ``rpm``/``tpm`` passes through that endpoint's one limiter, so
    the limit holds across all the runs sharing the pool (a batch's items).
    """

    def __init__(self, config: RunConfig, *, seed: int = 0, model_path: str | None = None) -> None:
        self.config = config
        self.seed = seed
        self.model_path = model_path
        self._built: dict[tuple[str, str, str | None, str | None], Model] = {}
        self._limiters: dict[str, RateLimiter] = {}
        self.limiter_factory: LimiterFactory = lambda _key, rpm, tpm: RateLimiter(rpm, tpm)
        """A batch's Ray worker replaces it: its endpoints' windows are in one actor."""

    async def aclose(self) -> None:
        """Close every model this pool built."""
        await close_models(list(self._built.values()))

    def get(
        self, name: str | None, endpoint: str | None = None, *, config: RunConfig | None = None
    ) -> Model:
        """The model ``name`` at ``endpoint`` as ``config`` defines them, built on first use.

        Args:
            name: The model's name; ``None`` is the config's ``model``.
            endpoint: A name from ``config.endpoints``; ``None`` is the ``default`` endpoint
                (``base_url``/``api_key_env``).
            config: The config that names them (a batch item's own); default the pool's.

        Raises:
            ConfigurationError: the endpoint's key is missing (or, for the ``default``
                endpoint on another host than OpenAI's, no key variable is named).
        """
        cfg = config or self.config
        label, spec, base_url, key_env = _endpoint(cfg, endpoint)
        key = (name or cfg.model, label, base_url, key_env)
        if key not in self._built:
            model = resolve_model(
                key[0],
                base_url=base_url,
                api_key_env=key_env,
                endpoint=label,
                model_path=self.model_path,
                seed=self.seed,
            )
            limiter = self._limiter(label, spec)
            self._built[key] = model if limiter is None else LimitedModel(model, limiter)
        return self._built[key]

    def prepare(self, config: RunConfig, *, debaters: bool = True) -> list[Model]:
        """Build every model ``config`` names now (its judges' and, for a debate, its sides').

        A batch calls this for every item before the first call, so a missing key or an
        endpoint an item cannot use is bad input then, not a failure found items later
        (the endpoints' price tables are checked by :func:`run_prices`).
        Returns the models, for checks over all of them (a cost cap's prices).
        """
        return [self.get(name, where, config=config) for name, where in _uses(config, debaters)]

    def check_keys(self, config: RunConfig, *, debaters: bool = True) -> None:
        """Refuse a missing key of any model ``config`` names, without building a model.

        For a process that only checks (``debate serve`` before it binds and opens its
        database): building the models (the embedded one loads its weights) is its
        runner's, in another process.

        Raises:
            ConfigurationError: as :meth:`get` for a missing key or an unknown endpoint.
        """
        from debate.models.openai import resolve_api_key

        for name, where in _uses(config, debaters):
            label, _, base_url, key_env = _endpoint(config, where)
            model = name or config.model
            if not in_process(model, base_url=base_url, endpoint=label, model_path=self.model_path):
                resolve_api_key(base_url, key_env, label)

    def embeds(self, config: RunConfig, *, debaters: bool = True) -> bool:
        """Whether ``config`` names the embedded model (its weights loaded in-process).

        Test doubles (``scripted...``) run in-process too, but load nothing.
        """
        for name, where in _uses(config, debaters):
            label, _, base_url, _ = _endpoint(config, where)
            model = name or config.model
            here = in_process(model, base_url=base_url, endpoint=label, model_path=self.model_path)
            if here and not model.startswith(SCRIPTED):
                return True
        return False

    def _limiter(self, label: str, spec: Endpoint | None) -> RateLimiter | None:
        """The one limiter of an endpoint with ``rpm``/``tpm`` (None without limits)."""
        if spec is None or (spec.rpm is None and spec.tpm is None):
            return None
        key = f"{label} {spec.base_url} {spec.rpm} {spec.tpm}"
        if key not in self._limiters:
            self._limiters[key] = self.limiter_factory(key, spec.rpm, spec.tpm)
        return self._limiters[key]


def _uses(config: RunConfig, debaters: bool) -> list[tuple[str | None, str | None]]:
    """The (model, endpoint) of every judge and, for a debate, of both sides."""
    uses = [(spec.model, spec.endpoint) for spec in config.judges]
    if debaters:
        uses += [(config.pro_model, config.pro_endpoint), (config.con_model, config.con_endpoint)]
    return uses


def _endpoint(
    config: RunConfig, endpoint: str | None
) -> tuple[str, Endpoint | None, str | None, str | None]:
    """An endpoint's name, declaration, ``base_url`` and key variable, as ``config`` has it.

    Raises:
        ConfigurationError: ``endpoint`` is not declared.
    """
    label = endpoint or DEFAULT_ENDPOINT
    spec = config.endpoints.get(label)
    if label != DEFAULT_ENDPOINT and spec is None:
        raise ConfigurationError(
            f"endpoint: unknown endpoint {label!r}; declare [endpoints.{label}]"
        )
    if spec is not None:
        return label, spec, spec.base_url, spec.api_key_env
    return label, None, config.base_url, config.api_key_env


def run_prices(config: RunConfig, prices: PriceTable | None = None) -> PriceTable | None:
    """The run's price table: ``prices`` (``--prices``) joined with its endpoints' tables.

    Without ``prices``, the shipped table fills in models no endpoint table names (an
    endpoint's own price wins over the shipped one: it is what that endpoint charges).

    Usage is counted by model name, so a model that two tables price differently could not
    be costed truthfully: that is refused (bad input, before any call).

    Raises:
        ConfigurationError: an endpoint's table cannot be read or is not a price table, or
            two tables disagree on a model's price.
    """
    tables = [
        (name, table)
        for name, endpoint in config.endpoints.items()
        if (table := _endpoint_prices(name, endpoint)) is not None
    ]
    if not tables:
        return prices
    merged = dict(prices.models) if prices is not None else {}
    where = dict.fromkeys(merged, "--prices")
    for name, table in tables:
        for model, price in table.models.items():
            if model in merged and merged[model] != price:
                raise ConfigurationError(
                    f"endpoints.{name}.prices: {model} is priced differently by "
                    f"{where[model]}; give each model one price"
                )
            merged[model], where[model] = price, f"endpoints.{name}.prices"
    if prices is None:  # the shipped table still prices what no table given here names
        merged = {**PriceTable.default().models, **merged}
    return PriceTable(models=merged)


def _endpoint_prices(name: str, endpoint: Endpoint) -> PriceTable | None:
    """An endpoint's own price table (read from its file, or given inline), if it has one."""
    if endpoint.prices is None:
        return None
    if isinstance(endpoint.prices, str):
        return PriceTable.load(endpoint.prices)
    try:
        return PriceTable.model_validate({"models": endpoint.prices})
    except ValidationError as exc:
        raise ConfigurationError(
            validation_message(exc, f"endpoints.{name}.prices").replace(".models", "", 1)
        ) from exc


@asynccontextmanager
async def owned_pool(
    pool: ModelPool | None,
    config: RunConfig,
    *,
    seed: int = 0,
    model_path: str | None = None,
) -> AsyncIterator[ModelPool]:
    """The caller's pool as it is (the caller closes it), or a new one closed at the end."""
    if pool is not None:
        yield pool
        return
    own = ModelPool(config, seed=seed, model_path=model_path)
    try:
        yield own
    finally:
        await own.aclose()


async def close_models(models: list[Model]) -> None:
    """Release HTTP clients at the end of a run (models without ``aclose`` are skipped)."""
    seen: set[int] = set()
    for model in models:
        close = getattr(model, "aclose", None)
        if close is not None and id(model) not in seen:
            seen.add(id(model))
            await close()


async def closing_pool(pool: ModelPool, work: Awaitable[T_co]) -> T_co:
    """Await ``work``, then close the pool's models whatever happened (for one-shot CLIs)."""
    try:
        return await work
    finally:
        await pool.aclose()


def no_running_loop(name: str) -> None:
    """A clear error for ``*_sync`` inside a running event loop (Jupyter, say)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise ConfigurationError(
        f"{name}_sync cannot run inside a running event loop (a notebook, say); "
        f"use 'await {name}(...)' there instead"
    )
