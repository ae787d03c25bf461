"""The models of a run: each distinct model built, rate-limited and closed once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from debate.exceptions import ConfigurationError
from debate.models import resolve_model
from debate.models._base import Model
from debate.records._config import RunConfig
from debate.runtime._limiter import LimitedModel, RateLimiter
from debate.storage._cache import ResponseCache

CacheSpec = ResponseCache | str | Path | None
T_co = TypeVar("T_co")


def open_cache(cache: CacheSpec) -> ResponseCache | None:
    """The response cache a run was given (a path is opened; None means no cache)."""
    if cache is None or isinstance(cache, ResponseCache):
        return cache
    return ResponseCache(cache)


class _Wrapper:
    """A run's binding of its models: the response cache it uses and the rate limiter.

    Every model is wrapped in the limiter once. The cache is not a wrapper: it is handed to
    ``ask`` (through :class:`~debate.runtime._ask.CallContext`), which decides what is stored.
    """

    def __init__(self, cache: CacheSpec, limiter: RateLimiter | None = None) -> None:
        self.cache = open_cache(cache)
        self.limiter = limiter
        self._wrapped: dict[int, Model] = {}

    def __call__(self, model: Model) -> Model:
        if id(model) in self._wrapped:
            return self._wrapped[id(model)]
        wrapped = model
        if self.limiter is not None:
            wrapped = LimitedModel(wrapped, self.limiter)
        self._wrapped[id(model)] = wrapped
        return wrapped


class ModelPool:
    """Builds each distinct model once (the embedded model is loaded a single time)."""

    def __init__(
        self,
        config: RunConfig,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        seed: int = 0,
        model_path: str | None = None,
    ) -> None:
        self.config = config
        self.api_key_env = api_key_env
        self.seed = seed
        self.model_path = model_path
        self._built: dict[tuple[str, str | None], Model] = {}

    async def aclose(self) -> None:
        """Close every model this pool built."""
        await close_models(list(self._built.values()))

    def get(self, name: str | None, base_url: str | None = None) -> Model:
        """The model for a name (default: the run's), built on first use."""
        key = (name or self.config.model, base_url or self.config.base_url)
        if key not in self._built:
            self._built[key] = resolve_model(
                key[0],
                base_url=key[1],
                api_key_env=self.api_key_env,
                model_path=self.model_path,
                seed=self.seed,
            )
        return self._built[key]


@asynccontextmanager
async def owned_pool(
    pool: ModelPool | None,
    config: RunConfig,
    *,
    api_key_env: str = "OPENAI_API_KEY",
    seed: int = 0,
    model_path: str | None = None,
) -> AsyncIterator[ModelPool]:
    """The caller's pool as it is (the caller closes it), or a new one closed at the end."""
    if pool is not None:
        yield pool
        return
    own = ModelPool(config, api_key_env=api_key_env, seed=seed, model_path=model_path)
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


async def closing_given(main: Awaitable[T_co], kwargs: Mapping[str, object]) -> T_co:
    """Run ``main``, then close the caller's models: their clients belong to this loop."""
    given: list[Model] = [m for k in ("model", "pro", "con") if (m := kwargs.get(k)) is not None]  # type: ignore[misc]
    for key in ("judges", "reviewers"):
        if isinstance(named := kwargs.get(key), Mapping):
            given += list(named.values())
    if isinstance(generators := kwargs.get("generate"), Sequence):
        given += list(generators)
    try:
        return await main
    finally:
        await close_models(given)


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
