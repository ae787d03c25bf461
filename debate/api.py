"""The Python entry points: run a debate, judge a transcript, write the result."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from debate._version import __version__
from debate.exceptions import BudgetExceeded, ConfigurationError
from debate.models import Model, ModelSettings
from debate.panel import EscalationRule, MultiJudgePanel
from debate.protocol import DebateProtocol, Debaters
from debate.records import (
    SIDES,
    DebateResult,
    PanelResult,
    RunConfig,
    Transcript,
    check_topic,
    check_unicode,
    draw_seed,
    parse_json,
    validation_message,
)
from debate.runtime import (
    CallContext,
    Deadline,
    ModelPool,
    PromptRenderer,
    Run,
    blocking,
    given_models,
)
from debate.storage import write_json_atomic


def _config(config: RunConfig | None) -> RunConfig:
    return config if config is not None else RunConfig()


def _judge_models(
    config: RunConfig, pool: ModelPool, model: Model | None, judges: Mapping[str, Model] | None
) -> dict[str, Model]:
    """Each judge's model: the caller's, the caller's shared one, or the config's.

    The caller's shared ``model`` stands in only for a judge that names neither a model nor
    an endpoint; any other is built at the endpoint it names.
    """
    chosen: dict[str, Model] = {}
    for spec in config.judges:
        if judges is not None and spec.name in judges:
            chosen[spec.name] = judges[spec.name]
        elif model is not None and spec.model is None and spec.endpoint is None:
            chosen[spec.name] = model
        else:
            chosen[spec.name] = pool.get(spec.model, spec.endpoint, config=config)
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
    escalation: EscalationRule[PanelResult] | None = None,
    run: Run | None = None,
    **legacy: Any,
) -> DebateResult:
    """Run a whole debate and judge it.

    Args:
        topic: The proposition, e.g. "Should we migrate to Kubernetes this year?".
        config: Panel and debate settings (defaults: 3 arguments a side, 4 judges),
            including the endpoints (``endpoints``, ``base_url``/``api_key_env``) that the
            debaters' and judges' models are served by, each with its own key.
        model: One model for every debater and judge (overrides ``config.model``).
        pro: Model of the PRO side (overrides ``model``).
        con: Model of the CON side (overrides ``model``).
        judges: Model per judge name.
        seed: Sampling seed, recorded in the result.
        escalation: When the judges of the next tier (``JudgeSpec.tier``) are asked:
            default when the tiers asked so far declared no winner; ``ask_every_tier``
            asks them all (see :mod:`debate.panel._cascade`).
        run: The machinery shared with other runs (:class:`~debate.runtime._run.Run`):
            model pool, response cache, rate limiter, prices, budget (a judge's call it
            refuses leaves the judge unscored, a debater's raises BudgetExceeded), track
            records, progress callback, embedded model file. Default: ``Run()``.
        **legacy: Deprecated: the fields of ``Run`` given one by one (``cache=``,
            ``budget=``...); they still work, with a DeprecationWarning.

    Returns:
        The result, with the transcript, each judge's evaluation, agreement, vote and
        decision (``decision.tier``: the tier that decided), and the ``cascade``.
    """
    run = Run.of(run, legacy, "run_debate")
    _check_topic(topic)
    cfg = _config(config)
    seed = draw_seed(seed)
    renderer = PromptRenderer.for_run(cfg).keyed(seed)
    deadline = Deadline(cfg.deadline)
    async with run.models(cfg, seed, given_models(model, pro, con, judges)) as models:
        debaters = _debaters(cfg, models, run, model, pro, con)
        judged = _judge_models(cfg, models, model, judges)
        meter = run.meter(cfg, _names(debaters.pro, debaters.con, judged))
        panel = _panel(cfg, judged, run, renderer, escalation)
        protocol = _protocol(cfg, debaters, renderer, seed, run.call(cfg, meter))
        transcript = await _debated(protocol, topic, deadline)
        panel_result = await panel.evaluate(transcript, seed=seed, meter=meter, deadline=deadline)
    return _result(transcript, panel_result, cfg, {s: debaters.of(s).name for s in SIDES})


def _names(*models: Model | Mapping[str, Model]) -> list[str]:
    """The names of a run's models, given one by one or by name."""
    flat = [m for x in models for m in (x.values() if isinstance(x, Mapping) else [x])]
    return [m.name for m in flat]


async def _debated(protocol: DebateProtocol, topic: str, deadline: Deadline) -> Transcript:
    """The debate's transcript; a debater's call refused by the budget stops the debate.

    As with the deadline, there is no transcript to judge without every move, and the
    completed calls are in the response cache, so a re-run with a larger cap continues
    (replayed calls cost nothing).
    """
    try:
        return await protocol.run(topic, deadline=deadline)
    except BudgetExceeded as exc:
        raise BudgetExceeded(
            f"the debate stopped before its end, {exc}; completed calls are kept in the "
            "response cache: run the same command with a larger cap to continue"
        ) from exc


def _debaters(
    cfg: RunConfig,
    models: ModelPool,
    run: Run,
    model: Model | None,
    pro: Model | None,
    con: Model | None,
) -> Debaters:
    """Each side's model: its own, else the shared one, else the config's (rate-limited)."""
    return Debaters(
        pro=run.limit(pro or model or models.get(cfg.pro_model, cfg.pro_endpoint, config=cfg)),
        con=run.limit(con or model or models.get(cfg.con_model, cfg.con_endpoint, config=cfg)),
    )


def _check_topic(topic: str) -> None:
    try:
        check_topic(topic)
    except ValueError as exc:
        raise ConfigurationError(f"topic: {exc}") from exc
    check_unicode(topic, "topic")


def _panel(
    cfg: RunConfig,
    judges: Mapping[str, Model],
    run: Run,
    renderer: PromptRenderer | None = None,
    escalation: EscalationRule[PanelResult] | None = None,
) -> MultiJudgePanel:
    """The run's panel: judges rate-limited like the debaters, replies in the run's cache.

    Topic profiles are the panel's default for ``cfg`` (``cfg.topics`` or the shipped table).
    """
    return MultiJudgePanel(
        models={name: run.limit(m) for name, m in judges.items()},
        config=cfg,
        renderer=renderer,
        escalation=escalation,
        run=run,
    )


def _protocol(
    cfg: RunConfig,
    debaters: Debaters,
    renderer: PromptRenderer,
    seed: int,
    call: CallContext,
) -> DebateProtocol:
    """The debaters' side of a run, with the run's settings."""
    return DebateProtocol(
        debaters,
        renderer,
        arguments=cfg.arguments,
        rounds=cfg.rounds,
        settings=ModelSettings(
            temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=seed, timeout=cfg.timeout
        ),
        call=call,
    )


async def judge_transcript(
    transcript: Transcript,
    *,
    config: RunConfig | None = None,
    model: Model | None = None,
    judges: Mapping[str, Model] | None = None,
    seed: int | None = None,
    escalation: EscalationRule[PanelResult] | None = None,
    run: Run | None = None,
    **legacy: Any,
) -> DebateResult:
    """Judge a transcript written by anyone: our debaters, people in a meeting, another tool.

    Takes the same arguments as :func:`run_debate` (except the debaters).
    """
    run = Run.of(run, legacy, "judge_transcript")
    check_unicode(transcript, "transcript")
    cfg = _config(config)
    seed = draw_seed(seed)
    async with run.models(cfg, seed, given_models(model, judges)) as models:
        judged = _judge_models(cfg, models, model, judges)
        meter = run.meter(cfg, _names(judged))
        panel = _panel(cfg, judged, run, escalation=escalation)
        panel_result = await panel.evaluate(transcript, seed=seed, meter=meter)
    return _result(transcript, panel_result, cfg)


def _result(
    transcript: Transcript,
    panel: PanelResult,
    cfg: RunConfig,
    debaters: dict[str, str] | None = None,
) -> DebateResult:
    # Every field of the panel's result is a field of the debate result, under its name.
    return DebateResult(
        topic=transcript.topic,
        transcript=transcript,
        debaters=debaters or {},
        config=cfg,
        version=__version__,
        **dict(panel),
    )


def run_debate_sync(topic: str, **kwargs: Any) -> DebateResult:
    """Blocking wrapper of :func:`run_debate` (same arguments)."""
    return blocking(run_debate, topic, **kwargs)


def judge_transcript_sync(transcript: Transcript, **kwargs: Any) -> DebateResult:
    """Blocking wrapper of :func:`judge_transcript` (same arguments)."""
    return blocking(judge_transcript, transcript, **kwargs)


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
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"transcript {path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
        ) from exc
    try:
        data = parse_json(text, f"transcript {path}")
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


def write_result(result: DebateResult, out_dir: str | Path) -> Path:
    """Write ``OUT/result.json`` and return its path."""
    return write_json_atomic(Path(out_dir) / "result.json", result.model_dump_json(indent=2) + "\n")
