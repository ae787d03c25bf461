"""Python entry points of council mode, and reading candidates from JSONL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from debate.council._review import Council, Reviewer, candidates_for
from debate.models import Model
from debate.panel import EscalationRule
from debate.records import Candidate, CouncilResult, RunConfig, draw_seed
from debate.runtime import Deadline, ModelPool, PromptRenderer, Run, blocking, given_models
from debate.storage import read_jsonl_records


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
    escalation: EscalationRule[CouncilResult] | None = None,
    run: Run | None = None,
    **legacy: Any,
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
        escalation: When the reviewers of the next tier (``JudgeSpec.tier``; a reviewer in
            ``reviewers`` takes the tier of the config's judge of its name, else 1) are
            asked; default: when the top of the ranking so far is tied
            (:func:`~debate.council._review.escalate_on_tied_top`). Generators review in
            tier 1.
        run: The machinery shared with other runs, as for :func:`debate.api.run_debate`:
            its pool's models are not closed here, and neither are the models passed in
            ``generate``, ``reviewers`` or ``model`` (they belong to the caller, so
            concurrent runs can share them). Its budget's refusal leaves a reviewer
            unscored and stops the council for a generator.
        **legacy: Deprecated: the fields of ``Run`` given one by one.
    """
    run = Run.of(run, legacy, "run_council")
    cfg = config or RunConfig()
    seed = draw_seed(seed)
    renderer = PromptRenderer.for_run(cfg).keyed(seed)
    deadline = Deadline(cfg.deadline)  # one budget for the answers and the reviews
    async with run.models(cfg, seed, given_models(model, reviewers, generate)) as models:
        council_reviewers = _reviewers(cfg, models, run, renderer, reviewers, model, generate)
        used = [m.name for m in generate or ()] + [r.model.name for r in council_reviewers]
        meter = run.meter(cfg, used)
        limited = [run.limit(m) for m in generate or ()]
        candidates = await candidates_for(
            question, candidates, limited, cfg, seed, run.call(cfg, meter), renderer, deadline
        )
        council = Council(
            council_reviewers, config=cfg, renderer=renderer, escalation=escalation, run=run
        )
        return await council.rank(question, candidates, seed=seed, meter=meter, deadline=deadline)


def _reviewers(
    cfg: RunConfig,
    pool: ModelPool,
    run: Run,
    renderer: PromptRenderer,
    reviewers: Mapping[str, Model] | None,
    model: Model | None,
    generate: Sequence[Model] | None,
) -> list[Reviewer]:
    if reviewers is not None:  # a reviewer named like a judge of the config takes its tier
        tiers = {spec.name: spec.tier for spec in cfg.judges}
        return [
            Reviewer(name, run.limit(m), tier=tiers.get(name, 1)) for name, m in reviewers.items()
        ]
    if generate:
        return [Reviewer(m.name, run.limit(m)) for m in generate]
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
        result.append(Reviewer(spec.name, run.limit(chosen), perspective, tier=spec.tier))
    return result


def run_council_sync(
    question: str, candidates: Sequence[Candidate] | None = None, **kwargs: Any
) -> CouncilResult:
    """Blocking wrapper of :func:`run_council`."""
    return blocking(run_council, question, candidates, **kwargs)
