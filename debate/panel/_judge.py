"""One judge's reading of a transcript: its request, the call, and the evaluation.

The request starts with the instructions shared by every judge and the proposition; the
transcript follows in this judge's own presentation order, and the judge's role comes
last. The reply schema is keyed by every argument id, in the order shown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from debate.exceptions import BudgetExceeded, ModelOutputError, ProviderError
from debate.models import Message, Model, ModelSettings
from debate.panel._positions import Presentation
from debate.panel._samples import consistency, moved, reading_seed
from debate.records import (
    JudgeEvaluation,
    JudgeSpec,
    RubricScore,
    SampleReading,
    SwapReading,
    Transcript,
    UnscoredReason,
    built,
    transcript_view,
    unscored,
)
from debate.runtime import (
    CallContext,
    Deadline,
    PromptRenderer,
    RubricDraft,
    ask,
    judge_reply,
    keyed_items,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading:
    """What one call of one judge produced."""

    scores: dict[str, RubricScore] | None
    key_finding: str | None = None
    key_finding_cut: bool = False
    reason: UnscoredReason | None = None
    detail: str | None = None
    raw: str | None = None
    attempts: int = 1

    def outcome(self) -> dict[str, Any]:
        """The fields a record of this reading carries: scored or not, and why not."""
        return {
            "status": "scored" if self.scores is not None else "unscored",
            "reason": self.reason,
            "detail": self.detail,
            "raw": self.raw,
            "scores": self.scores,
        }


def judge_request(
    renderer: PromptRenderer,
    spec: JudgeSpec,
    transcript: Transcript,
    presentation: Presentation,
    system: Message,
) -> list[Message]:
    """The messages one judge receives."""
    shown = presentation.positions
    arguments = sorted(transcript.arguments, key=lambda a: shown[a.id])
    cross = sorted(transcript.cross_examinations, key=lambda x: (x.round, shown[x.target]))
    closings = sorted(transcript.closings, key=lambda c: presentation.sides.index(c.side))
    prompt = renderer.render(
        "judge_request.md.jinja",
        topic=transcript.topic,
        role=spec.role,
        role_template=f"judge_role_{spec.role}.md.jinja",
        weights=spec.weights,
        ids=list(presentation.order),
        **transcript_view(arguments, cross, closings, order=presentation.sides),
    )
    return [system, Message(role="user", content=prompt)]


@dataclass(frozen=True)
class Sitting:
    """What every judge of one evaluation shares, bundled instead of threaded one by one."""

    transcript: Transcript
    system: Message
    """The judges' system prompt."""
    settings: ModelSettings
    renderer: PromptRenderer
    call: CallContext
    """Retry policy, usage meter, response cache and progress callback of the run."""
    deadline: Deadline
    swap: bool
    """Read a second time with the sides' order mirrored."""


async def read_transcript(
    sitting: Sitting,
    spec: JudgeSpec,
    model: Model,
    presentation: Presentation,
    actor: str,
    seed: int | None = None,
) -> Reading:
    """Call the judge once (with re-asks); failures become an unscored reading.

    ``seed``: this reading's sampling seed (a repeated reading's); default the sitting's.
    """
    ids = presentation.order
    messages = judge_request(
        sitting.renderer, spec, sitting.transcript, presentation, sitting.system
    )
    settings = sitting.settings
    if seed is not None and seed != settings.seed:
        settings = settings.model_copy(update={"seed": seed})
    try:
        completion, attempts = await ask(
            model,
            messages,
            judge_reply(ids),
            settings,
            sitting.call,
            phase="judge",
            actor=actor,
        )
    except (ModelOutputError, ProviderError, BudgetExceeded) as exc:
        why = unscored(exc)
        logger.warning("judge %s unscored: %s", actor, why["reason"])
        spent = exc.attempts if isinstance(exc, ModelOutputError | BudgetExceeded) else 1
        return Reading(scores=None, attempts=spent, **why)
    reply = completion.parsed
    drafts: dict[str, RubricDraft] = keyed_items(reply.scores, ids)  # type: ignore[attr-defined]
    # Each draft was validated as the reply was (a RubricDraft is a RubricScore with its
    # note's limit): its fields are taken as they stand, not validated again, into the
    # record's template (records.built: model_construct's per-call field walk was most of it).
    # vars(), not dict(): dict() first asks the draft for ``keys``, and a pydantic model's
    # missing-attribute path cost more than building the record.
    scores = {key: built(RubricScore, **vars(draft)) for key, draft in drafts.items()}
    return Reading(
        scores=scores,
        key_finding=reply.key_finding,  # type: ignore[attr-defined]
        key_finding_cut=reply.key_finding_cut,  # type: ignore[attr-defined]
        attempts=attempts,
    )


