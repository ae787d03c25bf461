"""Council mode: the panel ranks N candidate answers to one question.

Each reviewer sees the candidates in its own shuffled order under anonymous labels
(A, B, ...), scores each on the rubric and ranks them. The council then reports, side by
side, z-normalised score averaging with standard-error tie flags (the default ranking),
Borda count with the council rules, and raw rubric means, and says which candidates are
effectively tied. A reviewer's scores and rank for an answer its own model wrote are left
out.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator
from pydantic.json_schema import SkipJsonSchema

from debate._checks import repeated
from debate._version import __version__
from debate.council._aggregate import aggregate
from debate.exceptions import (
    BudgetExceeded,
    ConfigurationError,
    DebaterError,
    ModelOutputError,
    ProviderError,
)
from debate.models import Message, Model, ModelSettings
from debate.panel import (
    Escalation,
    EscalationRule,
    Tier,
    labelled_order,
    run_cascade,
    tiers_of,
    upto,
)
from debate.records import (
    Candidate,
    CouncilDimensions,
    CouncilResult,
    CouncilScore,
    Frozen,
    Review,
    RunConfig,
    tier_problem,
    unscored,
)
from debate.runtime import (
    CallContext,
    Commented,
    Deadline,
    PromptRenderer,
    Run,
    UsageMeter,
    ask,
    commentary,
    run_settings,
)


@dataclass(frozen=True)
class Reviewer:
    """One member of the council."""

    name: str
    model: Model
    perspective: str | None = None
    tier: int = 1
    """Cascade tier (``JudgeSpec.tier`` of the judge it reviews as): tier 2 reviews only
    when tier 1's ranking is not confident (see :func:`escalate_on_tied_top`)."""


def escalate_on_tied_top(decided: CouncilResult, tier: int) -> Escalation:
    """The default rule of a council: ask the next tier when the top is tied or missing.

    Tied is the council's own flag (``tied_with_next`` on the first place: the ``tie_z``
    intervals of the first two overlap).
    """
    if not decided.rankings:
        return Escalation(True, f"{upto(tier)}: no candidate could be ranked")
    top = decided.rankings[0]
    if top.tied_with_next:
        return Escalation(True, f"{upto(tier)}: {top.candidate} is tied for first place")
    return Escalation(False, f"{upto(tier)}: {top.candidate} ranks first, not tied")


class Answer(Frozen):
    """A generated candidate answer."""

    answer: str = Field(min_length=1, max_length=4000)


NOTES_CHARS = 300


class _Scores(CouncilDimensions, Commented):
    notes: str = commentary(NOTES_CHARS)
    notes_cut: SkipJsonSchema[bool] = False
    """Set by the validator when the notes were cut; not part of the schema sent."""


class _GatedScores(_Scores):
    unsafe: bool = Field(strict=True)
    """Strict like the scores: ``"false"`` or ``0`` is not an answer to the safety gate."""


