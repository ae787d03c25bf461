"""Deliberation in words: how agreement moved, how much of it was herding, and the verdicts.

Shared by the command's text summary and the Markdown report, so both say it the same way:
``agreement rose from 0.31 to 0.62; 7 of 8 moves were toward the other judges' mean
(herding)``, then the first round's verdict beside the final one.
"""

from __future__ import annotations

from debate.records import DebateResult, Decision
from debate.report._view import HEADLINES


def verdict_words(decision: Decision) -> str:
    """``PRO wins`` or the headline of an outcome without a winner."""
    if decision.outcome == "winner":
        return f"{decision.winner} wins"
    return HEADLINES[decision.outcome]


def deliberation_lines(result: DebateResult) -> list[str]:
    """The deliberation's lines (none for a run without deliberation)."""
    summary, first = result.deliberation, result.first_decision
    if summary is None or first is None:
        return []
    lines = [f"Deliberation: {summary.text()}"]
    if not summary.split_arguments:
        return lines
    moved = [f"{j.judge} ({j.moves})" for j in summary.judges if j.moves]
    change = "" if summary.mean_abs_change is None else f" {summary.mean_abs_change:.2f}"
    lines.append(
        f"  - split arguments: {', '.join(summary.split_arguments)}; moves by judge: "
        + (", ".join(moved) if moved else "none")
        + (f"; mean absolute change{change} points of 10" if change else "")
    )
    same = "unchanged" if not summary.outcome_changed else "changed by deliberation"
    lines.append(
        f"  - verdict before deliberation: {verdict_words(first)}; after: "
        f"{verdict_words(result.decision)} ({same})"
    )
    return lines