async def evaluate_judge(
    sitting: Sitting,
    spec: JudgeSpec,
    model: Model,
    presentation: Presentation,
    further: Sequence[Presentation] = (),
) -> JudgeEvaluation:
    """One judge's evaluation: its reading (and the mirrored one), unscored past the deadline.

    ``further``: the orders of its repeated readings 2 to k (:mod:`debate.panel._samples`).
    """

    async def readings() -> JudgeEvaluation:
        if further:
            return await _sampled(sitting, spec, model, [presentation, *further])
        first = await read_transcript(sitting, spec, model, presentation, spec.name)
        swap = await _swapped(sitting, spec, model, presentation, first)
        return _evaluation(spec, model, presentation, first, swap)

    try:
        return await asyncio.wait_for(readings(), sitting.deadline.remaining())
    except asyncio.TimeoutError:
        seconds = sitting.deadline.seconds
        late = Reading(
            scores=None,
            reason="timeout",
            detail=f"the deadline of {seconds:g} s passed before this judge finished",
        )
        return _evaluation(spec, model, presentation, late)


async def _swapped(
    sitting: Sitting, spec: JudgeSpec, model: Model, presentation: Presentation, first: Reading
) -> SwapReading | None:
    """The swap check's second reading of ``first``, when the check is on."""
    if not sitting.swap:
        return None
    mirrored = presentation.mirrored()
    second = await read_transcript(sitting, spec, model, mirrored, f"{spec.name} (swapped)")
    return swap_reading(first, second, mirrored)


async def _sampled(
    sitting: Sitting, spec: JudgeSpec, model: Model, shown: list[Presentation]
) -> JudgeEvaluation:
    """The judge's k readings, each in its own order with its own seed, asked together.

    The record's ``scores`` (with key finding and positions) are the first scored
    reading's: a rubric score is an integer a judge gave, and a mean of several is not
    one; the statistics average every scored reading (:func:`score_matrices`). The swap
    check, when on, mirrors the first reading.
    """
    seed = sitting.settings.seed
    found = await asyncio.gather(
        *(
            read_transcript(
                sitting,
                spec,
                model,
                order,
                spec.name if i == 0 else f"{spec.name} (reading {i + 1})",
                reading_seed(seed, spec.name, i),
            )
            for i, order in enumerate(shown)
        )
    )
    records = [
        SampleReading(
            index=i + 1,
            seed=reading_seed(seed, spec.name, i),
            positions=order.positions,
            **reading.outcome(),
        )
        for i, (reading, order) in enumerate(zip(found, shown, strict=True))
    ]
    swap = await _swapped(sitting, spec, model, shown[0], found[0])
    scored = [i for i, r in enumerate(found) if r.scores is not None]
    chosen = scored[0] if scored else 0
    head = found[chosen]
    if not scored:
        head = replace(
            head, detail=f"all {len(found)} readings unscored; first: {head.detail or head.reason}"
        )
    evaluation = _evaluation(spec, model, shown[chosen], head, swap)
    ids = shown[0].order
    agreed = consistency([r.scores for r in found if r.scores is not None], ids)
    return evaluation.model_copy(
        update={
            "readings": records,
            "consistency": agreed,
            "attempts": sum(r.attempts for r in found),
        }
    )


def _evaluation(
    spec: JudgeSpec,
    model: Model,
    presentation: Presentation,
    reading: Reading,
    swap: SwapReading | None = None,
) -> JudgeEvaluation:
    """The record of one judge: who, in which order it read, and what its reading gave."""
    return JudgeEvaluation(
        judge=spec.name,
        role=spec.role,
        model=model.name,
        **reading.outcome(),
        key_finding=reading.key_finding,
        key_finding_cut=reading.key_finding_cut,
        attempts=reading.attempts,
        positions=presentation.positions,
        swap=swap,
    )


def swap_reading(first: Reading, second: Reading, mirrored: Presentation) -> SwapReading:
    """Compare two readings of one judge: which standings moved with the presentation."""
    sensitive: list[str] = []
    agreed = None
    if first.scores is not None and second.scores is not None:
        pair = [first.scores, second.scores]
        sensitive = moved(pair, mirrored.order)
        agreed = consistency(pair, mirrored.order)
    return SwapReading(
        **second.outcome(),
        positions=mirrored.positions,
        position_sensitive=sensitive,
        consistency=agreed,
    )
