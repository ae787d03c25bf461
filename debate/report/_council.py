"""The council's report: the ranking with interval bars and tie brackets, reviews, agreement."""

from __future__ import annotations

import math

from debate.records._council import CouncilResult, RankingEntry, Review
from debate.report._markup import esc, section, table
from debate.report._svg import INK, MUTED, svg, text
from debate.stats import fmt


def interval_z(result: CouncilResult) -> tuple[float, str]:
    """The configured ``tie_z`` and the coverage it gives, so bars match the tie rule."""
    z = result.config.council.tie_z
    return z, f"{math.erf(z / math.sqrt(2)):.0%}"


def ranking_svg(result: CouncilResult) -> str:
    """Each candidate's normalised mean with its ``tie_z`` interval; tied neighbours bracketed."""
    rows = result.rankings
    z, coverage = interval_z(result)
    values = [
        (e.mean_score - z * (e.std_error or 0), e.mean_score + z * (e.std_error or 0))
        for e in rows
        if e.mean_score is not None
    ]
    low = min([v[0] for v in values] + [-1.0])
    high = max([v[1] for v in values] + [1.0])
    left, width, row_h = 170.0, 420.0, 34.0
    height = 30 + row_h * len(rows)

    def x(value: float) -> float:
        return left + (value - low) / (high - low) * width

    parts = [
        f'<line x1="{x(0):.1f}" y1="10" x2="{x(0):.1f}" y2="{height - 10:.1f}" '
        f'stroke="{MUTED}" stroke-dasharray="3 3"/>'
    ]
    for i, e in enumerate(rows):
        y = 25 + i * row_h
        parts.append(text(left - 10, y + 4, f"{e.rank}. {e.candidate}"[:24], anchor="end"))
        if e.mean_score is None:
            parts.append(text(left, y + 4, "no votes", fill=MUTED))
            continue
        se = e.std_error or 0.0
        a, b = x(e.mean_score - z * se), x(e.mean_score + z * se)
        parts.append(
            f'<line x1="{a:.1f}" y1="{y:.1f}" x2="{b:.1f}" y2="{y:.1f}" '
            f'stroke="{INK}" stroke-width="2"/>'
        )
        parts.append(f'<circle cx="{x(e.mean_score):.1f}" cy="{y:.1f}" r="5" fill="#3b528b"/>')
        if e.tied_with_next and i + 1 < len(rows):
            bx = left + width + 14
            parts.append(
                f'<path d="M{bx - 6:.1f},{y:.1f} H{bx:.1f} V{y + row_h:.1f} '
                f'H{bx - 6:.1f}" fill="none" stroke="#a12a1c" stroke-width="2"/>'
            )
            parts.append(text(bx + 4, y + row_h / 2 + 4, "tied", fill="#a12a1c"))
    body = "".join(parts)
    return svg(
        left + width + 60,
        height,
        body,
        f"Council ranking: normalised mean with {coverage} interval",
    )


RANKING_HEAD = ["rank", "candidate", "z-mean", "SE", "raw mean", "Borda", "votes"]
"""The ranking columns both council reports show, in this order."""


def ranking_cells(entry: RankingEntry, name: str) -> list[str]:
    """One ranking row under :data:`RANKING_HEAD` (``name`` already escaped for the page)."""
    return [
        str(entry.rank),
        name,
        fmt(entry.mean_score, signed=True),
        fmt(entry.std_error),
        fmt(entry.raw_mean),
        f"{entry.borda:.2f}",
        str(entry.votes),
    ]


def _ranking_section(result: CouncilResult) -> str:
    head = [*RANKING_HEAD, "firsts", "tied with next", "confidence"]
    rows = [
        [
            *ranking_cells(e, esc(e.candidate)),
            str(e.first_places),
            "yes" if e.tied_with_next else "",
            e.confidence + (" · failed safety gate" if e.safety_failed else ""),
        ]
        for e in result.rankings
    ]
    _, coverage = interval_z(result)
    return section(
        "ranking",
        "Ranking",
        ranking_svg(result) + table(head, rows, {2, 3, 4, 5, 6, 7}),
        f"Method: {esc(result.method)}; bars are {coverage} intervals of the normalised mean.",
    )


def _shown_order(review: Review) -> str:
    by_position = sorted(review.positions.items(), key=lambda p: p[1])
    return ", ".join(f"{cid}@{pos + 1}" for cid, pos in by_position)


def _reviews_section(result: CouncilResult) -> str:
    rows = [
        [
            esc(r.reviewer),
            esc(r.model),
            r.status + (f" ({esc(r.reason)})" if r.reason else ""),
            esc(" > ".join(r.ranking or [])),
            esc(", ".join(r.self_votes_excluded) or "-"),
            esc(_shown_order(r)),
        ]
        for r in result.reviews
    ]
    head = ["reviewer", "model", "status", "ranking", "self-vote excluded", "shown order"]
    return section("reviews", "Reviews", table(head, rows, set()))


def _agreement_section(result: CouncilResult) -> str:
    a = result.agreement
    return section(
        "agreement",
        "Reviewer agreement",
        f"<p>Krippendorff's alpha (interval, overall scores): {fmt(a.alpha)}; "
        f"{a.reviewers_scored} reviewers scored, {a.reviewers_unscored} unscored.</p>",
    )


def _candidates_section(result: CouncilResult) -> str:
    answers = "".join(
        f"<details><summary>{esc(c.id)}{' · ' + esc(c.author_model) if c.author_model else ''}"
        f"</summary><p>{esc(c.text)}</p></details>"
        for c in result.candidates
    )
    return section("candidates", "Candidates", answers)


def render_council_html(result: CouncilResult) -> str:
    """The whole HTML page of a council result."""
    from debate.report._html import CSS

    verdict = section(
        "verdict",
        "Verdict",
        f'<p class="banner">{esc(result.interpretation)}</p>',
        f"Question: {esc(result.question)}",
    )
    sections = [
        verdict,
        _ranking_section(result),
        _agreement_section(result),
        _reviews_section(result),
        _candidates_section(result),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Council report: {esc(result.question)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(sections)}<footer>debate {esc(result.version)} · seed "
        f"{esc(result.seed)}</footer></main></body></html>\n"
    )


def render_council_markdown(result: CouncilResult) -> str:
    """The council report as Markdown."""
    from debate.report._markdown import cell, md_table

    lines = [
        f"# Council: {cell(result.question)}",
        "",
        f"**{cell(result.interpretation)}**",
        "",
        f"Method: {result.method}",
        "",
    ]
    lines.append(
        md_table(
            [*RANKING_HEAD, "tied with next"],
            [
                [*ranking_cells(e, cell(e.candidate)), "yes" if e.tied_with_next else ""]
                for e in result.rankings
            ],
        )
    )
    for r in result.reviews:
        if r.self_votes_excluded:
            lines.append(
                f"- self-vote excluded: {cell(r.reviewer)} on {', '.join(r.self_votes_excluded)}"
            )
        if r.status == "unscored":
            lines.append(f"- reviewer {cell(r.reviewer)} unscored: {r.reason}")
    return "\n".join(lines) + "\n"
