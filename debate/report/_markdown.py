"""The Markdown report of a debate: the HTML report's content as text and tables.

Debater and judge text is HTML-escaped here too (Markdown viewers render raw HTML) and
table cells have their pipes escaped and line breaks folded.
"""

from __future__ import annotations

from collections.abc import Sequence

from debate.records import DIMENSIONS, DebateResult
from debate.report import _why
from debate.report._deliberation import deliberation_lines
from debate.report._markup import inert
from debate.report._view import (
    divergence,
    explanation,
    headline,
    heatmap,
    margin_words,
    points,
    standing_cells,
    unscored_label,
)
from debate.stats import BAND_TEXT, KAPPA_BAND_TEXT, band, fmt, fmt_interval, kappa_band


def text(value: object) -> str:
    """Model text made inert for Markdown: no raw HTML, one line."""
    return " ".join(inert(str(value), quote=False).split())


def cell(value: object) -> str:
    """A table cell: escaped, one line, pipes escaped."""
    return text(value).replace("|", "\\|")


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; cells must already be escaped with :func:`cell`."""
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    return "\n".join(lines)


def _why_lines(result: DebateResult) -> list[str]:
    """Where the split comes from, the deciding arguments, and the judges' key findings."""
    lines: list[str] = []
    causes = _why.split_causes(result)
    if causes:
        lines += ["", "**Where the split comes from:**", "", *(f"- {text(c)}" for c in causes)]
    pulls = _why.deciding(result)
    if pulls:
        leader = result.decision.winner
        title = (
            f"Arguments that decided it for {leader}"
            if leader
            else "Arguments that moved the margin most"
        )
        lines += ["", f"**{title}:**", ""]
        lines += [
            f"{i}. **{text(p.argument)}** “{text(p.claim)}”: {_why.pull_words(p)}"
            for i, p in enumerate(pulls, 1)
        ]
    found = _why.findings(result)
    if found:
        lines += ["", "**In the judges' words:**"]
        for judge, finding in found:
            lines += ["", f"> “{text(finding)}” (**{text(judge)}**)"]
    return lines


def _verdict(result: DebateResult) -> list[str]:
    d, a, v = result.decision, result.agreement, result.vote
    return [
        f"# {headline(result)}",
        "",
        f"**Topic:** {text(result.topic)}",
        "",
        explanation(result),
        "",
        f"PRO {points(v.pro_points)} · CON {points(v.con_points)} · PRO − CON "
        f"{points(v.margin_points, signed=True)} (calibrated margin "
        f"{fmt(v.margin, signed=True)}) · alpha {fmt(a.alpha)} ({band(a.alpha)}) · kappa "
        f"{fmt(a.kappa)} ({kappa_band(a.kappa)}) · {a.judges_scored} of "
        f"{a.judges_scored + a.judges_unscored} judges scored",
        "",
        "**Why:**",
        "",
        *(f"- {text(r)}" for r in d.reasons),
        *_why_lines(result),
        "",
        f"**What to do:** {text(d.recommendation)}",
        *_deliberation(result),
    ]


def _deliberation(result: DebateResult) -> list[str]:
    """How deliberation moved the judges (nothing without it)."""
    lines = deliberation_lines(result)
    if not lines:
        return []
    head, *rest = lines
    return ["", f"**{text(head)}**", "", *(f"- {text(r.removeprefix('  - '))}" for r in rest)]


def _section(
    title: str, note: str | None, head: Sequence[str], rows: Sequence[Sequence[str]]
) -> list[str]:
    """A report section: its heading, a note on how to read it, and its table."""
    return [f"## {title}", "", *([note, ""] if note else []), md_table(head, rows)]


def _margin(result: DebateResult) -> list[str]:
    v = result.vote
    level = f"{v.confidence:.0%}"
    head = ["scale", "PRO mean", "CON mean", "PRO − CON", f"{level} interval"]
    rows = [
        [
            "points (1–10)",
            fmt(v.pro_points, 2),
            fmt(v.con_points, 2),
            fmt(v.margin_points, 2, signed=True),
            fmt_interval(v.margin_points_ci, digits=2),
        ],
        [
            f"calibrated ({v.calibration})",
            fmt(v.pro),
            fmt(v.con),
            fmt(v.margin, signed=True),
            fmt_interval(v.margin_ci),
        ],
    ]
    note = (
        f"{margin_words(result)} Too close below ±{result.decision.thresholds.gap:g} "
        "(calibrated). Points say how big the difference is on the judges' own scale; the "
        "verdict is decided on the calibrated margin."
    )
    return _section("Who argued better: the PRO − CON margin", note, head, rows)


