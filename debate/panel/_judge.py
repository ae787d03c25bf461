"""One judge's reading of a transcript: its request, the call, and the evaluation.

The request starts with the instructions shared by every judge and the proposition; the
transcript follows in this judge's own presentation order, and the judge's role comes
last. The reply schema is keyed by every argument id, in the order shown.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from debate.exceptions import ModelOutputError, ProviderError
from debate.models._base import Message, Model, ModelSettings
from debate.panel._positions import Presentation
from debate.records._config import JudgeSpec
from debate.records._transcript import RubricScore, Transcript, UnscoredReason, transcript_view
from debate.runtime._ask import CallContext, ask
from debate.runtime._prompts import PromptRenderer
from debate.runtime._replies import RubricDraft, judge_reply, keyed_items

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading:
    """What one call of one judge produced."""

    scores: dict[str, RubricScore] | None
    key_finding: str | None = None
    reason: UnscoredReason | None = None
    detail: str | None = None
    raw: str | None = None
    attempts: int = 1


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


async def read_transcript(
    model: Model,
    messages: list[Message],
    presentation: Presentation,
    settings: ModelSettings,
    call: CallContext,
    *,
    actor: str,
) -> Reading:
    """Call the judge once (with re-asks); failures become an unscored reading."""
    ids = presentation.order
    try:
        completion, attempts = await ask(
            model,
            messages,
            judge_reply(ids),
            settings,
            call,
            phase="judge",
            actor=actor,
        )
    except ModelOutputError as exc:
        logger.warning("judge %s unscored: %s", actor, exc.reason)
        return Reading(
            scores=None,
            reason=exc.reason,  # type: ignore[arg-type]
            detail=str(exc),
            raw=exc.raw,
            attempts=exc.attempts,
        )
    except ProviderError as exc:
        logger.warning("judge %s unscored: %s", actor, exc.kind)
        reason: UnscoredReason = "timeout" if exc.kind == "timeout" else "provider_error"
        return Reading(scores=None, reason=reason, detail=str(exc))
    reply = completion.parsed
    drafts: dict[str, RubricDraft] = keyed_items(reply.scores, ids)  # type: ignore[attr-defined]
    scores = {key: RubricScore(**draft.model_dump()) for key, draft in drafts.items()}
    return Reading(scores=scores, key_finding=reply.key_finding, attempts=attempts)  # type: ignore[attr-defined]
