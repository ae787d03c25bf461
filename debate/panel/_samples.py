"""Repeated readings (``samples = k``): each judge reads the debate k times.

One reading is one draw from a judge's distribution of verdicts on the debate; sampled
again, with the arguments in another order and another sampling seed, a judge can score
the same debate differently. Reading it k times shows how much (test-retest, as for any
rater: Shrout and Fleiss, 1979), and this module turns that spread into three numbers:

* each judge's **consistency**: the share of arguments whose standing is the same in every
  scored reading (the swap check's measure, over k readings instead of two);
* its **weight**, scaled by ``(1 + consistency) / 2``: a judge that contradicts itself on
  every argument keeps half its weight, because its mean score is still evidence, and the
  spread is already counted once more in the interval and the evidence below;
* the **spread** of its margin: the squared standard error of its PRO - CON margin over its
  readings, added to the margin's interval, and its **evidence** as the mean of each
  reading's evidence (:mod:`debate.panel._evidence`), so readings that split cancel.

The orders and seeds are drawn from the run's seed, the judge and the reading's index, so
a replay with the same seed asks the same questions, and no two readings share a response
cache key. Reading 1 is the single reading a panel without samples makes, byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from debate.panel._cascade import Tier
from debate.panel._evidence import margin_evidence_array
from debate.panel._positions import Presentation, PresentationMode, presentations
from debate.records import JudgeEvaluation, RubricScore, Transcript, derive_seed

if TYPE_CHECKING:
    from debate.panel._decision import ScoreBatch, Setting

FloatArray = NDArray[np.float64]


def reading_seed(seed: int | None, judge: str, index: int) -> int | None:
    """The sampling seed of reading ``index`` (0-based) of ``judge``.

    Reading 0 keeps the run's seed (the single reading of a panel without samples); each
    further reading gets a hash of the run's seed, the judge and the index, so it is
    reproducible, differs between readings and between judges.
    """
    if index == 0 or seed is None:
        return seed
    return derive_seed(seed, f"{judge}:reading{index + 1}")


def further_presentations(
    tiers: Sequence[Tier],
    first: Mapping[str, Presentation],
    counts: Mapping[str, int],
    transcript: Transcript,
    seed: int,
    mode: PresentationMode,
) -> dict[str, list[Presentation]]:
    """Per judge, the orders of its readings 2 to k (empty for a single reading).

    Reading ``r`` of a tier is a fresh counterbalanced draw over the tier (so each reading
    is balanced across the judges, as the first is), with the sides turned so that even
    readings show the sides in the opposite order to the judge's first reading and odd
    ones in the same: a judge's side order alternates, whatever the draw.
    """
    pro = [a.id for a in transcript.side_arguments("PRO")]
    con = [a.id for a in transcript.side_arguments("CON")]
    out: dict[str, list[Presentation]] = {name: [] for name in first}
    most = max(counts.values(), default=1)
    for tier in tiers:
        for r in range(1, most):
            key = f"{seed}:presentation:reading{r + 1}" + (
                "" if tier.number == 1 else f":tier{tier.number}"
            )
            drawn = presentations(len(tier.members), pro, con, rng=random.Random(key), mode=mode)
            for name, shown in zip(tier.members, drawn, strict=True):
                if r >= counts[name]:
                    continue
                sides = first[name].sides
                wanted = (sides[1], sides[0]) if r % 2 == 1 else sides
                out[name].append(shown if shown.sides == wanted else shown.mirrored())
    return out


def moved(readings: Sequence[Mapping[str, RubricScore]], ids: Sequence[str]) -> list[str]:
    """Arguments whose standing is not the same in every reading, sorted."""
    return sorted(a for a in ids if len({r[a].standing for r in readings}) > 1)


def consistency(readings: Sequence[Mapping[str, RubricScore]], ids: Sequence[str]) -> float | None:
    """Share of ``ids`` with the same standing in every reading; None with fewer than two."""
    if len(readings) < 2 or not ids:
        return None
    return 1.0 - len(moved(readings, ids)) / len(ids)


def scored_readings(evaluation: JudgeEvaluation) -> list[dict[str, RubricScore]]:
    """The judge's scored readings: every sample (or its one reading), then the swapped one."""
    if evaluation.readings is not None:
        found = [r.scores for r in evaluation.readings if r.scores is not None]
    else:
        found = [evaluation.scores] if evaluation.scores is not None else []
    if evaluation.swap is not None and evaluation.swap.scores is not None:
        found.append(evaluation.swap.scores)
    return found


