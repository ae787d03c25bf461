"""The decision rules: from agreement, vote and diagnostics to an outcome and its reasons.

The rules run in a fixed order and the first that applies decides:

1. ``insufficient``: fewer than ``Thresholds.min_judges`` (default two) judges scored.
2. ``too_close``: no scored judge told any argument from another; the panel sees no
   difference between the sides, which is not disagreement.
3. ``irreconcilable``: alpha and kappa both fail, or some argument splits the judges; the
   reasons name the judge whose removal most raises agreement, the weakest rubric dimension
   and the split arguments, whichever of them exist.
4. ``too_close``: the calibrated margin is under ``Thresholds.gap``, or its interval at
   ``Thresholds.confidence`` includes 0 (the lead could be chance).
5. ``winner``: everything above passed.

The recommendation follows the outcome and the alpha band (:mod:`debate.panel._advice`):
a winner at low agreement is told to proceed with caution, not that the panel agrees.
A reason never names something that is not there: no "review the high-variance arguments"
without such arguments, no "standings diverge" when every standing was the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from debate.panel._advice import flagged_arguments
from debate.panel._advice import recommendation as advise
from debate.records import (
    Agreement,
    Decision,
    Diagnostics,
    JudgeEvaluation,
    Outcome,
    Side,
    Thresholds,
    Vote,
    built,
)
from debate.stats import HIGH_AGREEMENT, UNDEFINED, band, fmt

EFFECT_BANDS: tuple[tuple[float, str], ...] = ((0.5, "slightly"), (1.5, "moderately"))
"""Words for the size of a margin in points of the judges' 1-10 scale: under 0.5 point
"slightly", under 1.5 "moderately", from 1.5 "clearly". Rubric scores are whole points on
four dimensions, so half a point of weighted mean is half a step on every dimension (within
one judge's rounding), and a point and a half is more than a step on every dimension, a
difference anyone reading the rubric would call clear."""


def effect_word(points: float) -> str:
    """How big a margin of ``points`` (1-10 scale) reads: slightly, moderately or clearly."""
    size = abs(points)
    return next((word for bound, word in EFFECT_BANDS if size < bound), "clearly")


class Margins(NamedTuple):
    """One item's vote numbers: a :class:`Vote`'s per-item fields, or a recorded item's.

    The rules read ``margin``, its interval and its points; the rest rides along so that
    the batch path builds a Vote only where one is kept (a live panel), not per recorded item.
    """

    pro: float | None
    con: float | None
    margin: float | None
    margin_ci: tuple[float, float] | None
    pro_points: float | None
    con_points: float | None
    margin_points: float | None
    margin_points_ci: tuple[float, float] | None
    cluster_weights: dict[str, float] | None


class Ruling(NamedTuple):
    """What the rules decide about one item, before it becomes a :class:`Decision`."""

    outcome: Outcome
    winner: Side | None
    reasons: list[str]
    """The rule's reasons, then the notes."""
    high: list[str]
    """The high-variance arguments behind a split."""
    no_difference: bool


class Case(NamedTuple):
    """Everything the rules read (a tuple: made once per item, 100,000 times in a decide)."""

    agreement: Agreement
    vote: Margins
    confidence: float
    """The level of the margin's interval (the vote's ``confidence``)."""
    thresholds: Thresholds
    diagnostics: Diagnostics
    notes: Sequence[str]
    """Notes on individual judges (unscored, swapped readings), appended to every outcome."""
    panel_size: int
    agreement_notes: list[str]
    """What alpha and kappa say (:func:`_agreement_checks`), read by every later rule."""
    diverged: bool
    """Agreement fails on both alpha and kappa."""


Rule = Callable[[Case], "Ruling | None"]


def margins_of(vote_: Vote) -> Margins:
    """A vote's per-item numbers."""
    return Margins(*(getattr(vote_, name) for name in Margins._fields))


def decide(
    agreement: Agreement,
    vote_: Vote,
    thresholds: Thresholds,
    evaluations: Sequence[JudgeEvaluation],
    panel_size: int,
    diagnostics: Diagnostics,
    *,
    notes: Sequence[str] = (),
    extra: Mapping[str, object] | None = None,
) -> Decision:
    """Apply the rules in order; a winner is named only when every check passes.

    ``notes`` follow the notes on the judges at the end of every outcome's reasons;
    ``extra`` fields are set on the decision as given, not validated: give values of their
    fields' types (:func:`debate.panel._decision._leads` makes them from ``tolist``).
    """
    found = ruling(
        agreement,
        margins_of(vote_),
        vote_.confidence,
        thresholds,
        panel_size,
        diagnostics,
        [*judge_notes(evaluations), *notes],
    )
    return decision_of(found, agreement, thresholds, diagnostics, extra or {})


def ruling(
    agreement: Agreement,
    margins: Margins,
    confidence: float,
    thresholds: Thresholds,
    panel_size: int,
    diagnostics: Diagnostics,
    notes: Sequence[str],
) -> Ruling:
    """The rules in order, the first that applies deciding; ``notes`` end every reason list."""
    checks = _agreement_checks(agreement, thresholds)  # the last two fields, in order
    case = Case(agreement, margins, confidence, thresholds, diagnostics, notes, panel_size, *checks)
    rules: tuple[Rule, ...] = (_insufficient, _no_difference, _split, _too_close)
    for rule in rules:
        found = rule(case)
        if found is not None:
            return found
    return _winner(case)


def decision_of(
    found: Ruling,
    agreement: Agreement,
    thresholds: Thresholds,
    diagnostics: Diagnostics,
    extra: Mapping[str, object],
) -> Decision:
    """A ruling as a decision record, with its recommendation and the ``extra`` fields."""
    flagged = flagged_arguments(agreement.argument_variance, thresholds.variance)
    return built(  # every value is of its field's type: literals, fresh lists, the records
        Decision,
        outcome=found.outcome,
        winner=found.winner,
        reasons=found.reasons,
        high_variance_arguments=found.high,
        thresholds=thresholds,
        recommendation=advise(
            found.outcome, agreement.alpha, flagged, no_difference=found.no_difference
        ),
        diagnostics=diagnostics,
        **extra,
    )


def _insufficient(case: Case) -> Ruling | None:
    scored, need = case.agreement.judges_scored, case.thresholds.min_judges
    if scored >= need and case.vote.margin is not None:
        return None
    reason = f"only {scored} of {case.panel_size} judges could score; at least " + (
        "two are needed" if need == 2 else f"{need} are needed (thresholds.min_judges)"
    )
    return _decision(case, "insufficient", None, [reason])


def _no_difference(case: Case) -> Ruling | None:
    if not case.diagnostics.no_difference:
        return None
    reason = (
        "the panel sees no difference between the sides: every judge gave every argument the "
        "same score, so there is nothing to agree or disagree on (alpha and kappa are "
        "undefined, not low)"
    )
    return _decision(case, "too_close", None, [reason], no_difference=True)


def _split(case: Case) -> Ruling | None:
    high = _high_variance(case)
    if not case.diverged and not high:
        return None
    reasons = [*_split_causes(case, high), *case.agreement_notes]
    return _decision(case, "irreconcilable", None, reasons, high)


def _too_close(case: Case) -> Ruling | None:
    vote_, thresholds = case.vote, case.thresholds
    assert vote_.margin is not None  # _insufficient ran first
    if abs(vote_.margin) < thresholds.gap:
        reason = (
            f"the PRO-CON margin {vote_.margin:+.3f} ({_points(vote_.margin_points)}) "
            f"is within {thresholds.gap}"
        )
    elif vote_.margin_ci is None:
        reason = "the margin's interval is undefined (too little data to resample)"
    elif vote_.margin_ci[0] <= 0 <= vote_.margin_ci[1]:
        reason = f"{_interval_text(case)} includes 0: the lead could be chance"
    else:
        return None
    return _decision(case, "too_close", None, [reason, *case.agreement_notes])


def _winner(case: Case) -> Ruling:
    vote_, agreement = case.vote, case.agreement
    assert vote_.margin is not None and vote_.margin_points is not None
    side: Side = "PRO" if vote_.margin > 0 else "CON"
    reasons = [
        f"{side} scored {effect_word(vote_.margin_points)} higher: "
        f"{abs(vote_.margin_points):.2f} points ahead on the judges' 1-10 scale (calibrated "
        f"margin {abs(vote_.margin):.3f}); {_interval_text(case)} excludes 0; alpha "
        f"{_alpha_text(agreement.alpha)}, kappa {fmt(agreement.kappa)}",
        *case.agreement_notes,
        *_contested(case),
        *_split_dimensions(case),
    ]
    return _decision(case, "winner", side, reasons)


def _decision(
    case: Case,
    outcome: Outcome,
    winner: Side | None,
    reasons: list[str],
    high: list[str] | None = None,
    *,
    no_difference: bool = False,
) -> Ruling:
    return Ruling(outcome, winner, [*reasons, *case.notes], high or [], no_difference)


def _points(points: float | None) -> str:
    return UNDEFINED + " in points" if points is None else f"{points:+.2f} points of 10"


def _interval_text(case: Case) -> str:
    """``the 95% interval of the margin [-0.111, +0.778] (in points [-0.33, +2.33])``."""
    vote_ = case.vote
    assert vote_.margin_ci is not None
    low, high = vote_.margin_ci
    text = f"the {case.confidence:.0%} interval of the margin [{low:+.3f}, {high:+.3f}]"
    if vote_.margin_points_ci is not None:
        p_low, p_high = vote_.margin_points_ci
        text += f" (in points [{p_low:+.2f}, {p_high:+.2f}])"
    return text


def _alpha_text(alpha: float | None) -> str:
    return UNDEFINED if alpha is None else f"{fmt(alpha)} ({band(alpha)} agreement)"


def _high_variance(case: Case) -> list[str]:
    return high_variance_arguments(case.agreement.argument_variance, case.thresholds.variance)


def high_variance_arguments(variances: Mapping[str, float | None], limit: float) -> list[str]:
    """The arguments whose variance across judges reaches ``limit``: the panel splits on them.

    The one rule, shared by the decision and by deliberation (which asks the judges to
    reconsider exactly these, and those whose standings differ).
    """
    return [a for a, v in variances.items() if v is not None and v >= limit]


def _split_causes(case: Case, high: list[str]) -> list[str]:
    """The judge, the rubric dimension and the arguments behind a split, where they exist."""
    causes = [*_outlier_judges(case), *_weakest_dimension(case.diagnostics)]
    if high:
        causes.append(
            f"the judges split on {', '.join(high)} (variance of offset-corrected scores "
            f">= {case.thresholds.variance})"
        )
    return causes


def _outlier_judges(case: Case) -> list[str]:
    """The judge(s) whose removal raises alpha most, when removing one raises it at all."""
    alpha = case.agreement.alpha
    without = case.diagnostics.alpha_without_judge
    defined = [a for a in without.values() if a is not None]
    if alpha is None or not defined:
        return []
    best = max(defined)
    if best <= alpha + 1e-9:  # the usual case: no judge's removal raises alpha; no names
        return []
    names = [j for j, a in without.items() if a is not None and a >= best - 1e-9]
    who = " or ".join(f"judge {n}" for n in names)
    return [
        f"{who} disagrees with the rest of the panel: without {who}, alpha rises from "
        f"{fmt(alpha)} to {fmt(best)}"
    ]


def _weakest_dimension(diagnostics: Diagnostics) -> list[str]:
    defined = {d: a for d, a in diagnostics.alpha_by_dimension.items() if a is not None}
    if not defined:
        return []
    weakest = min(defined, key=defined.__getitem__)
    alpha = fmt(defined[weakest])
    if len(defined) > 1:  # one dimension (the usual recorded table) is the weakest alone
        if max(defined.values()) - defined[weakest] < 1e-9:
            return [f"the judges split alike on every rubric dimension (alpha {alpha})"]
        tied = _within(defined, defined[weakest])
        if len(tied) > 1:
            return [f"the weakest rubric dimensions are {', '.join(tied)} (alpha {alpha})"]
    return [f"the weakest rubric dimension is {weakest} (alpha {alpha})"]


def _within(values: dict[str, float], target: float) -> list[str]:
    """The keys whose value equals ``target`` but for rounding (1e-9), in order.

    Naming only the first of equal values would make the reason depend on the order in
    which the table lists its options, not on the judgments.
    """
    return [k for k, v in values.items() if abs(v - target) < 1e-9]


def _contested(case: Case) -> list[str]:
    """Below high agreement, the most contested argument (a winner's only caveat)."""
    alpha = case.agreement.alpha
    variances = {a: v for a, v in case.agreement.argument_variance.items() if v is not None}
    if alpha is None or alpha >= HIGH_AGREEMENT or not variances:
        return []
    top = max(variances, key=lambda a: variances[a])
    tied = _within(variances, variances[top])
    what = f"argument is {top}" if len(tied) == 1 else f"arguments are {', '.join(tied)}"
    return [
        f"alpha {_alpha_text(alpha)} is not high: the most contested {what} "
        f"(variance {variances[top]:.2f}, below {case.thresholds.variance})"
    ]


def _split_dimensions(case: Case) -> list[str]:
    """Rubric dimensions the judges split on although their overall scores agree."""
    low = {
        d: a
        for d, a in case.diagnostics.alpha_by_dimension.items()
        if a is not None and a < case.thresholds.alpha
    }
    if not low:
        return []
    named = ", ".join(f"{d} (alpha {fmt(a)})" for d, a in low.items())
    return [f"the judges agree overall but split on {named}"]


def _agreement_checks(agreement: Agreement, thresholds: Thresholds) -> tuple[list[str], bool]:
    """Reasons from alpha and kappa, and whether agreement fails on both (the panel diverges).

    An undefined kappa means every judge gave every argument the same standing: the
    standings agree trivially and carry no information, so agreement rests on alpha alone.
    """
    alpha, kappa = agreement.alpha, agreement.kappa
    alpha_ok = alpha is not None and alpha >= thresholds.alpha
    alpha_fail = (
        "alpha is undefined (the scores did not vary, so agreement on them cannot be shown)"
        if alpha is None
        else f"alpha {_alpha_text(alpha)} is below {thresholds.alpha}"
    )
    if kappa is None:
        same = "every judge gave every argument the same standing, so kappa is undefined"
        if alpha_ok:
            return [f"{same}; agreement rests on the scores (alpha {fmt(alpha)})"], False
        return [f"{alpha_fail}, and the standings cannot show agreement: {same}"], True
    kappa_ok = kappa >= thresholds.kappa
    kappa_fail = f"kappa {fmt(kappa)} is below {thresholds.kappa}"
    if not alpha_ok and not kappa_ok:
        return [f"{alpha_fail} and {kappa_fail}: agreement is shown on neither"], True
    if not alpha_ok:
        return [f"{alpha_fail}: scores diverge"], False
    if not kappa_ok:
        return [f"{kappa_fail}: standings diverge"], False
    return [], False


def few_votes(votes: float | None, scored: int, clusters: list[list[str]] | None) -> str | None:
    """The warning when the scored judges are worth fewer than two independent votes."""
    if votes is None or votes >= 2 or scored < 2:
        return None
    if clusters:
        named = "; ".join(", ".join(c) for c in clusters)
        who = f"judges {named} move together (correlation >= 0.9)"
    else:
        who = "their scores are strongly correlated"
    return (
        f"the {scored} scored judges are worth {votes:.2f} independent "
        f"votes (fewer than two): {who}, so the margin's interval is widened as for that "
        "many votes"
    )


def judge_notes(evaluations: Sequence[JudgeEvaluation]) -> list[str]:
    notes = []
    for e in evaluations:
        if e.standby_for is not None:
            notes.append(
                f"standby judge {e.judge} ({e.role}) was asked in place of judge "
                f"{e.standby_for} ({e.standby_reason})"
                + ("" if e.status == "scored" else " and is unscored too")
            )
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
