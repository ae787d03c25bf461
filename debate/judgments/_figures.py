"""A method's figures against people, each with an item-bootstrap interval.

Accuracy, coverage and declared accuracy of every panel and judge; for score data the rank
correlations and pairwise accuracy against people's mean; the calibration of a panel's
``p_agree``; and how well a panel's splits pick out the units people split on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from debate.judgments._arrays import BoolArray, FloatArray, Index, IntArray
from debate.judgments._resample import (
    ItemBootstrap,
    estimate,
    rank_correlations,
    ratio,
    undefined,
)
from debate.records import (
    NO_CALL,
    OUTCOMES,
    Calibration,
    Calls,
    DecisionFrame,
    Estimate,
    MethodKind,
    MethodRow,
    SplitDetection,
)
from debate.stats import expected_calibration_error, reliability_bins

FLAGGED = (OUTCOMES.index("too_close"), OUTCOMES.index("irreconcilable"))
"""Outcomes that say "the judges do not settle this": what split detection scores."""


# --- accuracy, coverage, declared accuracy --------------------------------------------------


@dataclass(frozen=True)
class Graded:
    """A method's calls held against people's labels, per unit."""

    labelled: BoolArray
    answered: BoolArray
    """Labelled and the method made a call (an unscored judge's unit is left out)."""
    correct: BoolArray
    declared: BoolArray


def grade(calls: Calls, label: NDArray[np.int8]) -> Graded:
    """Which units are labelled, answered, right and declared."""
    labelled = label != NO_CALL
    answered = labelled & (calls.call != NO_CALL)
    return Graded(
        labelled=labelled,
        answered=answered,
        correct=answered & (calls.call == label),
        declared=answered & calls.declared,
    )


def method_row(
    name: str, kind: MethodKind, calls: Calls, frame: DecisionFrame, boot: ItemBootstrap
) -> MethodRow:
    """Accuracy, coverage and declared accuracy of one method, with intervals."""
    g = grade(calls, frame.label)
    point, reps = boot.totals(
        frame.group, g.answered, g.correct, g.labelled, g.declared, g.correct & g.declared
    )

    def part(num: int, den: int, of: str) -> Estimate:
        return ratio(point[num], point[den], reps[:, num], reps[:, den], of)

    return MethodRow(
        name=name,
        kind=kind,
        gated=calls.outcome is not None,
        accuracy=part(1, 0, "labelled unit with a call"),
        coverage=part(3, 2, "labelled unit"),
        declared_accuracy=part(4, 3, "declared call on a labelled unit"),
    )


# --- score data: rank correlations and pairwise accuracy -----------------------------------


def option_pairs(group: Index, people: FloatArray) -> tuple[IntArray, IntArray]:
    """Every pair of options of one item whose people's means differ (rows ``a``, ``b``)."""
    order = np.argsort(group, kind="stable")
    ordered = group[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, ordered.size])
    firsts, seconds = [np.empty(0, np.intp)], [np.empty(0, np.intp)]
    for size in np.unique(sizes[sizes >= 2]):  # one pass per distinct group size, not per item
        base = starts[sizes == size][:, None]
        i, j = np.triu_indices(int(size), 1)
        firsts.append(order[(base + i).ravel()])
        seconds.append(order[(base + j).ravel()])
    a, b = np.concatenate(firsts), np.concatenate(seconds)
    diff = people[a] - people[b]
    keep = np.isfinite(diff) & (diff != 0)
    return a[keep], b[keep]


def pairwise_accuracy(
    values: FloatArray,
    people: FloatArray,
    group: Index,
    pairs: tuple[IntArray, IntArray],
    boot: ItemBootstrap,
) -> Estimate:
    """Share of people-ordered option pairs the method's scores order the same way."""
    a, b = pairs
    mine = values[a] - values[b]
    scored = np.isfinite(mine)
    agree = scored & (np.sign(mine) == np.sign(people[a] - people[b]))
    return boot.ratio(group[a], agree, scored, "pair of options that people order and it scored")


def score_figures(frame: DecisionFrame, boot: ItemBootstrap) -> dict[str, dict[str, Estimate]]:
    """Spearman, Kendall and pairwise accuracy of every method's and judge's option scores."""
    scores = frame.option_scores
    assert scores is not None
    values = {**scores.methods, **scores.judges}
    pairs = option_pairs(scores.group, scores.people)
    correlations = rank_correlations(values, scores.people, scores.group, boot)
    return {
        name: {
            "spearman": correlations[name][0],
            "kendall": correlations[name][1],
            "pairwise_accuracy": pairwise_accuracy(x, scores.people, scores.group, pairs, boot),
        }
        for name, x in values.items()
    }


# --- calibration of p_agree -----------------------------------------------------------------


def calibration(
    name: str, calls: Calls, frame: DecisionFrame, n_boot: int, seed: int
) -> Calibration:
    """The reliability diagram and the expected calibration error of a panel's ``p_agree``."""
    assert calls.lead is not None and calls.p_agree is not None
    usable = (frame.label != NO_CALL) & (calls.lead != NO_CALL)
    p = calls.p_agree[usable]
    right = calls.lead[usable] == frame.label[usable]
    ece = expected_calibration_error(p, right, groups=frame.group[usable], n_boot=n_boot, seed=seed)
    n = int(usable.sum())
    if n == 0:
        value = undefined(0, "no labelled unit with a lead")
    else:
        value = Estimate(
            value=ece.estimate,
            low=None if math.isnan(ece.low) else ece.low,
            high=None if math.isnan(ece.high) else ece.high,
            n=n,
        )
    return Calibration(
        method=name,
        calibrated=calls.calibrated,
        units=n,
        ece=value,
        bins=reliability_bins(p, right),
    )


# --- split detection ------------------------------------------------------------------------


def split_detection(
    name: str, calls: Calls, frame: DecisionFrame, boot: ItemBootstrap
) -> SplitDetection:
    """How well ``too_close``/``irreconcilable`` picks out the units people disagreed on.

    Precision, recall and lift over the base rate, over every unit (labelled or not).
    """
    assert calls.outcome is not None
    flagged = np.isin(calls.outcome, FLAGGED)
    split = frame.people_split
    point, reps = boot.totals(frame.group, flagged & split, flagged, split, np.ones(split.size))
    precision = ratio(point[0], point[1], reps[:, 0], reps[:, 1], "unit flagged")
    base = ratio(point[2], point[3], reps[:, 2], reps[:, 3], "unit")
    if precision.value is None or not base.value:
        lift = undefined(precision.n, "no flagged unit or no unit people split on")
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            lifts = (reps[:, 0] / reps[:, 1]) / (reps[:, 2] / reps[:, 3])
        lift = estimate(precision.value / base.value, lifts, precision.n)
    return SplitDetection(
        method=name,
        units=int(split.size),
        flagged=int(flagged.sum()),
        people_split=int(split.sum()),
        precision=precision,
        recall=ratio(point[0], point[2], reps[:, 0], reps[:, 2], "unit people split on"),
        base_rate=base,
        lift=lift,
    )
