"""Deliberation: after the first scoring, judges see each other's reasoning and may revise.

Multi-agent evaluation (ChatEval, Chan et al., ICLR 2024; D3) lets judges discuss before
the verdict. Here every scored judge gets one more call when the panel split on some
argument (the scored judges' standings differ, or its variance across judges reached
``thresholds.variance``, the rule that names high-variance arguments). The call shows, for
the split arguments only, the other judges' scores, standings and notes (delimited as
data: another model's text is untrusted like a debater's) and the judge's own first
scores; the judge answers ``revise`` (new scores and standing) or ``keep``, each with a
reason. Unsplit arguments keep their first scores. A judge whose call fails keeps its first
scores and the failure is recorded. The decision is then made again on the final scores;
the first round's decision and a summary of the movement (:mod:`._herding`) are kept.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from debate.exceptions import BudgetExceeded, ModelOutputError, ProviderError
from debate.models import Message, Model
from debate.panel._herding import (
    calibrated_alpha,
    judge_moves,
    mean_abs_change,
    moves_of,
    only_toward,
)
from debate.panel._judge import Sitting, judge_request
from debate.panel._positions import Presentation
from debate.panel._rules import high_variance_arguments
from debate.records import (
    ArgumentDeliberation,
    DeliberationSummary,
    JudgeDeliberation,
    JudgeEvaluation,
    JudgeSpec,
    PanelResult,
    RubricScore,
    unscored,
)
from debate.runtime import ask, deliberation_reply, keyed_items, neutralise_markers
from debate.stats import Method as CalibrationMethod

logger = logging.getLogger(__name__)

TEMPLATE = "judge_deliberation.md.jinja"

Why = Literal["standings", "variance"]


def split_arguments(first: PanelResult, ids: list[str], limit: float) -> dict[str, list[Why]]:
    """The arguments the scored judges split on, in transcript order, and why each.

    ``standings``: the scored judges gave it different standings; ``variance``: its
    variance across judges reached ``limit`` (:func:`high_variance_arguments`).
    """
    scored = [e.scores for e in first.evaluations if e.scores is not None]
    if len(scored) < 2:
        return {}
    high = set(high_variance_arguments(first.agreement.argument_variance, limit))
    found: dict[str, list[Why]] = {}
    for arg_id in ids:
        why: list[Why] = []
        if len({s[arg_id].standing for s in scored}) > 1:
            why.append("standings")
        if arg_id in high:
            why.append("variance")
        if why:
            found[arg_id] = why
    return found


def deliberation_request(
    sitting: Sitting,
    spec: JudgeSpec,
    presentation: Presentation,
    own: JudgeEvaluation,
    others: list[JudgeEvaluation],
    split: list[str],
) -> list[Message]:
    """The judge's first request, its first scores as its reply, then the deliberation.

    The first two messages are the judge's first reading as it was sent (the provider's
    prefix cache applies); the other judges' notes enter the template only as variables,
    through the ``data`` filter.
    """
    assert own.scores is not None
    first = judge_request(sitting.renderer, spec, sitting.transcript, presentation, sitting.system)
    replied = {
        "scores": {a: s.model_dump(exclude={"note_cut"}) for a, s in own.scores.items()},
        "key_finding": own.key_finding or "",
    }
    arguments = [
        {
            "id": arg_id,
            "own": own.scores[arg_id],
            "others": [
                {"role": o.role, **o.scores[arg_id].model_dump()}
                for o in others
                if o.scores is not None
            ],
        }
        for arg_id in split
    ]
    prompt = sitting.renderer.render(TEMPLATE, arguments=arguments)
    return [
        *first,
        # The judge's own notes may quote a debater: no chat-template marker opens a turn.
        Message(role="assistant", content=neutralise_markers(json.dumps(replied))),
        Message(role="user", content=prompt),
    ]


async def reconsider(
    sitting: Sitting,
    spec: JudgeSpec,
    model: Model,
    presentation: Presentation,
    own: JudgeEvaluation,
    others: list[JudgeEvaluation],
    split: list[str],
) -> JudgeEvaluation:
    """One judge's deliberation call, folded into its evaluation (first scores kept)."""
    assert own.scores is not None
    messages = deliberation_request(sitting, spec, presentation, own, others, split)
    ids = tuple(split)
    try:
        completion, attempts = await asyncio.wait_for(
            ask(
                model,
                messages,
                deliberation_reply(ids),
                sitting.settings,
                sitting.call,
                phase="deliberation",
                actor=spec.name,
            ),
            sitting.deadline.remaining(),
        )
    except (ModelOutputError, ProviderError, BudgetExceeded) as exc:
        why = unscored(exc)
        logger.warning("judge %s: deliberation failed (%s); first scores kept", spec.name, why)
        spent = exc.attempts if isinstance(exc, ModelOutputError | BudgetExceeded) else 1
        return _failed(own, JudgeDeliberation(status="failed", attempts=spent, **why))
    except asyncio.TimeoutError:
        detail = f"the deadline of {sitting.deadline.seconds:g} s passed during deliberation"
        return _failed(own, JudgeDeliberation(status="failed", reason="timeout", detail=detail))
    drafts = keyed_items(completion.parsed.decisions, ids)  # type: ignore[attr-defined]
    scores = dict(own.scores)
    actions: dict[str, ArgumentDeliberation] = {}
    for arg_id, draft in drafts.items():
        if draft.action == "revise":
            scores[arg_id] = RubricScore(**draft.scores.model_dump())
        actions[arg_id] = ArgumentDeliberation(
            action=draft.action, reason=draft.reason, reason_cut=draft.reason_cut
        )
    record = JudgeDeliberation(status="deliberated", attempts=attempts, arguments=actions)
    return own.model_copy(
        update={"scores": scores, "first_scores": own.scores, "deliberation": record}
    )