@lru_cache(maxsize=64)
def review_reply(labels: tuple[str, ...], gated: bool) -> type[BaseModel]:
    """The reviewer's reply: scores keyed by every label (all required), then a ranking."""
    item = _GatedScores if gated else _Scores
    fields: dict[str, Any] = {f"k{i}": (item, Field(alias=label)) for i, label in enumerate(labels)}
    evaluations = create_model("Evaluations", __base__=Frozen, **fields)
    label_type = Literal[labels]  # type: ignore[valid-type]

    def _distinct(value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("ranking lists a label twice; list each label once, best first")
        return value

    model: type[BaseModel] = create_model(
        "CouncilReview",
        __base__=Frozen,
        __validators__={"_distinct": field_validator("ranking")(_distinct)},
        evaluations=(evaluations, ...),
        ranking=(list[label_type], Field(max_length=len(labels))),
    )
    return model


@dataclass(frozen=True)
class _Sitting:
    """What every reviewer of one question shares, built once per :meth:`Council.rank`."""

    question: str
    candidates: Sequence[Candidate]
    seed: int
    renderer: PromptRenderer
    """The council's renderer keyed by the seed."""
    settings: ModelSettings
    call: CallContext
    deadline: Deadline
    """The run's wall-clock budget: a reviewer still working when it passes is unscored."""


class Council:
    """Reviewers plus settings; :meth:`rank` runs one question.

    ``escalation`` says when the reviewers of the next tier are asked (default
    :func:`escalate_on_tied_top`); without tiers it is consulted once and its reason kept.
    ``run``: the machinery shared with other runs; the council reads its progress callback
    and response cache (its models are the reviewers').
    """

    def __init__(
        self,
        reviewers: Sequence[Reviewer],
        *,
        config: RunConfig | None = None,
        renderer: PromptRenderer | None = None,
        escalation: EscalationRule[CouncilResult] | None = None,
        run: Run | None = None,
    ) -> None:
        if not reviewers:
            raise ConfigurationError("reviewers: the council needs at least one reviewer")
        names = [r.name for r in reviewers]
        if len(set(names)) != len(names):
            raise ConfigurationError("reviewers: reviewer names must be unique")
        problem = tier_problem([r.tier for r in reviewers], "reviewer")
        if problem is not None:
            raise ConfigurationError(f"reviewers: {problem}")
        self.reviewers = list(reviewers)
        self.config = config or RunConfig()
        self.renderer = renderer or PromptRenderer.for_run(self.config)
        self.on_event = None if run is None else run.on_event
        self.cache = None if run is None else run.cache
        self.escalation: EscalationRule[CouncilResult] = escalation or escalate_on_tied_top

    async def rank(
        self,
        question: str,
        candidates: Sequence[Candidate],
        *,
        seed: int,
        meter: UsageMeter | None = None,
        deadline: Deadline | None = None,
    ) -> CouncilResult:
        """Review every candidate with the reviewers, concurrently, tier by tier; aggregate.

        Without tiers every reviewer is asked at once; with tiers, the next tier only when
        the escalation rule says the ranking so far is not confident (the result's
        ``cascade`` says which tiers were asked and why).

        Reviewers still running when ``deadline`` (default: ``config.deadline`` from now)
        passes are recorded as unscored (timeout), as a panel's judges are.
        """
        check_candidates(question, candidates)
        sitting = _Sitting(
            question=question,
            candidates=candidates,
            seed=seed,
            renderer=self.renderer.keyed(seed),  # the same seed renders the same prompts
            settings=run_settings(self.config, seed),
            call=CallContext.of(self.config, meter, self.cache, self.on_event),
            deadline=deadline or Deadline(self.config.deadline),
        )
        by_name = {r.name: r for r in self.reviewers}
        done: dict[str, Review] = {}

        async def ask(tier: Tier) -> None:
            asked = [by_name[name] for name in tier.members]
            reviews = await asyncio.gather(*(self._review(r, sitting) for r in asked))
            done.update(zip(tier.members, reviews, strict=True))

        async def conclude(tier: int) -> CouncilResult:
            reviews = [done[r.name] for r in self.reviewers if r.tier <= tier]
            ranked = aggregate(
                question,
                list(candidates),
                reviews,
                self.config,
                usage=sitting.call.meter.snapshot(),
                seed=seed,
                version=__version__,
            )
            return ranked.model_copy(update={"tier": tier})

        tiers = tiers_of([(r.name, r.tier) for r in self.reviewers], 1)
        result, cascade = await run_cascade(
            tiers, ask, conclude, self.escalation, sitting.call.meter
        )
        return result.model_copy(update={"cascade": cascade})

    def _messages(
        self, reviewer: Reviewer, sitting: _Sitting, shown: list[tuple[str, Candidate]]
    ) -> list[Message]:
        """The reviewer's request: the candidates under their labels, in its own order."""
        renderer = sitting.renderer
        prompt = renderer.render(
            "council_review.md.jinja",
            question=sitting.question,
            candidates=[{"label": label, "text": c.text} for label, c in shown],
            labels=tuple(label for label, _ in shown),
            perspective=reviewer.perspective,
            safety_gate=self.config.council.safety_gate,
        )
        return [
            Message(role="system", content=renderer.render("council_system.md.jinja")),
            Message(role="user", content=prompt),
        ]

    async def _review(self, reviewer: Reviewer, sitting: _Sitting) -> Review:
        candidates = sitting.candidates
        rng = random.Random(f"{sitting.seed}:council:{reviewer.name}")
        shown = labelled_order([c.id for c in candidates], rng=rng)
        by_id = {c.id: c for c in candidates}
        labels = tuple(label for label, _, _ in shown)
        common: dict[str, Any] = {
            "reviewer": reviewer.name,
            "model": reviewer.model.name,
            "labels": {label: cid for label, cid, _ in shown},
            "positions": {cid: pos for _, cid, pos in shown},
            "self_votes_excluded": sorted(
                c.id for c in candidates if c.author_model == reviewer.model.name
            ),
        }
        asked = ask(
            reviewer.model,
            self._messages(reviewer, sitting, [(lb, by_id[cid]) for lb, cid, _ in shown]),
            review_reply(labels, self.config.council.safety_gate),
            sitting.settings,
            sitting.call,
            phase="council",
            actor=reviewer.name,
        )
        try:
            completion, _ = await asyncio.wait_for(asked, sitting.deadline.remaining())
        except TimeoutError:
            detail = f"the deadline of {sitting.deadline.seconds:g} s passed before this review"
            return Review(**common, status="unscored", reason="timeout", detail=detail)
        except (ModelOutputError, ProviderError, BudgetExceeded) as exc:
            return Review(**common, status="unscored", **unscored(exc))
        return _scored_review(common, labels, completion.parsed)


def _scored_review(common: dict[str, Any], labels: tuple[str, ...], reply: Any) -> Review:
    """The review a valid reply gives: scores and ranking by candidate id, not by label."""
    by_label: dict[str, str] = common["labels"]
    scores = {
        by_label[label]: CouncilScore(**getattr(reply.evaluations, f"k{i}").model_dump())
        for i, label in enumerate(labels)
    }
    ranking = [by_label[label] for label in reply.ranking]
    return Review(**common, status="scored", scores=scores, ranking=ranking)


async def candidates_for(
    question: str,
    given: Sequence[Candidate] | None,
    generators: Sequence[Model],
    config: RunConfig,
    seed: int,
    call: CallContext,
    renderer: PromptRenderer,
    deadline: Deadline,
) -> Sequence[Candidate]:
    """The candidates to rank: the generators' answers if any, else those given; checked.

    The answers are written within ``deadline``, the one the reviews then share.
    """
    if generators:
        answers = generate_candidates(question, generators, config, seed, call, renderer)
        [given] = await deadline.run("candidate answers", answers)
    if given is None:
        raise ConfigurationError("candidates: give candidates or models to --generate them")
    check_candidates(question, given)
    return given


def check_candidates(question: str, candidates: Sequence[Candidate]) -> None:
    """At least two candidates with distinct ids, and a question."""
    if not question.strip():
        raise ConfigurationError("question: it is empty; give the question the candidates answer")
    if len(candidates) < 2:
        raise ConfigurationError(
            f"candidates: {len(candidates)} given; the council ranks at least two answers"
        )
    ids = [c.id for c in candidates]
    dupes = repeated(ids)
    if dupes:
        raise ConfigurationError(f"candidates: id {dupes[0]} appears twice; give each its own id")


async def generate_candidates(
    question: str,
    models: Sequence[Model],
    config: RunConfig,
    seed: int,
    call: CallContext,
    renderer: PromptRenderer,
) -> list[Candidate]:
    """Each model answers the question first; the answers become the candidates.

    ``call``: the run's, shared with the reviews (:meth:`~debate.runtime._run.Run.call`).
    """
    prompt = renderer.render("council_answer.md.jinja", question=question)
    settings = run_settings(config, seed)

    async def one(model: Model) -> Candidate:
        try:
            completion, _ = await ask(
                model,
                [Message(role="user", content=prompt)],
                Answer,
                settings,
                call,
                phase="council",
                actor=model.name,
            )
        except (ModelOutputError, ProviderError) as exc:
            raise DebaterError(f"model {model.name} could not answer the question: {exc}") from exc
        except BudgetExceeded as exc:  # no ranking without every answer, as for a debate
            raise BudgetExceeded(
                f"the council stopped before its reviews, {exc}; completed calls are kept in "
                "the response cache: run the same command with a larger cap to continue"
            ) from exc
        return Candidate(id=model.name, text=completion.parsed.answer, author_model=model.name)

    return list(await asyncio.gather(*(one(m) for m in models)))
