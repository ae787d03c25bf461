"""What a debate report shows, worked out once for both the HTML and the Markdown report.

Nothing here formats markup: it turns a :class:`~debate.records._result.DebateResult` into plain
numbers and sentences (the verdict in words, the calibrated score matrix with unscored
judges kept as missing rows, the arguments sorted by divergence). What takes arithmetic
(:func:`heatmap`, and the arguments' pulls in :mod:`debate.report._why`) is computed once per
result (:func:`per_result`), however many sections and formats read it.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from debate.panel import effect_word, score_matrices, too_close_explanation, winner_explanation
from debate.records import DebateResult, JudgeEvaluation, Vote
from debate.stats import calibrate, fmt

T = TypeVar("T")


def per_result(compute: Callable[[DebateResult], T]) -> Callable[[DebateResult], T]:
    """``compute``, worked out once per result object and shared by every later caller.

    ``write_report`` renders two formats, and the HTML page reads the heatmap in its chart
    and again in its verdict (the deciding arguments): without this, each re-derived the
    score matrices from the evaluations, 18 times per report instead of 5. A result is
    frozen, so the answer cannot go stale; it is dropped when its result is.
    """
    answers: dict[int, T] = {}

    @functools.wraps(compute)
    def once(result: DebateResult) -> T:
        key = id(result)
        if key not in answers:
            answers[key] = compute(result)
            # the entry goes when the result does, before its id can be reused
            weakref.finalize(result, answers.pop, key, None).atexit = False
        return answers[key]

    return once


HEADLINES = {
    "too_close": "Too close to call",
    "irreconcilable": "No verdict: the judges disagree",
    "insufficient": "No verdict: too few judges could score",
    "escalate": "No verdict under the policy: escalate",
}

EXPLANATIONS = {
    "irreconcilable": (
        "The judges' scores disagree too much to name a winner: the verdict would depend on "
        "which judge you asked."
    ),
    "insufficient": (
        "Fewer than two judges returned usable scores, so there is nothing to compare and "
        "no verdict."
    ),
    "escalate": (
        "The panel leans one way, but not confidently enough for the agreement with people "
        "that its policy guarantees: a stronger judge or a person should decide."
    ),
}


def headline(result: DebateResult) -> str:
    """The verdict in a few words."""
    decision = result.decision
    if decision.outcome == "winner":
        return f"{decision.winner} wins"
    return HEADLINES[decision.outcome]


def explanation(result: DebateResult) -> str:
    """The verdict in one or two sentences a non-statistician can act on."""
    decision = result.decision
    if decision.outcome == "winner":
        case = "for" if decision.winner == "PRO" else "against"
        points = result.vote.margin_points
        size = "" if points is None else f"{effect_word(points)} "
        return (
            f"{winner_explanation(result.agreement.alpha)}, and they scored the case {case} "
            f"the proposition {size}higher."
        )
    if decision.outcome == "too_close":
        return too_close_explanation(
            result.agreement.alpha, no_difference=decision.diagnostics.no_difference
        )
    if decision.outcome == "irreconcilable" and result.agreement.alpha is None:
        return (
            "The judges' scores did not vary enough to show that they agree, and their "
            "standings disagree: there is no verdict to trust."
        )
    return EXPLANATIONS[decision.outcome]


def points(value: float | None, *, signed: bool = False) -> str:
    """A score in points of the judges' 1-10 scale (``undefined`` when there is none)."""
    return fmt(value, 2, signed=signed) + ("" if value is None else " points")


CAVEATS = {
    "insufficient": " Too few judges scored, so this margin is not a verdict.",
    "irreconcilable": " The judges disagree, so this margin is not a verdict.",
}


def margin_words(result: DebateResult) -> str:
    """What the PRO-CON margin and its interval say, in words."""
    return _margin_words(result) + CAVEATS.get(result.decision.outcome, "")


def _margin_words(result: DebateResult) -> str:
    vote = result.vote
    if vote.margin is None:
        return "No margin: fewer than two judges scored the debate."
    if vote.margin_points is None:  # a result written before margins in points existed
        return _calibrated_words(result)
    points = vote.margin_points
    leader = "PRO" if points > 0 else "CON"
    text = (
        f"{leader} scored {effect_word(points)} higher: {abs(points):.2f} points ahead on the "
        f"judges' 1-10 scale (PRO {vote.pro_points:.2f}, CON {vote.con_points:.2f}; "
        f"calibrated margin {vote.margin:+.3f})"
    )
    if points == 0:
        text = (
            f"The two sides scored the same: {vote.pro_points:.2f} points each on the judges' "
            "1-10 scale"
        )
    return text + _interval_words(vote)


def _calibrated_words(result: DebateResult) -> str:
    vote = result.vote
    assert vote.margin is not None
    leader = "PRO" if vote.margin > 0 else "CON" if vote.margin < 0 else "neither side"
    text = f"On calibrated scores, {leader} came out ahead by {abs(vote.margin):.3f}"
    if vote.margin == 0:
        text = "On calibrated scores, the two sides came out exactly even"
    return text + _interval_words(vote)