def _failed(own: JudgeEvaluation, record: JudgeDeliberation) -> JudgeEvaluation:
    return own.model_copy(update={"first_scores": own.scores, "deliberation": record})


async def deliberate(
    sitting: Sitting,
    first: PanelResult,
    *,
    specs: Mapping[str, JudgeSpec],
    models: Mapping[str, Model],
    orders: Mapping[str, Presentation],
    rounds: int,
    calibration: CalibrationMethod,
    redecide: Callable[[Mapping[str, JudgeEvaluation]], Awaitable[PanelResult]],
) -> PanelResult:
    """The panel's result after deliberation.

    ``first`` itself plus a summary when no argument is split (nobody is asked).

    Args:
        sitting: The first round's shared settings (renderer, call context, deadline).
        first: The first round's result (after the cascade).
        specs: Every judge and standby by name.
        models: Their models by name.
        orders: Each judge's reading order (a standby reads in the order of the judge it
            replaced).
        rounds: Deliberation rounds (1).
        calibration: The calibration the decision used, for the alpha of the herding figure.
        redecide: Decides again on the evaluations given by judge name (the others as in
            ``first``), at the tier that decided.
    """
    transcript = sitting.transcript
    thresholds = first.decision.thresholds
    standbys = {e.judge: orders[e.standby_for] for e in first.evaluations if e.standby_for}
    orders = {**orders, **standbys}
    split = split_arguments(first, transcript.argument_ids, thresholds.variance)
    weights = {name: dict(spec.weights) for name, spec in specs.items()}
    if not split:
        return _undivided(first, rounds)
    scored = [e for e in first.evaluations if e.status == "scored"]
    ids = list(split)
    revised = await asyncio.gather(
        *(
            reconsider(
                sitting,
                specs[e.judge],
                models[e.judge],
                orders[e.judge],
                e,
                [o for o in scored if o.judge != e.judge],
                ids,
            )
            for e in scored
        )
    )
    final = await redecide({e.judge: e for e in revised})
    summary = _summary(sitting, first, final, revised, split, weights, rounds, calibration)
    return final.model_copy(
        update={"deliberation": summary, "first_decision": first.decision, "cascade": first.cascade}
    )


def _undivided(first: PanelResult, rounds: int) -> PanelResult:
    """``first`` with a summary that says no argument was split, so nobody was asked."""
    summary = DeliberationSummary(
        rounds=rounds,
        split_arguments=[],
        alpha_before=first.agreement.alpha,
        alpha_after=first.agreement.alpha,
    )
    return first.model_copy(update={"deliberation": summary, "first_decision": first.decision})


def _summary(
    sitting: Sitting,
    first: PanelResult,
    final: PanelResult,
    revised: list[JudgeEvaluation],
    split: dict[str, list[Why]],
    weights: Mapping[str, Mapping[str, float]],
    rounds: int,
    calibration: CalibrationMethod,
) -> DeliberationSummary:
    ids = list(split)
    before = {e.judge: e.first_scores for e in revised if e.first_scores is not None}
    after = {e.judge: e.scores for e in revised if e.scores is not None}
    moves = moves_of(before, after, ids, weights)
    thresholds = first.decision.thresholds
    herded = only_toward(first.evaluations, final.evaluations, moves)
    herding_alpha = calibrated_alpha(sitting.transcript, herded, weights, calibration, thresholds)
    alpha_before = first.agreement.alpha
    toward = sum(m.direction == "toward" for m in moves)
    changed: dict[str, Any] = {
        "outcome": final.decision.outcome != first.decision.outcome,
        "winner": final.decision.winner != first.decision.winner,
    }
    return DeliberationSummary(
        rounds=rounds,
        split_arguments=ids,
        split_why=dict(split),
        judges=[judge_moves(e, moves, ids) for e in revised],
        moves=moves,
        mean_abs_change=mean_abs_change(moves),
        toward=toward,
        away=sum(m.direction == "away" for m in moves),
        herding_share=toward / len(moves) if moves else None,
        alpha_before=alpha_before,
        alpha_after=final.agreement.alpha,
        alpha_herding_only=herding_alpha,
        alpha_from_herding=(
            None
            if herding_alpha is None or alpha_before is None
            else round(herding_alpha - alpha_before, 9)
        ),
        outcome_changed=any(changed.values()),
    )
