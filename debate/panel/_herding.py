"""The deliberation summary: moves, their direction relative to the others, and alpha.

The definitions are those of :data:`debate.records._deliberation.HERDING_METHOD`: a move is
a revision that changes a judge's weighted rubric total of an argument; it goes *toward*
the others when its distance to the leave-one-out mean of the other scored judges'
first-round rubric scores (weighted by the moving judge's own weights, so the target is
where it would land by adopting their mean) shrank, *away* when it grew. The alpha the
moves toward alone account for is a counterfactual: the panel's alpha with only those
moves applied (every other revision reverted), minus the first round's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from debate.panel._decision import batch_of, score_matrices
from debate.records import (
    DIMENSIONS,
    Direction,
    JudgeEvaluation,
    JudgeMoves,
    Move,
    RubricScore,
    Thresholds,
    Transcript,
)
from debate.stats import Method as CalibrationMethod
from debate.stats import calibrate_batch, interval_alpha_batch

EPSILON = 1e-9
"""Below this a change of a weighted total is floating-point noise, not a move."""


def others_mean(
    first: Mapping[str, Mapping[str, RubricScore]],
    judge: str,
    argument: str,
    weights: Mapping[str, float],
) -> float | None:
    """Where ``judge`` would land on ``argument`` by adopting the others' mean.

    The other judges' first-round rubric scores, averaged per dimension and weighted by
    ``weights`` (the moving judge's); None without another judge.
    """
    others = [s[argument] for name, s in first.items() if name != judge]
    if not others:
        return None
    return sum(weights[d] * float(np.mean([o.dimension(d) for o in others])) for d in DIMENSIONS)


def direction(before: float, after: float, target: float | None) -> Direction | None:
    """Toward, away from or across ``target`` (None without one)."""
    if target is None:
        return None
    gap = abs(after - target) - abs(before - target)
    if gap < -EPSILON:
        return "toward"
    return "away" if gap > EPSILON else "across"


def moves_of(
    first: Mapping[str, Mapping[str, RubricScore]],
    final: Mapping[str, Mapping[str, RubricScore]],
    arguments: Sequence[str],
    weights: Mapping[str, Mapping[str, float]],
) -> list[Move]:
    """Every revision of a weighted total, judge by judge (``final``'s judges only)."""
    found = []
    for judge, scores in final.items():
        w = weights[judge]
        for argument in arguments:
            before, after = first[judge][argument], scores[argument]
            x, y = before.weighted(w), after.weighted(w)
            if abs(y - x) <= EPSILON:
                continue
            target = others_mean(first, judge, argument, w)
            found.append(
                Move(
                    judge=judge,
                    argument=argument,
                    first=round(x, 6),
                    final=round(y, 6),
                    others_mean=None if target is None else round(target, 6),
                    direction=direction(x, y, target),
                    standing_first=before.standing,
                    standing_final=after.standing,
                )
            )
    return found


def judge_moves(
    evaluation: JudgeEvaluation, moves: Sequence[Move], arguments: Sequence[str]
) -> JudgeMoves:
    """One judge's line of the summary."""
    record = evaluation.deliberation
    assert record is not None  # only judges asked to deliberate are summarised
    own = [m for m in moves if m.judge == evaluation.judge]
    toward = sum(m.direction == "toward" for m in own)
    revised = [
        a for a in arguments if a in record.arguments and record.arguments[a].action == "revise"
    ]
    return JudgeMoves(
        judge=evaluation.judge,
        status=record.status,
        revised=revised,
        moves=len(own),
        toward=toward,
        away=sum(m.direction == "away" for m in own),
        toward_share=toward / len(own) if own else None,
        mean_abs_change=mean_abs_change(own),
    )


def mean_abs_change(moves: Sequence[Move]) -> float | None:
    """Mean absolute change of the weighted total over ``moves``; None without one."""
    if not moves:
        return None
    return round(float(np.mean([abs(m.final - m.first) for m in moves])), 6)


def only_toward(
    first: Sequence[JudgeEvaluation], final: Sequence[JudgeEvaluation], moves: Sequence[Move]
) -> list[JudgeEvaluation]:
    """The first-round evaluations with only the moves toward the others applied."""
    kept = {(m.judge, m.argument) for m in moves if m.direction == "toward"}
    finals = {e.judge: e for e in final}
    out = []
    for e in first:
        if e.scores is None or e.judge not in finals:
            out.append(e)
            continue
        later = finals[e.judge].scores
        assert later is not None
        scores = {a: later[a] if (e.judge, a) in kept else s for a, s in e.scores.items()}
        out.append(e.model_copy(update={"scores": scores}))
    return out


def calibrated_alpha(
    transcript: Transcript,
    evaluations: Sequence[JudgeEvaluation],
    weights: Mapping[str, Mapping[str, float]],
    calibration: CalibrationMethod,
    thresholds: Thresholds,
) -> float | None:
    """Krippendorff's alpha on calibrated scores, as ``Agreement.alpha`` computes it."""
    scored = [e for e in evaluations if e.status == "scored"]
    if len(scored) < 2:
        return None
    batch = batch_of(score_matrices(transcript, scored, weights))
    calibrated = calibrate_batch(batch.raw, calibration, thresholds.min_spread)
    value = float(interval_alpha_batch(calibrated)[0])
    return round(value, 9) if np.isfinite(value) else None
