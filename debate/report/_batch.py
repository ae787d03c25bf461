"""The summary of a batch: one line per item (``summary.jsonl``) and one page of them all.

The page is a table of every item (its status, outcome, winner, cost, error) with a link to
each finished item's own report, so a batch of hundreds is read from one place; the same
rows, as JSON Lines, are what a program reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from debate.records import Frozen
from debate.report._html import CSS
from debate.report._markup import esc, section, table
from debate.storage import write_json_atomic


class BatchSummaryLine(Frozen):
    """One item of a batch, as ``summary.jsonl`` records it."""

    id: str
    status: Literal["ok", "failed"]
    outcome: str | None = None
    """The decision's outcome (winner, too_close, irreconcilable, insufficient); None when
    the item failed."""
    winner: str | None = None
    margin: float | None = None
    calls: int | None = None
    cost_usd: float | None = None
    """None when the item failed or a price was unknown: never a guessed 0."""
    error: str | None = None
    report: str | None = None
    """The item's ``report.html``, relative to the batch's folder; None when it has none."""


def _row(line: BatchSummaryLine) -> list[str]:
    name = esc(line.id)
    link = f'<a href="{esc(line.report)}">{name}</a>' if line.report else name
    outcome = line.outcome or ""
    badge = f'<span class="st st-{esc(outcome)}">{esc(outcome.replace("_", " "))}</span>'
    return [
        link,
        f'<span class="status-{esc(line.status)}">{esc(line.status)}</span>',
        badge if outcome else '<span class="undefined">-</span>',
        esc(line.winner or "-"),
        "-" if line.margin is None else f"{line.margin:+.3f}",
        "-" if line.calls is None else str(line.calls),
        "-" if line.cost_usd is None else f"${line.cost_usd:.4f}",
        f'<span class="error">{esc(line.error)}</span>' if line.error else "",
    ]


STATUS_CSS = """
.st-winner { background:#cde8c5; color:#1e5317; }
.st-too_close { background:#fff1a8; color:#5f5200; }
.st-irreconcilable { background:#f6c9c4; color:#7f1d14; }
.st-insufficient { background:#e4e6e8; color:#3b4148; }
.summary .scroll table { width:100%; }
.summary td:first-child { white-space:nowrap; }
.status-failed { color:#b3261e; font-weight:700; }
.summary .error { color:#7f1d14; font-size:13px; overflow-wrap:anywhere; }
"""


def render_batch_html(lines: Sequence[BatchSummaryLine], title: str = "Batch summary") -> str:
    """The summary page: counts by status and outcome, then every item in input order."""
    status = Counter(line.status for line in lines)
    outcomes = Counter(line.outcome for line in lines if line.outcome)
    costs = [line.cost_usd for line in lines if line.status == "ok"]
    cost = (
        f"; cost ${sum(c for c in costs if c is not None):.4f}"
        if costs and all(c is not None for c in costs)
        else ""
    )
    lead = (
        f"{status['ok']} of {len(lines)} items ok, {status['failed']} failed; "
        + ", ".join(f"{n} {o.replace('_', ' ')}" for o, n in sorted(outcomes.items()))
        + cost
    )
    head = ["item", "status", "outcome", "winner", "margin", "calls", "cost", "error"]
    body = table(head, [_row(line) for line in lines], numeric={4, 5, 6})
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}{STATUS_CSS}</style></head>"
        f'<body><main class="summary">{section("items", title, body, lead)}</main></body>'
        "</html>\n"
    )


def write_batch_summary(lines: Sequence[BatchSummaryLine], out_dir: str | Path) -> Path:
    """Write ``summary.jsonl`` and ``summary.html`` into ``out_dir``; the page's path."""
    out = Path(out_dir)
    write_json_atomic(out / "summary.jsonl", "".join(x.model_dump_json() + "\n" for x in lines))
    return write_json_atomic(out / "summary.html", render_batch_html(lines))