def consistent_weights(
    weights: Mapping[str, float], evaluations: Sequence[JudgeEvaluation]
) -> dict[str, float]:
    """The judges' weights scaled by ``(1 + consistency) / 2`` where it was measured.

    A judge with one reading (or one scored reading) keeps its weight unchanged.
    """
    scale = {e.judge: (1.0 + e.consistency) / 2.0 for e in evaluations if e.consistency is not None}
    return {name: w * scale.get(name, 1.0) for name, w in weights.items()}


def reading_spread(
    evaluation: JudgeEvaluation,
    ids: Sequence[str],
    is_pro: Sequence[bool],
    weights: Mapping[str, float],
) -> tuple[float, float]:
    """The judge's mean per-reading evidence and the squared standard error of its margin.

    Each scored reading's margin is its mean weighted PRO score minus its mean CON score
    (points); the evidence is the mean over readings of each margin's evidence, and the
    squared standard error is the margins' sample variance over the number of readings
    (0 for a single reading).
    """
    pro = np.array(is_pro, dtype=bool)
    margins = []
    for reading in scored_readings(evaluation):
        row = np.array([reading[a].weighted(weights) for a in ids])
        margins.append(float(row[pro].mean() - row[~pro].mean()))
    found = np.array(margins)
    evidence = float(margin_evidence_array(found).mean())
    se2 = float(found.var(ddof=1) / len(found)) if len(found) > 1 else 0.0
    return evidence, se2


def widen_for_readings(
    found: list[FloatArray],
    margins: tuple[FloatArray, FloatArray],
    calibrated: FloatArray,
    batch: ScoreBatch,
    weights: FloatArray,
    setting: Setting,
) -> list[FloatArray]:
    """The calibrated and points intervals with the judges' reading spread added.

    The bootstrap resamples judges and arguments but sees only each judge's mean reading;
    the mean's own sampling error (its squared standard error ``s_j^2`` over the readings)
    is added in quadrature: each half-width ``h`` becomes ``sqrt(h^2 + (z * s)^2)`` with
    ``s^2 = sum_j v_j^2 s_j^2`` (``v`` the weights normalised to sum 1, ``z`` the normal
    quantile of the confidence level). On the calibrated scale each ``s_j`` is first
    multiplied by the judge's calibration slope (the range of its calibrated scores over
    that of its raw scores: exact for the linear calibrations; the panel's mean slope for
    a judge whose raw scores are all equal). Symmetric, so a mirrored table stays mirrored.
    """
    assert batch.spread is not None
    se2 = batch.spread[1]
    w = np.broadcast_to(weights, se2.shape)
    total = w.sum(axis=1, keepdims=True)
    v = np.divide(w, total, out=np.zeros_like(se2), where=total > 0)
    z = NormalDist().inv_cdf((1.0 + setting.thresholds.confidence) / 2.0)
    raw_range = np.ptp(batch.raw, axis=2)
    cal_range = np.ptp(calibrated, axis=2)
    slope = np.divide(
        cal_range, raw_range, out=np.full_like(raw_range, np.nan), where=raw_range > 0
    )
    mean_slope = np.nanmean(
        np.where(np.isnan(slope).all(axis=1, keepdims=True), 0.0, slope), axis=1
    )
    slope = np.where(np.isnan(slope), mean_slope[:, None], slope)
    out = []
    for interval, margin, factor in zip(found, margins, (slope**2, 1.0), strict=True):
        extra = z * np.sqrt((v**2 * se2 * factor).sum(axis=1))
        low = margin - np.sqrt((margin - interval[:, 0]) ** 2 + extra**2)
        high = margin + np.sqrt((interval[:, 1] - margin) ** 2 + extra**2)
        out.append(np.stack([low, high], axis=1))
    return out
