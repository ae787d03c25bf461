"""The bias audit as plain text: each figure with its interval and what it means."""

from __future__ import annotations

from debate.quality._audit import Audit, CouncilAudit, DebateFigures, Estimate, ReviewerAudit

NO_EVIDENCE = "no evidence of position bias"


def position_verdict(est: Estimate, *, earlier_positive: bool) -> str:
    """What a position figure says: nothing (interval covers 0) or which way it leans."""
    if est.covers_zero is None or est.value is None:
        return ""
    if est.covers_zero:
        return NO_EVIDENCE
    earlier = (est.value > 0) == earlier_positive
    return "favours what it reads first" if earlier else "favours what it reads later"


def _line(label: str, est: Estimate, verdict: str = "") -> str:
    tail = f"  -> {verdict}" if verdict else ""
    return f"  {label:<26}{est.text()}{tail}"


def figure_lines(figures: DebateFigures) -> list[str]:
    """The five debate figures, one per line."""
    first_side = figures.first_side_advantage
    side_verdict = ""
    if first_side.covers_zero is not None:
        side_verdict = (
            "no evidence that the side shown first gains"
            if first_side.covers_zero
            else "the side shown first gains"
            if (first_side.value or 0) > 0
            else "the side shown second gains"
        )
    return [
        _line(
            "primacy (read first)",
            figures.primacy,
            position_verdict(figures.primacy, earlier_positive=True),
        ),
        _line(
            "per position later",
            figures.position_step,
            position_verdict(figures.position_step, earlier_positive=False),
        ),
        _line("first-shown side", first_side, side_verdict),
        _line("length correlation", figures.length_correlation),
        _line("self-preference", figures.self_preference),
    ]


def _reviewer_lines(r: ReviewerAudit, bound: float) -> list[str]:
    corr = r.correlation
    verdict = ""
    if corr.value is not None:
        side = "within" if r.within_bound else "outside"
        verdict = f"|r| {side} ADR-017's bound {bound}"
        if r.within_bound and corr.low is not None and corr.high is not None:
            if max(-corr.low, corr.high) >= bound:
                verdict += f" (the interval reaches past +-{bound}: more runs would settle it)"
        verdict += f"; {position_verdict(corr, earlier_positive=False)}"
    lines = [
        _line("position correlation", corr, verdict),
        _line("per position later", r.step),
    ]
    if r.offset is not None:
        lines.append(_line("offset vs other reviewers", r.offset, offset_verdict(r.offset)))
    return lines


def offset_verdict(est: Estimate) -> str:
    """Harsh, generous, or no evidence of either (nothing without an interval)."""
    if est.covers_zero is None or est.value is None:
        return ""
    if est.covers_zero:
        return "no evidence of a harsh or generous reviewer"
    return (
        "generous: scores above the others" if est.value > 0 else "harsh: scores below the others"
    )


def council_lines(council: CouncilAudit) -> list[str]:
    """ADR-017's position measure per reviewer and pooled."""
    if not council.reviewers:
        return ["council runs: none with stored reading positions"]
    lines = [f"council runs: {council.runs} (score vs display position, within candidates)"]
    for r in council.reviewers:
        lines.append(f"reviewer {r.reviewer} x {r.model}")
        lines += _reviewer_lines(r, council.bound)
    if council.pooled is not None:
        lines.append("all reviewers")
        lines += _reviewer_lines(council.pooled, council.bound)
    return lines


def format_audit(result: Audit) -> str:
    """A plain-text report of the audit: per judge, the panel pooled, then council runs."""
    lines: list[str] = []
    if not result.judges:
        lines.append("debate runs: none recorded in the store yet")
    else:
        lines.append(
            f"debate runs: {result.runs} (judge's own 1-10 score; effects within arguments, "
            "readings and the judge's side; 95 % intervals clustered by run)"
        )
        for j in result.judges:
            lines.append(f"{j.role} x {j.model}")
            lines += figure_lines(j)
        if result.pooled is not None:
            lines.append("panel (all judges)")
            lines += figure_lines(result.pooled)
    lines.append("")
    lines += council_lines(result.council)
    return "\n".join(lines)
