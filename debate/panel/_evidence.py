"""The panel's evidence for one option over the other, and how much of it each judge earns.

The decision rules (:mod:`debate.judgments._verdicts`, :mod:`debate.panel._rules`) say *whether*
the judges agree; this module says *how strongly* the panel favours its leading option, as
one number per decision unit that orders the units by how likely people are to agree:

* each judge's **evidence** ``x`` on a unit lies in ``[-1, 1]``, positive for the first
  option: a verdict is ``+1`` (A), ``-1`` (B) or ``0`` (tie); a judge's own probability ``p``
  that A is better gives ``2p - 1``; several readings (both orders, repeated samples) are
  averaged, so a judge whose readings disagree gives little or nothing; a score margin of
  :data:`FULL_VOTE_POINTS` points or more on the 1-10 scale is a whole vote;
* the panel's **log-odds** ``L = sum_j w_j x_j`` with each judge's weight ``w_j``. With
  weights learned against people (:func:`evidence_weights`), ``w_j`` is the judge's own
  log-odds of being right, so ``L`` is the naive-Bayes log-odds that the first option is
  people's choice (Nitzan and Paroush, 1982: weighting independent voters by
  ``log(p / (1 - p))`` is the most accurate weighted vote);
* the **lead** is the option ``L`` favours; ``sigmoid(|L|)`` is its *uncalibrated*
  confidence. A calibrator fitted on labelled items (a policy) turns ``|L|`` and each
  judge's **doubt** (:func:`doubt_features`: how far short of a whole vote its evidence
  falls, and whether it gave none) into ``p_agree``, the probability that people's majority
  agrees with the lead. A judge's tie adds nothing to ``L`` but says the pair is close.

Everything here is symmetric: relabelling A and B negates every ``x`` and ``L`` and leaves
``|L|`` and every weight unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from debate.records import NO_CALL, VerdictTable

FloatArray = NDArray[np.float64]

FULL_VOTE_POINTS = 3.0
"""A judge's score margin, in points of the 1-10 scale, that counts as a whole vote: the
calibration floor ``min_spread``, where a gap stops being a nuance on the rubric."""
PRIOR_UNITS = 10.0
"""Label-trained weights are shrunk toward the panel's pooled weight as if each judge had
this many more labelled units at the pooled rate: one lucky item moves little, thirty move
a lot (the same ten pseudo-items as a track record's accuracy)."""
MAX_WEIGHT = 6.0
"""No judge's weight exceeds the log-odds of 0.9975: a judge right on every labelled unit
would otherwise get an unbounded weight and outvote any number of others."""
_VERDICT_SIGN = np.array([1.0, -1.0, 0.0])


@dataclass(frozen=True)
class Confidence:
    """The panel's evidence on each decision unit."""

    log_odds: FloatArray
    """``L``: positive favours the first option; 0 where no judge with weight gave any."""
    lead: NDArray[np.int8]
    """0 the first option, 1 the second, :data:`NO_CALL` where ``L`` is 0."""
    p_uncalibrated: FloatArray
    """``sigmoid(|L|)``: a score that orders units, not a probability people agree."""


def verdict_evidence(table: VerdictTable) -> FloatArray:
    """``items x judges``: each judge's mean signed evidence over its readings; NaN if none.

    A reading's evidence is ``2p - 1`` when the row gives the judge's probability ``p`` that
    A is better, else +1 for A, -1 for B and 0 for tie.
    """
    n_items, n_judges = len(table.items), len(table.judges)
    signed = _VERDICT_SIGN[table.verdict]
    if table.probability is not None:
        given = ~np.isnan(table.probability)
        signed = np.where(given, 2.0 * table.probability - 1.0, signed)
    cell = table.item.astype(np.int64) * n_judges + table.judge
    size = n_items * n_judges
    total = np.bincount(cell, weights=signed, minlength=size)
    count = np.bincount(cell, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return mean.reshape(n_items, n_judges)


def margin_evidence(margins: Sequence[float | None]) -> FloatArray:
    """A judge's score margins (points, positive for the first option) as evidence."""
    return margin_evidence_array(np.array([np.nan if m is None else m for m in margins]))


def margin_evidence_array(margins: FloatArray) -> FloatArray:
    """Score margins in points (any shape; NaN where none) as evidence in [-1, 1]."""
    clipped: FloatArray = np.clip(np.asarray(margins, dtype=np.float64) / FULL_VOTE_POINTS, -1, 1)
    return clipped


def confidence(evidence: FloatArray, weights: FloatArray) -> Confidence:
    """The panel's log-odds, lead and uncalibrated confidence on each unit (rows)."""
    x = np.where(np.isnan(evidence), 0.0, evidence)
    log_odds = x @ weights
    # Rounded so that sums of equal evidence in another order compare equal (mirror images).
    log_odds = np.round(log_odds, 12) + 0.0
    lead = np.where(log_odds > 0, 0, np.where(log_odds < 0, 1, NO_CALL)).astype(np.int8)
    return Confidence(log_odds, lead, _sigmoid(np.abs(log_odds)))


def doubt_features(evidence: FloatArray) -> FloatArray:
    """``units x 2·judges``: per judge ``1 - |x|`` (0 where it gave none), then ``x`` missing.

    The calibration's features beside ``|L|`` (:class:`debate.stats.Platt`'s ``doubt``):
    a tie or a split reading (``|x|`` small) marks a close pair, whichever way the rest of
    the panel leans; a judge that gave nothing marks an item it could not read. Both are
    unchanged when A and B are swapped, so ``p_agree`` stays a mirror image.

    Args:
        evidence: ``units x judges`` evidence in [-1, 1], NaN where a judge gave none (one
            row for one unit).
    """
    x = np.atleast_2d(np.asarray(evidence, dtype=np.float64))
    given = ~np.isnan(x)
    return np.hstack([(given & (np.where(given, x, 1.0) == 0)) * 1.0, ~given * 1.0])


def judge_row(judges: Sequence[str], evidence: Mapping[str, float | None]) -> FloatArray:
    """One unit's evidence as a row in ``judges``' order (NaN for a judge without any)."""
    values = [evidence.get(j) for j in judges]
    return np.array([[np.nan if v is None else float(v) for v in values]], dtype=np.float64)


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


@dataclass(frozen=True)
class EarnedWeights:
    """Weights learned against people, with what each rests on."""

    weights: dict[str, float]
    slope: dict[str, float | None]
    """Each judge's own maximum-likelihood log-odds slope (None: no labelled unit)."""
    units: dict[str, int]
    """Labelled units on which the judge gave evidence."""
    pooled: float
    """The slope of all judges pooled: what every judge is shrunk toward."""


def evidence_weights(
    evidence: FloatArray,
    label: NDArray[np.int8],
    judges: Sequence[str],
    *,
    prior_units: float = PRIOR_UNITS,
) -> EarnedWeights:
    """Each judge's weight from people's calls: its log-odds of being right, shrunk.

    For judge ``j`` the weight is the slope ``w`` of ``P(people choose the first option) =
    sigmoid(w * x_j)`` fitted by maximum likelihood on the units where people chose one of
    the two options (a tie or no majority says nothing about direction); for verdicts this is
    exactly ``log(a / (1 - a))`` with ``a`` the judge's accuracy when it picked a side. A
    judge at or below chance gets 0: its verdicts carry no information the panel can use,
    and a judge fooled on some kind of item must not outvote the others. Above chance the
    slope is shrunk toward the pooled slope by :data:`PRIOR_UNITS` pseudo-units, so that
    with few labels the weights stay near equal.

    Args:
        evidence: ``units x judges`` in [-1, 1], NaN where the judge gave nothing.
        label: people's call per unit: 0 the first option, 1 the second, 2 tie, NO_CALL none.
        judges: the judges' names, one per column.
        prior_units: the shrinkage's pseudo-units.

    Returns:
        Weights in ``[0, MAX_WEIGHT]``, one per judge.
    """
    y = np.where(label == 0, 1.0, np.where(label == 1, -1.0, 0.0))
    decisive = y != 0
    x = np.where(np.isnan(evidence), 0.0, evidence)[decisive]
    y = y[decisive]
    pooled = _slope(x.reshape(-1), np.repeat(y, x.shape[1])) if x.size else None
    centre = max(0.0, pooled or 0.0)
    weights, slopes, units = {}, {}, {}
    for j, name in enumerate(judges):
        used = x[:, j] != 0
        n = int(used.sum())
        units[name] = n
        own = _slope(x[used, j], y[used]) if n else None
        slopes[name] = own
        if own is None or own <= 0:
            weights[name] = 0.0
            continue
        shrunk = (n * own + prior_units * centre) / (n + prior_units)
        weights[name] = float(min(MAX_WEIGHT, shrunk))
    return EarnedWeights(weights, slopes, units, centre)


def _slope(x: FloatArray, y: FloatArray) -> float | None:
    """Maximum-likelihood ``w`` of ``P(y = +1) = sigmoid(w x)`` (no intercept), by Newton.

    Separable data (every vote right) has no finite maximum: the slope is capped at
    :data:`MAX_WEIGHT`, and a unit-free ``x`` gives None.
    """
    keep = x != 0
    x, y = x[keep], y[keep]
    if x.size == 0:
        return None
    z = x * y  # the evidence in the direction people chose
    if np.all(z > 0):
        return MAX_WEIGHT
    if np.all(z < 0):
        return -MAX_WEIGHT
    w = 0.0
    for _ in range(50):
        s = _sigmoid(-w * z)
        grad = float(np.sum(z * s))
        hess = float(np.sum(z * z * s * (1.0 - s)))
        if hess <= 1e-12:
            break
        step = grad / hess
        w = float(np.clip(w + step, -MAX_WEIGHT, MAX_WEIGHT))
        if abs(step) < 1e-10:
            break
    return w


def weight_vector(judges: Sequence[str], weights: Mapping[str, float] | None) -> FloatArray:
    """The weights in the judges' order; equal (1.0) when none are given."""
    if weights is None:
        return np.ones(len(judges))
    return np.array([float(weights.get(j, 0.0)) for j in judges], dtype=np.float64)
