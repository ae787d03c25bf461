"""From the judges' evaluations to a decision: calibrate, vote, measure agreement, decide.

Pure computation on the evaluations (no model calls), built on :mod:`debate.stats`. Only
scored judges enter any statistic; an unscored judge is named in the reasons instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from debate.records._config import Thresholds
from debate.records._result import Agreement, Decision, Vote
from debate.records._transcript import DIMENSIONS, JudgeEvaluation, Outcome, Side, Transcript
from debate.stats import (
    HIGH_AGREEMENT,
    UNDEFINED,
    argument_variance,
    band,
    bootstrap_margin,
    calibrate,
    fleiss_kappa_from_labels,
    fmt,
    krippendorff_alpha,
    side_vote,
)
from debate.stats._calibration import Method as CalibrationMethod


def _num(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


@dataclass(frozen=True)
class ScoreMatrices:
    """The scored judges' numbers, rows in ``judges`` order, columns in argument-id order."""

    judges: list[str]
    ids: list[str]
    sides: list[Side]
    """The side of each column's argument."""
    raw: NDArray[np.float64]
    """Weighted argument score per judge (1-10 scale)."""
    dimensions: dict[str, NDArray[np.float64]]
    standings: list[list[str]]
    """Arguments x judges standings."""


def score_matrices(
    transcript: Transcript,
    scored: Sequence[JudgeEvaluation],
    weights_by_judge: Mapping[str, Mapping[str, float]],
) -> ScoreMatrices:
    """Assemble the matrices, matching every score to its argument by id."""
    ids = transcript.argument_ids
    raw = np.empty((len(scored), len(ids)))
    dims = {d: np.empty((len(scored), len(ids))) for d in DIMENSIONS}
    standings: list[list[str]] = [[] for _ in ids]
    for j, evaluation in enumerate(scored):
        assert evaluation.scores is not None  # scored evaluations carry scores
        readings = [evaluation.scores]
        if evaluation.swap is not None and evaluation.swap.scores is not None:
            readings.append(evaluation.swap.scores)  # both readings count, averaged
        weights = weights_by_judge[evaluation.judge]
        for a, arg_id in enumerate(ids):
            for d in DIMENSIONS:
                dims[d][j, a] = float(np.mean([r[arg_id].dimension(d) for r in readings]))
            raw[j, a] = float(np.mean([r[arg_id].weighted(weights) for r in readings]))
            shown = {r[arg_id].standing for r in readings}
            # A standing that moved with the presentation order is not a call the judge
            # made; it counts as UNCERTAIN in kappa.
            standings[a].append(shown.pop() if len(shown) == 1 else "UNCERTAIN")
    judges = [e.judge for e in scored]
    return ScoreMatrices(judges, ids, transcript.sides, raw, dims, standings)


def offset_corrected(raw: NDArray[np.float64]) -> NDArray[np.float64]:
    """Remove each judge's own offset (its mean score), keeping the 1-10 scale.

    The per-argument variance check runs on these: a harsh and a lenient judge who rank
    alike do not look split, and the threshold (3.0, i.e. about 1.7 points of standard
    deviation) keeps the meaning it was written for. On min-max scores (0-1) it could
    never be reached, and on z-scores it is reached only by near-total reversals.
    """
    centred: NDArray[np.float64] = raw - raw.mean(axis=1, keepdims=True) + raw.mean()
    return centred


def measure(
    matrices: ScoreMatrices, calibration: CalibrationMethod
) -> tuple[Agreement, NDArray[np.float64]]:
    """Agreement statistics and the calibrated matrix."""
    calibrated = calibrate(matrices.raw, calibration)
    enough = len(matrices.judges) >= 2
    variance = (
        argument_variance(offset_corrected(matrices.raw))
        if enough
        else np.full(len(matrices.ids), np.nan)
    )
    agreement = Agreement(
        alpha=_num(krippendorff_alpha(calibrated, "interval")) if enough else None,
        alpha_raw=_num(krippendorff_alpha(matrices.raw, "interval")) if enough else None,
        alpha_by_dimension={
            d: (_num(krippendorff_alpha(m, "interval")) if enough else None)
            for d, m in matrices.dimensions.items()
        },
        kappa=_num(fleiss_kappa_from_labels(matrices.standings)) if enough else None,
        argument_variance={
            arg_id: _num(float(v)) for arg_id, v in zip(matrices.ids, variance, strict=True)
        },
        judges_scored=len(matrices.judges),
        judges_unscored=0,
    )
    return agreement, calibrated


def vote(
    matrices: ScoreMatrices,
    calibrated: NDArray[np.float64],
    judge_weights: Mapping[str, float],
    *,
    topic_type: str,
    calibration: str,
    seed: int | None,
) -> Vote:
    """Weighted per-side means of calibrated scores, with a resampled interval."""
    weights = np.array([judge_weights[j] for j in matrices.judges])
    is_pro = np.array([s == "PRO" for s in matrices.sides])
    if not matrices.judges:
        return Vote(
            pro=None,
            con=None,
            margin=None,
            topic_type=topic_type,
            judge_weights=dict(judge_weights),
            calibration=calibration,
        )
    result = side_vote(calibrated, is_pro, weights)
    low, high = bootstrap_margin(calibrated, is_pro, weights, seed=seed)
    ci = (low, high) if math.isfinite(low) and math.isfinite(high) else None
    return Vote(
        pro=float(result.pro),
        con=float(result.con),
        margin=float(result.margin),
        margin_ci=ci,
        topic_type=topic_type,
        judge_weights=dict(judge_weights),
        calibration=calibration,
    )


