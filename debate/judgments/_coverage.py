"""Risk-coverage: a method's accuracy on its most confident calls, and two compared.

The curves of the gated panels and of every judge, and a panel against the best single
judge at equal coverage, on the same units, so a panel that abstains is not compared with
a judge that answers everything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from debate.judgments._arrays import FloatArray, IntArray
from debate.judgments._figures import grade
from debate.judgments._resample import ItemBootstrap, estimate, ratio, undefined
from debate.records import (
    NO_CALL,
    Calls,
    DecisionFrame,
    EqualCoverage,
    Estimate,
    MethodKind,
    RiskCoverage,
    RiskPoint,
)

SHARES = tuple(k / 10 for k in range(1, 11))
"""The risk-coverage points: the most confident 10 %, 20 %, ... 100 % of declared calls."""
Basis = Literal["gate", "judge", "fixed"]
"""What fixes the coverage of a comparison (see :func:`equal_coverage`)."""


@dataclass(frozen=True)
class Ranked:
    """A method's declared calls on labelled units, most confident first."""

    units: IntArray
    correct: FloatArray
    ends: IntArray
    """Number of calls up to the end of each run of equal confidence."""
    labelled: int

    @property
    def declared(self) -> int:
        return int(self.units.size)


def rank_declared(calls: Calls, label: NDArray[np.int8]) -> Ranked:
    """Sort declared calls by confidence, descending (stable), and mark the runs of ties."""
    g = grade(calls, label)
    chosen = np.flatnonzero(g.declared)
    units = chosen[np.argsort(-calls.confidence[chosen], kind="stable")]
    confidence = calls.confidence[units]
    ends = np.r_[np.flatnonzero(confidence[1:] != confidence[:-1]) + 1, units.size]
    return Ranked(
        units=units,
        correct=g.correct[units].astype(float),
        ends=ends.astype(np.intp) if units.size else np.empty(0, np.intp),
        labelled=int(g.labelled.sum()),
    )


def top_weights(ranked: Ranked, k: int) -> FloatArray:
    """Each ranked call's weight in the most confident ``k``.

    A run of equal confidence that the cut splits counts each of its calls at the fraction
    kept, so which tied call comes first never changes a figure: a judge without confidence
    gradation scores its accuracy over all its declared calls at every cut.
    """
    weights = np.zeros(ranked.declared)
    if k <= 0:
        return weights
    run = int(np.searchsorted(ranked.ends, k))
    start = 0 if run == 0 else int(ranked.ends[run - 1])
    end = int(ranked.ends[run])
    weights[:start] = 1.0
    weights[start:end] = (k - start) / (end - start)
    return weights


def top_accuracy(ranked: Ranked, k: int) -> float:
    """Accuracy of the most confident ``k`` declared calls (ties shared, see above)."""
    return float(top_weights(ranked, k) @ ranked.correct / k)


def risk_coverage(
    name: str, kind: MethodKind, calls: Calls, label: NDArray[np.int8]
) -> RiskCoverage:
    """The points at 10 % steps of declared calls, and the full step curve."""
    ranked = rank_declared(calls, label)
    labelled = max(1, ranked.labelled)
    points = []
    for share in SHARES if ranked.declared else ():
        k = max(1, math.ceil(share * ranked.declared - 1e-9))
        points.append(
            RiskPoint(share=share, coverage=k / labelled, accuracy=top_accuracy(ranked, k), n=k)
        )
    cumulative = np.cumsum(ranked.correct)
    curve = [
        RiskPoint(
            share=int(end) / ranked.declared,
            coverage=int(end) / labelled,
            accuracy=float(cumulative[end - 1] / end),
            n=int(end),
        )
        for end in ranked.ends
    ]
    return RiskCoverage(
        method=name,
        kind=kind,
        labelled=ranked.labelled,
        declared=ranked.declared,
        graded=ranked.ends.size > 1,
        points=points,
        curve=curve,
    )


def _judge_cut(panel: Ranked, judge: Ranked, name: str) -> tuple[int, str | None]:
    """How many of the judge's calls match the panel's coverage, and what limits it."""
    k = round(panel.declared / panel.labelled * judge.labelled)
    if k > judge.declared:
        share = judge.declared / max(1, judge.labelled)
        return judge.declared, (
            f"{name} declares on only {share:.0%} of labelled units, less than the panel: "
            "its figure is over all its declared calls"
        )
    if judge.ends.size == 1:
        return k, (
            f"{name} gives no confidence gradation: its accuracy at equal coverage is its "
            "accuracy over all its declared calls"
        )
    return k, None


