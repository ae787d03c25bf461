"""The verdict object: the short answer of a debate, a judgement, a council or a decision.

An assistant reading a tool's reply needs a few lines (who won, by how much, how sure, why),
not the whole record with every judge's rubric; a program needs the whole record. The
verdict is the first, built from the package's result records and never more certain than
they are: an outcome without a winner has no winner, an undefined statistic stays None, an
unscored judge stays unscored with its reason.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from debate.records import (
    Agreement,
    CouncilResult,
    DebateResult,
    Diagnostics,
    Frozen,
    ItemDecision,
    Usage,
)
from debate.service._models import JobKind
from debate.stats import fmt

CouncilOutcome = Literal["winner", "tied", "insufficient"]


class Interval(Frozen):
    """A margin's interval at ``level`` (e.g. 0.95)."""

    low: float
    high: float
    level: float


class VerdictDiagnostics(Frozen):
    """Where a split comes from, and who could not score."""

    alpha: float | None = None
    """Krippendorff's alpha of the judges (council: of the reviewers); None if undefined."""
    kappa: float | None = None
    judges_scored: int = 0
    judges_unscored: int = 0
    outlier_judges: list[str] = Field(default_factory=list)
    """The judge(s) whose removal raises alpha most, when removing one raises it at all."""
    split_arguments: list[str] = Field(default_factory=list)
    """Arguments the judges split on (variance at or above the threshold)."""
    unscored: dict[str, str] = Field(default_factory=dict)
    """Judge (or reviewer) -> why it could not score; its raw reply is in the full result."""


class VerdictUsage(Frozen):
    """What the run cost."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    retries: int
    cost_usd: float | None = None
    """None when a model of the run is not in the price table (not priced, not free)."""


class RankedCandidate(Frozen):
    """A council candidate's place; ``tied_with_next`` marks a statistical tie."""

    rank: int
    candidate: str
    mean_score: float | None
    std_error: float | None
    tied_with_next: bool
    confidence: str
    safety_failed: bool = False


class Verdict(Frozen):
    """The short answer: outcome, winner, margin and interval, reasons, diagnostics, usage."""

    kind: JobKind
    outcome: str
    """``winner``, ``too_close``, ``irreconcilable`` or ``insufficient``; a council's is
    ``winner``, ``tied`` (first place is a statistical tie) or ``insufficient``."""
    winner: str | None = None
    """``PRO``/``CON``, a decision's option, or a council's candidate; only with ``winner``."""
    margin_points: float | None = None
    """PRO minus CON in points of the 1-10 scale (an option's margin for a decision)."""
    margin_points_interval: Interval | None = None
    margin: float | None = None
    """The calibrated margin the rules decide on (verdict tables: share of votes, -1..1)."""
    margin_interval: Interval | None = None
    calibration: str | None = None
    reasons: list[str] = Field(default_factory=list)
    recommendation: str | None = None
    diagnostics: VerdictDiagnostics = Field(default_factory=VerdictDiagnostics)
    usage: VerdictUsage | None = None
    """None for a decision (no model was called)."""
    ranking: list[RankedCandidate] = Field(default_factory=list)
    """Councils only: best first."""
    unranked: dict[str, str] = Field(default_factory=dict)
    """Councils only: candidate -> why it could not be placed (never put last instead)."""
    item: str | None = None
    """Decisions only: the item, and the two options decided between."""
    options: tuple[str, str] | None = None


def interval(bounds: tuple[float, float] | None, level: float) -> Interval | None:
    """``bounds`` at ``level``, or None when there is no interval."""
    return None if bounds is None else Interval(low=bounds[0], high=bounds[1], level=level)


def outlier_judges(alpha: float | None, diagnostics: Diagnostics) -> list[str]:
    """The judges whose removal raises alpha most (the panel rules' own test)."""
    without = {j: a for j, a in diagnostics.alpha_without_judge.items() if a is not None}
    if alpha is None or not without:
        return []
    best = max(without.values())
    if best <= alpha + 1e-9:
        return []
    return [j for j, a in without.items() if a >= best - 1e-9]


def usage(u: Usage) -> VerdictUsage:
    """The run's totals (the per-call list stays in the full result)."""
    return VerdictUsage.model_validate(u.model_dump(include=set(VerdictUsage.model_fields)))


def debate_verdict(result: DebateResult, kind: JobKind = "debate") -> Verdict:
    """The verdict of a debate or of a judged transcript."""
    d, v, a = result.decision, result.vote, result.agreement
    return Verdict(
        kind=kind,
        outcome=d.outcome,
        winner=d.winner,
        margin_points=v.margin_points,
        margin_points_interval=interval(v.margin_points_ci, v.confidence),
        margin=v.margin,
        margin_interval=interval(v.margin_ci, v.confidence),
        calibration=v.calibration,
        reasons=list(d.reasons),
        recommendation=d.recommendation,
        diagnostics=VerdictDiagnostics(
            alpha=a.alpha,
            kappa=a.kappa,
            judges_scored=a.judges_scored,
            judges_unscored=a.judges_unscored,
            outlier_judges=outlier_judges(a.alpha, d.diagnostics),
            split_arguments=list(d.high_variance_arguments),
            unscored={
                e.judge: _why(e.reason, e.detail)
                for e in result.evaluations
                if e.status != "scored"
            },
        ),
        usage=usage(result.usage),
    )