RECOMMENDATIONS = {
    "winner": (
        "The panel agrees well enough to act on the verdict; still read the notes on the "
        "arguments it scored lowest before deciding."
    ),
    "too_close": (
        "The panel agrees, but the two sides are too close to call: treat this as a tie and "
        "decide on criteria the debate did not cover."
    ),
    "irreconcilable": (
        "The judges do not agree, so there is no verdict: review the high-variance arguments "
        "yourself, gather the missing information, or ask people with domain knowledge."
    ),
    "insufficient": (
        "Too few judges could score the debate to decide anything: fix the failing judges "
        "(see their reasons) and judge the transcript again."
    ),
}


def _judge_notes(evaluations: Sequence[JudgeEvaluation]) -> list[str]:
    notes = []
    for e in evaluations:
        if e.status == "unscored":
            notes.append(
                f"judge {e.judge} ({e.role}) is unscored: {e.reason}"
                + (f" ({e.detail})" if e.detail else "")
            )
        elif e.swap is not None and e.swap.status == "unscored":
            notes.append(f"judge {e.judge}: the swapped reading is unscored ({e.swap.reason})")
        elif e.swap is not None and e.swap.position_sensitive:
            notes.append(
                f"judge {e.judge}: standings of {', '.join(e.swap.position_sensitive)} changed "
                f"when the sides were swapped (consistency {e.swap.consistency:.2f}); "
                "its two readings are averaged"
            )
    return notes


def decide(
    agreement: Agreement,
    vote_: Vote,
    thresholds: Thresholds,
    evaluations: Sequence[JudgeEvaluation],
    panel_size: int,
) -> Decision:
    """Apply the divergence rules; a winner is named only when every check passes."""
    reasons = _judge_notes(evaluations)
    if agreement.judges_scored < 2 or vote_.margin is None:
        reasons.insert(
            0,
            f"only {agreement.judges_scored} of {panel_size} judges could score; "
            "at least two are needed",
        )
        return _decision("insufficient", None, reasons, thresholds)
    agreement_notes, diverged = _agreement_checks(agreement, thresholds)
    reasons += agreement_notes
    high = [
        arg_id
        for arg_id, v in agreement.argument_variance.items()
        if v is not None and v >= thresholds.variance
    ]
    if high:
        reasons.append(
            f"the judges split on {', '.join(high)} (variance of offset-corrected scores "
            f">= {thresholds.variance})"
        )
    gap = abs(vote_.margin)
    if gap < thresholds.gap:
        reasons.append(f"the PRO-CON margin {vote_.margin:+.3f} is within {thresholds.gap}")
    if diverged or high:
        return _decision("irreconcilable", None, reasons, thresholds, high)
    if gap < thresholds.gap:
        return _decision("too_close", None, reasons, thresholds, high)
    side: Side = "PRO" if vote_.margin > 0 else "CON"
    reasons.append(
        f"{side} leads by {gap:.3f} with alpha {_alpha_text(agreement.alpha)} and kappa "
        f"{fmt(agreement.kappa)}"
    )
    return _decision("winner", side, reasons, thresholds, high)


def _decision(
    outcome: Outcome,
    winner: Side | None,
    reasons: list[str],
    thresholds: Thresholds,
    high: list[str] | None = None,
) -> Decision:
    return Decision(
        outcome=outcome,
        winner=winner,
        reasons=reasons,
        high_variance_arguments=high or [],
        thresholds=thresholds,
        recommendation=RECOMMENDATIONS[outcome],
    )


def _alpha_text(alpha: float | None) -> str:
    return UNDEFINED if alpha is None else f"{fmt(alpha)} ({band(alpha)} agreement)"


def _agreement_checks(agreement: Agreement, thresholds: Thresholds) -> tuple[list[str], bool]:
    """Reasons from alpha and kappa, and whether both fail (the panel diverges)."""
    alpha, kappa = agreement.alpha, agreement.kappa
    alpha_ok = alpha is not None and alpha >= thresholds.alpha
    kappa_ok = kappa is not None and kappa >= thresholds.kappa
    alpha_fail = (
        "alpha is undefined (the scores did not vary, so agreement on them cannot be shown)"
        if alpha is None
        else f"alpha {_alpha_text(alpha)} is below {thresholds.alpha}"
    )
    kappa_fail = (
        "kappa is undefined (every standing was the same)"
        if kappa is None
        else f"kappa {fmt(kappa)} is below {thresholds.kappa}"
    )
    if not alpha_ok and not kappa_ok:
        return [
            f"{alpha_fail} and {kappa_fail}: agreement is not shown on scores or standings"
        ], True
    if not alpha_ok:
        return [f"{alpha_fail}: scores diverge"], False
    if not kappa_ok:
        return [f"{kappa_fail}: standings diverge"], False
    if alpha is not None and alpha < HIGH_AGREEMENT:
        return [f"alpha {_alpha_text(alpha)}: review the high-variance arguments"], False
    return [], False