def _agreement(result: DebateResult) -> list[str]:
    a, th = result.agreement, result.decision.thresholds
    rows = [
        ["alpha (calibrated scores)", fmt(a.alpha), band(a.alpha), f"{th.alpha:g}"],
        ["alpha (raw 1–10 scores)", fmt(a.alpha_raw), band(a.alpha_raw), "—"],
        ["kappa (standings)", fmt(a.kappa), kappa_band(a.kappa), f"{th.kappa:g}"],
        ["independent votes", cell(a.votes_text()), "—", "—"],
    ]
    by_dim = a.alpha_by_dimension
    names = [d for d in DIMENSIONS if d in by_dim] + [d for d in by_dim if d not in DIMENSIONS]
    note = (
        f"Alpha's bands (Krippendorff): {BAND_TEXT}. Kappa's bands (Landis and Koch): "
        f"{KAPPA_BAND_TEXT}. Undefined means too little variation or too few judges."
        + (f" Warning: {a.warning}." if a.warning else "")
    )
    return [
        *_section("Do the judges agree?", note, ["statistic", "value", "band", "threshold"], rows),
        "",
        "### Agreement per rubric dimension",
        "",
        md_table(
            ["dimension", "alpha", "band"],
            [[cell(n), fmt(by_dim[n]), band(by_dim[n])] for n in names],
        ),
    ]


def _heatmap(result: DebateResult) -> list[str]:
    heat = heatmap(result)
    rows = []
    for r in heat.rows:
        if r.values is None:
            # The reason fills the first cell; the others say "missing", never a number.
            rest = ["missing"] * (len(heat.ids) - 1)
            rows.append([cell(r.judge), f"*{cell(r.missing)}*", *rest])
        else:
            rows.append([cell(r.judge), *(fmt(v, 2) for v in r.values)])
    return _section(
        f"Each judge's calibrated scores ({heat.calibration})",
        "Unscored judges are missing, never zero, and left out of every statistic.",
        ["judge", *(cell(i) for i in heat.ids)],
        rows,
    )


def _divergence(result: DebateResult) -> list[str]:
    threshold = result.decision.thresholds.variance
    rows = [
        [cell(d.argument), fmt(d.variance, 2), "**split**" if d.split else "agreed", cell(d.claim)]
        for d in divergence(result)
    ]
    note = f"Variance across judges (offset-corrected, 1–10 scale); split at ≥ {threshold:g}."
    return _section(
        "Arguments that drove the divergence",
        note,
        ["argument", "variance", "status", "claim"],
        rows,
    )


def _standings(result: DebateResult) -> list[str]:
    ids = result.transcript.argument_ids
    rows = []
    for e in result.evaluations:
        lead = [cell(e.judge), cell(e.role), cell(e.model)]
        if e.status == "scored":
            rows.append(lead + [cell(c) for c in standing_cells(e, ids)])
        else:
            rows.append(lead + [f"*{cell(unscored_label(e))}*"] + [""] * (len(ids) - 1))
    return [
        "## Each judge's standings",
        "",
        md_table(["judge", "role", "model", *(cell(i) for i in ids)], rows),
    ]


def _usage(result: DebateResult) -> list[str]:
    u = result.usage
    cost = "not priced" if u.cost_usd is None else f"${u.cost_usd:.4f}"
    head = ["calls", "retries", "prompt tokens", "completion tokens", "cached tokens", "cost"]
    counts = [u.calls, u.retries, u.prompt_tokens, u.completion_tokens, u.cached_tokens]
    return _section("Usage", None, head, [[*(str(n) for n in counts), cost]])


def _transcript(result: DebateResult) -> list[str]:
    t = result.transcript
    lines = ["## Transcript", "", "### Arguments", ""]
    for a in t.arguments:
        lines += [
            f"- **{a.id}** {text(a.claim)}",
            f"  - reasoning: {text(a.reasoning)}",
            f"  - evidence: {text(a.evidence)}",
        ]
    if t.cross_examinations:
        lines += ["", "### Cross-examination", ""]
        for x in t.cross_examinations:
            lines.append(f"- **Round {x.round}: {x.by} examines {x.target}**")
            lines.append(f"  - challenge: {text(x.challenge)}")
            if x.concession:
                lines.append(f"  - concedes: {text(x.concession)}")
            lines.append(f"  - rebuttal: {text(x.rebuttal)}")
    if t.closings:
        lines += ["", "### Closings", ""]
        lines += [f"- **{c.side}**: {text(c.statement)}" for c in t.closings]
    return lines


def render_debate_markdown(result: DebateResult) -> str:
    """The whole Markdown report of a debate result."""
    th = result.decision.thresholds
    blocks = [
        _verdict(result),
        _margin(result),
        _agreement(result),
        _heatmap(result),
        _divergence(result),
        _standings(result),
        _usage(result),
        _transcript(result),
        [
            "## Run details",
            "",
            f"seed {result.seed} · debate {text(result.version)} · thresholds: alpha "
            f"{th.alpha:g}, kappa {th.kappa:g}, variance {th.variance:g}, gap {th.gap:g}",
        ],
    ]
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"
