"""Python entry points of council mode, and reading candidates from JSONL."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

from debate.council._review import Council, Reviewer, check_candidates, generate_candidates
from debate.exceptions import ConfigurationError
from debate.models._base import Model
from debate.panel._cascade import EscalationRule
from debate.records._config import RunConfig
from debate.records._council import Candidate, CouncilResult
from debate.records._seed import draw_seed
from debate.runtime._ask import UsageMeter
from debate.runtime._budget import Budget
from debate.runtime._deadline import Deadline
from debate.runtime._events import EventHandler
from debate.runtime._limiter import RateLimiter
from debate.runtime._pool import (
    CacheSpec,
    ModelPool,
    _Wrapper,
    closing_given,
    no_running_loop,
    owned_pool,
    run_prices,
)
from debate.runtime._pricing import PriceTable
from debate.runtime._prompts import PromptRenderer
from debate.storage._files import read_jsonl_records


def load_candidates(path: str | Path) -> list[Candidate]:
    """Read candidates from JSONL: one ``{"id", "text", "author_model"?}`` per line.

    Raises:
        ConfigurationError: unreadable file, a bad line (named by its number), repeated ids.
    """
    return [c for _, c in read_jsonl_records(path, "candidates", Candidate)]


async def run_council(
    question: str,
    candidates: Sequence[Candidate] | None = None,
    *,
    generate: Sequence[Model] | None = None,
    reviewers: Mapping[str, Model] | None = None,
    model: Model | None = None,
    config: RunConfig | None = None,
    seed: int | None = None,
    model_path: str | None = None,
    cache: CacheSpec = None,
    pool: ModelPool | None = None,
    limiter: RateLimiter | None = None,
    prices: PriceTable | None = None,
    budget: Budget | None = None,
    on_event: EventHandler | None = None,
    escalation: EscalationRule[CouncilResult] | None = None,
) -> CouncilResult:
    """Rank candidate answers to ``question``.

    Args:
        question: The question the candidates answer.
        candidates: Answers written by people or models (or use ``generate``).
        generate: Models that each answer the question first; they also review, and their
            reviews of their own answers are excluded.
        reviewers: Reviewer name -> model (default: the panel's judges, or the generators).
        model: One model for every reviewer (default: the config's model).
        config: Settings, including ``config.council`` (method, rubric weights, safety gate)
            and the endpoints each judge's reviewer is served by (``JudgeSpec.endpoint``).
        seed: Seed of the reviewers' shuffles and of sampling; drawn when not given.
        model_path: A GGUF file for the embedded backend.
        cache: Response cache path or object.
        pool: Models shared with other runs (a calibration, a batch); they are not closed
            here. Models passed in ``generate``, ``reviewers`` or ``model`` belong to the
            caller and are not closed either, so concurrent runs can share them.
        limiter: Requests/tokens-per-minute limiter (as for :func:`debate.api.run_debate`).
        prices: Price table (default: the shipped one).
        budget: Caps on cost and tokens; a reviewer's call it refuses leaves the reviewer
            unscored, a generator's stops the council.
        on_event: Progress callback.
        escalation: When the reviewers of the next tier (``JudgeSpec.tier``; a reviewer in
            ``reviewers`` takes the tier of the config's judge of its name, else 1) are
            asked; default: when the top of the ranking so far is tied
            (:func:`~debate.council._review.escalate_on_tied_top`). Generators review in
            tier 1.
    """
    cfg = config or RunConfig()
    seed = draw_seed(seed)
    wrap = _Wrapper(cache, limiter)
    renderer = PromptRenderer.for_run(cfg).keyed(seed)
    deadline = Deadline(cfg.deadline)  # one budget for the answers and the reviews
    async with owned_pool(pool, cfg, seed=seed, model_path=model_path) as models:
        council_reviewers = _reviewers(cfg, models, wrap, renderer, reviewers, model, generate)
        used = [m.name for m in generate or ()] + [r.model.name for r in council_reviewers]
        meter = UsageMeter.for_run(run_prices(cfg, prices), budget, used)
        if generate:
            answers = generate_candidates(
                question,
                [wrap(m) for m in generate],
                config=cfg,
                seed=seed,
                meter=meter,
                renderer=renderer,
                on_event=on_event,
                cache=wrap.cache,
            )
            [candidates] = await deadline.run("candidate answers", answers)
        if candidates is None:
            raise ConfigurationError("candidates: give candidates or models to --generate them")
        check_candidates(question, candidates)
        council = Council(
            council_reviewers,
            config=cfg,
            renderer=renderer,
            on_event=on_event,
            cache=wrap.cache,
            escalation=escalation,
        )
        return await council.rank(question, candidates, seed=seed, meter=meter, deadline=deadline)


def _reviewers(
    cfg: RunConfig,
    pool: ModelPool,
    wrap: _Wrapper,
    renderer: PromptRenderer,
    reviewers: Mapping[str, Model] | None,
    model: Model | None,
    generate: Sequence[Model] | None,
) -> list[Reviewer]:
    if reviewers is not None:  # a reviewer named like a judge of the config takes its tier
        tiers = {spec.name: spec.tier for spec in cfg.judges}
        return [Reviewer(name, wrap(m), tier=tiers.get(name, 1)) for name, m in reviewers.items()]
    if generate:
        return [Reviewer(m.name, wrap(m)) for m in generate]
    result = []
    for spec in cfg.judges:
        own = spec.model is not None or spec.endpoint is not None
        chosen = (
            model
            if model is not None and not own
            else pool.get(spec.model, spec.endpoint, config=cfg)
        )
        perspective = (
            f"You review as the {spec.role} judge. "
            + renderer.render(f"judge_role_{spec.role}.md.jinja").strip()
        )
        result.append(Reviewer(spec.name, wrap(chosen), perspective, tier=spec.tier))
    return result


def run_council_sync(
    question: str, candidates: Sequence[Candidate] | None = None, **kwargs: object
) -> CouncilResult:
    """Blocking wrapper of :func:`run_council`."""
    no_running_loop("run_council")
    return asyncio.run(closing_given(run_council(question, candidates, **kwargs), kwargs))  # type: ignore[arg-type]
