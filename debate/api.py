"""The Python entry points: run a debate, judge a transcript, write the result."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import tempfile
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from debate._version import __version__
from debate.cache import CachedModel, ResponseCache
from debate.calls import CallPolicy, UsageMeter
from debate.config import RunConfig, validation_message
from debate.events import EventHandler
from debate.exceptions import ConfigurationError
from debate.limiter import LimitedModel, RateLimiter
from debate.models import resolve_model
from debate.models.base import Model, ModelSettings
from debate.panel import MultiJudgePanel
from debate.pricing import PriceTable
from debate.prompts import PromptRenderer
from debate.protocol import Deadline, DebateProtocol, Debaters
from debate.result import DebateResult, PanelResult
from debate.schema import Transcript, check_topic
from debate.topics import TopicProfiles

CacheSpec = ResponseCache | str | Path | None
T_co = TypeVar("T_co")


class _Wrapper:
    """Wraps every model of a run, each distinct model once.

    The rate limiter goes inside (a cached reply costs no request), the cache outside.
    """

    def __init__(self, cache: CacheSpec, limiter: RateLimiter | None = None) -> None:
        if cache is None or isinstance(cache, ResponseCache):
            self.cache = cache
        else:
            self.cache = ResponseCache(cache)
        self.limiter = limiter
        self._wrapped: dict[int, Model] = {}

    def __call__(self, model: Model) -> Model:
        if id(model) in self._wrapped:
            return self._wrapped[id(model)]
        wrapped = model
        if self.limiter is not None:
            wrapped = LimitedModel(wrapped, self.limiter)
        if self.cache is not None and not isinstance(model, CachedModel):
            endpoint = getattr(model, "base_url", None)
            wrapped = CachedModel(wrapped, self.cache, endpoint=endpoint)
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


def draw_seed() -> int:
    """A fresh seed for a run that was given none; it is recorded in the result."""
    return secrets.randbelow(2**31)


def _config(config: RunConfig | None) -> RunConfig:
    return config if config is not None else RunConfig()


def _judge_models(
    config: RunConfig, pool: ModelPool, model: Model | None, judges: Mapping[str, Model] | None
) -> dict[str, Model]:
    chosen: dict[str, Model] = {}
    for spec in config.judges:
        if judges is not None and spec.name in judges:
            chosen[spec.name] = judges[spec.name]
        elif model is not None and spec.model is None:
            chosen[spec.name] = model
        else:
            chosen[spec.name] = pool.get(spec.model, spec.base_url)
    return chosen


async def run_debate(
    topic: str,
    *,
    config: RunConfig | None = None,
    model: Model | None = None,
    pro: Model | None = None,
    con: Model | None = None,
    judges: Mapping[str, Model] | None = None,
    seed: int | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    model_path: str | None = None,
    cache: CacheSpec = None,
    pool: ModelPool | None = None,
    limiter: RateLimiter | None = None,
    prices: PriceTable | None = None,
    history: Mapping[str, float] | None = None,
    on_event: EventHandler | None = None,
) -> DebateResult:
    """Run a whole debate and judge it.

    Args:
        topic: The proposition, e.g. "Should we migrate to Kubernetes this year?".
        config: Panel and debate settings (defaults: 3 arguments a side, 4 judges).
        model: One model for every debater and judge (overrides ``config.model``).
        pro: Model of the PRO side (overrides ``model``).
        con: Model of the CON side (overrides ``model``).
        judges: Model per judge name.
        seed: Sampling seed, recorded in the result.
        api_key_env: Environment variable with the API key of a remote endpoint.
        model_path: A GGUF file for the embedded backend.
        cache: Response cache (a path or a ResponseCache): completed calls are replayed
            from it, so re-running an interrupted debate re-sends only unfinished calls.
        pool: Models shared with other runs (a batch); they are not closed here.
        limiter: Requests/tokens-per-minute limiter shared with other runs.
        prices: Price table for the cost in ``usage``.
        history: Judge track-record accuracies by identity (see :mod:`debate.track`).
        on_event: Progress callback.

    Returns:
        The result, with the transcript, each judge's evaluation, agreement, vote and decision.
    """
    try:
        check_topic(topic)
    except ValueError as exc:
        raise ConfigurationError(f"topic: {exc}") from exc
    cfg = _config(config)
    seed = draw_seed() if seed is None else seed
    own_pool = pool is None
    pool = pool or ModelPool(cfg, api_key_env=api_key_env, seed=seed, model_path=model_path)
    renderer = PromptRenderer(cfg.templates)
    wrap = _Wrapper(cache, limiter)
    debaters = Debaters(
        pro=wrap(pro or model or pool.get(cfg.pro_model)),
        con=wrap(con or model or pool.get(cfg.con_model)),
    )
    panel = MultiJudgePanel(
        models={k: wrap(m) for k, m in _judge_models(cfg, pool, model, judges).items()},
        config=cfg,
        renderer=renderer,
        topics=TopicProfiles.load(cfg.topics),
        on_event=on_event,
        history=history,
    )
    meter = UsageMeter(prices=prices)
    protocol = DebateProtocol(
        debaters,
        renderer,
        arguments=cfg.arguments,
        rounds=cfg.rounds,
        settings=ModelSettings(
            temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=seed, timeout=cfg.timeout
        ),
        policy=CallPolicy.of(cfg),
        meter=meter,
        on_event=on_event,
    )
    deadline = Deadline(cfg.deadline)
    try:
        transcript = await protocol.run(topic, deadline=deadline)
        panel_result = await panel.evaluate(transcript, seed=seed, meter=meter, deadline=deadline)
    finally:
        if own_pool:
            await pool.aclose()
    names = {"PRO": debaters.pro.name, "CON": debaters.con.name}
    return _result(transcript, panel_result, cfg, names)


async def judge_transcript(
    transcript: Transcript,
    *,
    config: RunConfig | None = None,
    model: Model | None = None,
    judges: Mapping[str, Model] | None = None,
    seed: int | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    model_path: str | None = None,
    cache: CacheSpec = None,
    pool: ModelPool | None = None,
    limiter: RateLimiter | None = None,
    prices: PriceTable | None = None,
    history: Mapping[str, float] | None = None,
    on_event: EventHandler | None = None,
) -> DebateResult:
    """Judge a transcript written by anyone: our debaters, people in a meeting, another tool.

    Takes the same arguments as :func:`run_debate` (except the debaters).
    """
    cfg = _config(config)
    seed = draw_seed() if seed is None else seed
    own_pool = pool is None
    pool = pool or ModelPool(cfg, api_key_env=api_key_env, seed=seed, model_path=model_path)
    wrap = _Wrapper(cache, limiter)
    panel = MultiJudgePanel(
        models={k: wrap(m) for k, m in _judge_models(cfg, pool, model, judges).items()},
        config=cfg,
        on_event=on_event,
        history=history,
    )
    try:
        panel_result = await panel.evaluate(transcript, seed=seed, meter=UsageMeter(prices=prices))
    finally:
        if own_pool:
            await pool.aclose()
    return _result(transcript, panel_result, cfg)


def _result(
    transcript: Transcript,
    panel: PanelResult,
    cfg: RunConfig,
    debaters: dict[str, str] | None = None,
) -> DebateResult:
    return DebateResult(
        topic=transcript.topic,
        transcript=transcript,
        debaters=debaters or {},
        evaluations=panel.evaluations,
        agreement=panel.agreement,
        vote=panel.vote,
        decision=panel.decision,
        usage=panel.usage,
        config=cfg,
        seed=panel.seed,
        version=__version__,
    )


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


def run_debate_sync(topic: str, **kwargs: object) -> DebateResult:
    """Blocking wrapper of :func:`run_debate` (same arguments)."""
    no_running_loop("run_debate")
    return asyncio.run(closing_given(run_debate(topic, **kwargs), kwargs))  # type: ignore[arg-type]


def judge_transcript_sync(transcript: Transcript, **kwargs: object) -> DebateResult:
    """Blocking wrapper of :func:`judge_transcript` (same arguments)."""
    no_running_loop("judge_transcript")
    return asyncio.run(closing_given(judge_transcript(transcript, **kwargs), kwargs))  # type: ignore[arg-type]


def load_transcript(path: str | Path) -> Transcript:
    """Read a transcript JSON file (or the ``transcript`` of a result.json).

    Raises:
        ConfigurationError: unreadable, not JSON, or not a valid transcript; the message
            names the field.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"transcript {path}: cannot read it ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"transcript {path}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); fix the file"
        ) from exc
    if isinstance(data, dict) and "transcript" in data and "decision" in data:
        data = data["transcript"]  # a result.json: judge its transcript again
    try:
        return Transcript.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(validation_message(exc, f"transcript {path}")) from exc


def write_json_atomic(path: str | Path, text: str) -> Path:
    """Write a file so that a reader never sees half of it (temp file + rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_result(result: DebateResult, out_dir: str | Path) -> Path:
    """Write ``OUT/result.json`` and return its path."""
    return write_json_atomic(Path(out_dir) / "result.json", result.model_dump_json(indent=2) + "\n")