def by_p_agree(calls: Calls) -> Calls:
    """A panel's lead on every unit, most ``p_agree`` first: its curve runs to 100 %.

    A unit without a lead (even evidence) counts as a tie call, least confident.
    """
    if calls.lead is None or calls.p_agree is None:
        return calls
    lead = np.where(calls.lead == NO_CALL, 2, calls.lead).astype(np.int8)
    return Calls(call=lead, declared=np.ones(lead.size, dtype=np.bool_), confidence=calls.p_agree)


def equal_coverage(
    panel_name: str,
    panel_calls: Calls,
    judge_name: str,
    judge_calls: Calls,
    frame: DecisionFrame,
    boot: ItemBootstrap,
    basis: Basis = "gate",
    share: float = 0.8,
) -> EqualCoverage:
    """A panel's accuracy against the best judge's at one coverage, on the same units.

    ``gate``: the gated panel's declared verdicts against the judge's most confident calls,
    as many; ``judge``: every call the judge declares against the panel's most confident
    leads (by ``p_agree``), as many; ``fixed``: both sides' most confident ``share`` of the
    labelled units. The coverage is fixed at its point estimate, so the interval leaves
    out the coverage's own uncertainty.
    """
    gated = basis == "gate"
    panel = rank_declared(panel_calls if gated else by_p_agree(panel_calls), frame.label)
    judge = rank_declared(judge_calls, frame.label)
    names = {"panel": panel_name, "judge": judge_name, "basis": basis}
    if panel.declared == 0:
        none = undefined(0, "the panel declares no verdict on a labelled unit")
        return EqualCoverage(
            **names, coverage=None, panel_accuracy=none, judge_accuracy=none, difference=none
        )
    k_panel, k_judge, note = _cuts(basis, panel, judge, judge_name, share)
    mine, theirs, difference = _compared((panel, k_panel), (judge, k_judge), frame, boot)
    return EqualCoverage(
        **names,
        coverage=k_panel / max(1, panel.labelled),
        panel_accuracy=mine,
        judge_accuracy=theirs,
        difference=difference,
        note=note,
    )


def _cuts(
    basis: Basis, panel: Ranked, judge: Ranked, judge_name: str, share: float
) -> tuple[int, int, str | None]:
    """How many of the panel's and of the judge's calls each side keeps, and why fewer."""
    labelled = max(1, panel.labelled)
    if basis == "gate":
        return (panel.declared, *_judge_cut(panel, judge, judge_name))
    if basis == "judge":
        k_panel = min(panel.declared, round(judge.declared / max(1, judge.labelled) * labelled))
        return k_panel, judge.declared, None
    k_panel = min(panel.declared, round(share * labelled))
    return (k_panel, *_judge_cut_at(judge, k_panel, judge_name))


def _compared(
    panel: tuple[Ranked, int],
    judge: tuple[Ranked, int],
    frame: DecisionFrame,
    boot: ItemBootstrap,
) -> tuple[Estimate, Estimate, Estimate]:
    """Each side's accuracy on its kept calls, and the difference, resampled together."""
    columns = np.zeros((4, frame.group.size))
    for row, (ranked, k) in zip((0, 2), (panel, judge), strict=True):
        weights = top_weights(ranked, k)
        columns[row, ranked.units] = weights * ranked.correct
        columns[row + 1, ranked.units] = weights
    point, reps = boot.totals(frame.group, *columns)
    mine = ratio(point[0], point[1], reps[:, 0], reps[:, 1], "declared call")
    theirs = ratio(point[2], point[3], reps[:, 2], reps[:, 3], "declared call of the judge")
    if mine.value is None or theirs.value is None:
        return mine, theirs, undefined(0, "one side has no declared call")
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = reps[:, 0] / reps[:, 1] - reps[:, 2] / reps[:, 3]
    return mine, theirs, estimate(mine.value - theirs.value, diff, mine.n)


def _judge_cut_at(judge: Ranked, k: int, name: str) -> tuple[int, str | None]:
    """The judge's most confident ``k`` calls, or all it declares when it declares fewer."""
    if k > judge.declared:
        share = judge.declared / max(1, judge.labelled)
        return judge.declared, (
            f"{name} declares on only {share:.0%} of labelled units: its figure is over all "
            "its declared calls"
        )
    return k, None
