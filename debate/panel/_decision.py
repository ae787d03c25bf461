"""From the judges' evaluations to the numbers a decision rests on: calibrate, vote, measure.

Pure computation on the evaluations (no model calls), built on :mod:`debate.stats`. Only
scored judges enter any statistic; an unscored judge is named in the reasons instead. The
rules that turn these numbers into an outcome live in :mod:`debate.panel._rules`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from debate.records._result import Agreement, Diagnostics, Vote
from debate.records._transcript import DIMENSIONS, JudgeEvaluation, Side, Transcript
from debate.stats import (
    argument_variance,
    bootstrap_margin,
    calibrate,
    fleiss_kappa_from_labels,
    krippendorff_alpha,
    side_vote,
)
from debate.stats._calibration import Method as CalibrationMethod

RESOLUTION = 6
"""Decimals the weighted scores are rounded to. Rubric scores are integers and weights are
given to a few decimals, so the rubric's resolution is far coarser than this; rounding
only removes the last-bit noise of floating-point sums (6.000000000000001 against
5.999999999999999), which would otherwise make equal scores unequal and let min-max
stretch that noise to the whole scale."""


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
    return ScoreMatrices(judges, ids, transcript.sides, np.round(raw, RESOLUTION), dims, standings)


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
    matrices: ScoreMatrices, calibration: CalibrationMethod, min_spread: float | None = None
) -> tuple[Agreement, NDArray[np.float64]]:
    """Agreement statistics and the calibrated matrix (spread floor ``min_spread`` points)."""
    calibrated = calibrate(matrices.raw, calibration, min_spread)
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
    calibration: CalibrationMethod,
    seed: int | None,
    confidence: float = 0.95,
) -> Vote:
    """Weighted per-side means, calibrated and in points, each with a resampled interval.

    Both intervals use the same seed, hence the same resampled judges and arguments: the
    interval in points is the calibrated one's counterpart, not another draw.
    """
    common = {
        "topic_type": topic_type,
        "judge_weights": dict(judge_weights),
        "calibration": calibration,
        "confidence": confidence,
    }
    if not matrices.judges:
        return Vote(pro=None, con=None, margin=None, **common)
    weights = np.array([judge_weights[j] for j in matrices.judges])
    is_pro = np.array([s == "PRO" for s in matrices.sides])
    scaled = side_vote(calibrated, is_pro, weights)
    points = side_vote(matrices.raw, is_pro, weights)
    return Vote(
        pro=scaled.pro,
        con=scaled.con,
        margin=scaled.margin,
        margin_ci=_interval(calibrated, is_pro, weights, seed, confidence),
        pro_points=points.pro,
        con_points=points.con,
        margin_points=points.margin,
        margin_points_ci=_interval(matrices.raw, is_pro, weights, seed, confidence),
        **common,
    )


def _interval(
    scores: NDArray[np.float64],
    is_pro: NDArray[np.bool_],
    weights: NDArray[np.float64],
    seed: int | None,
    confidence: float,
) -> tuple[float, float] | None:
    low, high = bootstrap_margin(scores, is_pro, weights, seed=seed, ci=confidence)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    # Floating-point noise must not move a bound that is exactly 0 across it (which would
    # turn "includes 0" into "excludes 0"); 9 decimals is far below any real effect.
    return round(low, 9) + 0.0, round(high, 9) + 0.0


def no_difference(matrices: ScoreMatrices) -> bool:
    """Whether no scored judge told any argument from another (each gave one score to all).

    Such a panel sees no difference between the sides; that is not disagreement, and every
    statistic of variation (alpha, kappa) is undefined on it.
    """
    raw = matrices.raw
    return bool(raw.size) and bool((raw == raw[:, :1]).all())


def diagnose(
    matrices: ScoreMatrices, calibrated: NDArray[np.float64], agreement: Agreement
) -> Diagnostics:
    """Where a split comes from: alpha without each judge, per dimension, per argument.

    Leaving a judge out needs at least two judges left, so a panel of two has no
    leave-one-out alphas (they stay null rather than being made up).
    """
    without: dict[str, float | None] = {}
    for j, judge in enumerate(matrices.judges):
        rest = np.delete(calibrated, j, axis=0)
        without[judge] = _num(krippendorff_alpha(rest, "interval")) if rest.shape[0] >= 2 else None
    return Diagnostics(
        alpha_without_judge=without,
        alpha_by_dimension=dict(agreement.alpha_by_dimension),
        argument_variance=dict(agreement.argument_variance),
        no_difference=no_difference(matrices),
    )