def _why(reason: str | None, detail: str | None) -> str:
    return ": ".join(p for p in (reason, detail) if p) or "unscored"


def council_verdict(result: CouncilResult) -> Verdict:
    """The verdict of a council: its ranking with ties, and a winner only when first is clear."""
    ranking = [
        RankedCandidate(
            rank=e.rank,
            candidate=e.candidate,
            mean_score=e.mean_score,
            std_error=e.std_error,
            tied_with_next=e.tied_with_next,
            confidence=e.confidence,
            safety_failed=e.safety_failed,
        )
        for e in result.rankings
    ]
    outcome: CouncilOutcome = (
        "insufficient"
        if not ranking or result.agreement.reviewers_scored == 0
        else "tied"
        if ranking[0].tied_with_next
        else "winner"
    )
    a = result.agreement
    return Verdict(
        kind="council",
        outcome=outcome,
        winner=ranking[0].candidate if outcome == "winner" else None,
        reasons=[result.interpretation],
        diagnostics=VerdictDiagnostics(
            alpha=a.alpha,
            judges_scored=a.reviewers_scored,
            judges_unscored=a.reviewers_unscored,
            unscored={
                r.reviewer: _why(r.reason, r.detail) for r in result.reviews if r.status != "scored"
            },
        ),
        usage=usage(result.usage),
        ranking=ranking,
        unranked={u.candidate: u.reason for u in result.unranked},
    )


def decision_verdict(d: ItemDecision, level: float, variance: float) -> Verdict:
    """The verdict on one pair of options of one item of a judgments table.

    ``level`` is the confidence of the interval and ``variance`` the threshold an
    argument's variance splits the judges at (both from the thresholds the rules used).
    """
    unscored = {j: "gave nothing on this pair" for j, m in d.judge_margins.items() if m is None}
    scored = len(d.judge_margins) - len(unscored)
    return Verdict(
        kind="decision",
        outcome=d.outcome,
        winner=d.winner,
        margin_points=d.margin_points,
        margin=d.margin,
        margin_interval=interval(d.interval, level),
        reasons=list(d.reasons),
        diagnostics=_table_diagnostics(d.agreement, d.diagnostics, variance, scored, unscored),
        item=d.item,
        options=d.options,
    )


def _table_diagnostics(
    a: Agreement | None,
    diagnostics: Diagnostics | None,
    variance: float,
    scored: int,
    unscored: dict[str, str],
) -> VerdictDiagnostics:
    """A score table's agreement statistics; a verdict table has none, only who voted."""
    if a is None:
        return VerdictDiagnostics(
            judges_scored=scored, judges_unscored=len(unscored), unscored=unscored
        )
    split = [k for k, v in a.argument_variance.items() if v is not None and v >= variance]
    return VerdictDiagnostics(
        alpha=a.alpha,
        kappa=a.kappa,
        judges_scored=a.judges_scored,
        judges_unscored=a.judges_unscored,
        outlier_judges=outlier_judges(a.alpha, diagnostics) if diagnostics else [],
        split_arguments=split,
        unscored=unscored,
    )


def summary(verdict: Verdict) -> str:
    """A few lines for a person (or an assistant): the answer first, then why."""
    lines = [_headline(verdict)]
    if verdict.margin_points is not None:
        lines.append(f"Margin: {verdict.margin_points:+.2f} points of 1-10" + _ci(verdict))
    elif verdict.margin is not None:
        lines.append(f"Margin: {verdict.margin:+.3f}" + _ci(verdict))
    for r in verdict.ranking:
        tie = " (tied with next)" if r.tied_with_next else ""
        lines.append(f"  {r.rank}. {r.candidate}{tie}")
    g = verdict.diagnostics
    lines.append(
        f"Agreement: alpha {fmt(g.alpha)}, kappa {fmt(g.kappa)}; "
        f"{g.judges_scored} scored, {g.judges_unscored} unscored"
    )
    lines += [f"- {r}" for r in verdict.reasons]
    if verdict.recommendation:
        lines.append(f"Recommendation: {verdict.recommendation}")
    if verdict.usage is not None:
        u = verdict.usage
        cost = "not priced" if u.cost_usd is None else f"${u.cost_usd:.4f}"
        lines.append(
            f"Usage: {u.calls} calls, {u.prompt_tokens + u.completion_tokens} tokens, {cost}"
        )
    return "\n".join(lines)


def _headline(v: Verdict) -> str:
    about = f"{v.item} ({' vs '.join(v.options or ())}): " if v.item is not None else ""
    if v.winner is not None:
        return f"{about}{v.winner} wins"
    text = {
        "too_close": "too close to call",
        "irreconcilable": "no decision, the judges do not agree (irreconcilable)",
        "insufficient": "no decision, too few judges could score (insufficient)",
        "escalate": "no decision under the policy, escalate to a stronger judge or people",
        "tied": "no single winner, first place is a statistical tie",
    }
    return about + text.get(v.outcome, v.outcome)


def _ci(v: Verdict) -> str:
    ci = v.margin_points_interval if v.margin_points is not None else v.margin_interval
    if ci is None:
        return ""
    return f", {ci.level:.0%} interval [{ci.low:+.2f}, {ci.high:+.2f}]"