def _interval_words(vote: Vote) -> str:
    """Whether the calibrated margin's interval excludes 0, with its bounds in points.

    The calibrated interval is the one the decision tests, so the words follow it.
    """
    if vote.margin_ci is None:
        return "; the interval is undefined (too little data to resample)."
    low, high = vote.margin_ci
    level = f"{vote.confidence:.0%}"
    if vote.margin_points_ci is not None:
        p_low, p_high = vote.margin_points_ci
        level += f" interval ({p_low:+.2f} to {p_high:+.2f} points)"
    else:
        level += " interval"
    if low <= 0 <= high:
        return f". The {level} includes 0: the lead could be chance."
    return f". The {level} excludes 0."


@dataclass(frozen=True)
class HeatRow:
    """One judge's row of calibrated argument scores, or a missing row."""

    judge: str
    role: str
    values: list[float] | None
    """Calibrated score per argument (NaN where undefined); ``None`` for a missing row."""
    missing: str | None = None
    """Why the row is missing, e.g. ``unscored: parse_failure``."""
    raw: list[float] | None = None
    """The judge's weighted 1-10 score per argument (the vote's raw matrix row), so that
    the arguments' pulls (:mod:`debate.report._why`) need not assemble the matrices again."""


@dataclass(frozen=True)
class Heatmap:
    """Judges x arguments calibrated scores, unscored judges kept as missing rows."""

    ids: list[str]
    rows: list[HeatRow]
    calibration: str
    low: float
    """Bottom of the colour scale."""
    high: float
    """Top of the colour scale."""


def unscored_label(evaluation: JudgeEvaluation) -> str:
    """``unscored: reason (detail)`` for an unscored judge."""
    label = f"unscored: {evaluation.reason}"
    return label + (f" ({evaluation.detail})" if evaluation.detail else "")


def _heat_row(
    result: DebateResult, evaluation: JudgeEvaluation, weights: dict[str, dict[str, float]]
) -> HeatRow:
    if evaluation.status != "scored":
        return HeatRow(evaluation.judge, evaluation.role, None, unscored_label(evaluation))
    if evaluation.judge not in weights:
        return HeatRow(
            evaluation.judge, evaluation.role, None, "missing: no rubric weights in config"
        )
    try:
        matrices = score_matrices(result.transcript, [evaluation], weights)
    except KeyError:
        return HeatRow(
            evaluation.judge, evaluation.role, None, "missing: scores do not cover every argument"
        )
    # Calibration is per judge (row by row), so one row alone gives the panel's numbers,
    # with the same spread floor the vote used.
    floor = result.decision.thresholds.min_spread
    row = calibrate(matrices.raw, result.vote.calibration, floor)[0]
    raw = [float(v) for v in matrices.raw[0]]
    return HeatRow(evaluation.judge, evaluation.role, [float(v) for v in row], raw=raw)


@per_result
def heatmap(result: DebateResult) -> Heatmap:
    """The calibrated judges x arguments matrix the vote was computed from."""
    weights = {j.name: j.weights for j in result.config.judges}  # each judge's rubric
    rows = [_heat_row(result, e, weights) for e in result.evaluations]
    values = [v for r in rows if r.values is not None for v in r.values if math.isfinite(v)]
    if result.vote.calibration == "minmax":
        low, high = 0.0, 1.0
    else:
        reach = max([1.0, *(abs(v) for v in values)])
        low, high = -reach, reach
    return Heatmap(result.transcript.argument_ids, rows, result.vote.calibration, low, high)


@dataclass(frozen=True)
class Divergence:
    """One argument's disagreement across judges."""

    argument: str
    claim: str
    variance: float | None
    split: bool
    """At or above the variance threshold (named in the decision)."""


def divergence(result: DebateResult) -> list[Divergence]:
    """Every argument, most disputed first (undefined variances last)."""
    claims = {a.id: a.claim for a in result.transcript.arguments}
    threshold = result.decision.thresholds.variance
    named = set(result.decision.high_variance_arguments)
    rows = [
        Divergence(
            argument=arg_id,
            claim=claims.get(arg_id, ""),
            variance=v,
            split=arg_id in named or (v is not None and v >= threshold),
        )
        for arg_id, v in result.agreement.argument_variance.items()
    ]
    return sorted(
        rows,
        key=lambda d: (
            d.variance is None or not math.isfinite(d.variance),
            -(d.variance or 0.0),
            d.argument,
        ),
    )


def standing_cells(evaluation: JudgeEvaluation, ids: list[str]) -> list[str]:
    """A scored judge's standing of each argument; ``a → b`` when the swap moved it."""
    assert evaluation.scores is not None
    swapped = evaluation.swap.scores if evaluation.swap is not None else None
    cells: list[str] = []
    for arg_id in ids:
        score = evaluation.scores.get(arg_id)
        text: str = score.standing if score is not None else "missing"
        if swapped is not None and arg_id in swapped and score is not None:
            other = swapped[arg_id].standing
            if other != score.standing:
                text = f"{text} → {other}"
        cells.append(text)
    return cells
