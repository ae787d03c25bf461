"""The council's report: the ranking with interval bars and tie brackets, reviews, agreement."""

from __future__ import annotations

import math
from collections.abc import Callable

from debate.records import BiasFigure, CouncilBias, CouncilResult, RankingEntry, Review
from debate.report._gauges import at, fluid_svg, hline, nice_ticks, pct, ptext, vline
from debate.report._markup import esc, section, table
from debate.report._svg import INK, MUTED, text
from debate.stats import band, fmt


def interval_z(result: CouncilResult) -> tuple[float, str]:
    """The configured ``tie_z`` and the coverage it gives, so bars match the tie rule."""
    z = result.config.council.tie_z
    return z, f"{math.erf(z / math.sqrt(2)):.0%}"


ROW_H, FIRST_ROW = 34.0, 25.0
"""Row geometry of the ranking chart: row ``i`` is drawn at ``FIRST_ROW + i * ROW_H``."""
PLOT = (28.0, 90.0)
"""Where the plot runs, in percent of the chart's width (names left of it, ties right)."""


def _bounds(result: CouncilResult, z: float) -> tuple[float, float]:
    """The axis ends: round ticks around every interval, and never narrower than -1 to 1."""
    values = [
        (e.mean_score - z * (e.std_error or 0), e.mean_score + z * (e.std_error or 0))
        for e in result.rankings
        if e.mean_score is not None
    ]
    ticks = nice_ticks(min([v[0] for v in values] + [-1.0]), max([v[1] for v in values] + [1.0]))
    return ticks[0], ticks[-1]


def _ranking_row(e: RankingEntry, i: int, x: Callable[[float], float], z: float) -> list[str]:
    y = FIRST_ROW + i * ROW_H
    name = f"{e.rank}. {e.candidate}"
    parts = [
        ptext(
            PLOT[0] - 2,
            y + 4,
            name if len(name) <= 16 else name[:15] + "…",
            anchor="end",
            font_weight="600",
        )
    ]
    if e.mean_score is None:
        return parts + [ptext(PLOT[0], y + 4, "no votes", fill=MUTED)]
    se = e.std_error or 0.0
    a, b = x(e.mean_score - z * se), x(e.mean_score + z * se)
    parts.append(hline(a, b, y, stroke=INK, stroke_width="2"))
    parts.append(f'<circle cx="{pct(x(e.mean_score))}" cy="{y:.1f}" r="5" fill="#3b528b"/>')
    if e.tied_with_next:
        parts.append(
            at(
                PLOT[1] + 2,
                f'<path d="M0,{y:.1f} H6 V{y + ROW_H:.1f} H0" fill="none" '
                'stroke="#a12a1c" stroke-width="2"/>',
            )
        )
        parts.append(at(PLOT[1] + 2, text(10, y + ROW_H / 2 + 4, "tied", fill="#a12a1c")))
    return parts


def ranking_svg(result: CouncilResult) -> str:
    """Each candidate's normalised mean with its ``tie_z`` interval, on an axis with ticks.

    Tied neighbours are bracketed; the bars are the intervals the tie rule compares.
    """
    rows = result.rankings
    z, coverage = interval_z(result)
    low, high = _bounds(result, z)

    def x(value: float) -> float:
        return PLOT[0] + (value - low) / (high - low) * (PLOT[1] - PLOT[0])

    axis_y = FIRST_ROW + ROW_H * len(rows) - 12
    parts = [vline(x(0), 10, axis_y, stroke=MUTED, stroke_dasharray="3 3")]
    for i, e in enumerate(rows):
        parts += _ranking_row(e, i, x, z)
    parts.append(hline(PLOT[0], PLOT[1], axis_y, stroke=MUTED, class_="axis"))
    for t in nice_ticks(low, high):
        parts.append(vline(x(t), axis_y, axis_y + 5, stroke=MUTED, class_="tick"))
        parts.append(
            ptext(
                x(t),
                axis_y + 18,
                f"{t:+g}" if t else "0",
                anchor="middle",
                font_size="11",
                class_="tick-label",
            )
        )
    parts.append(
        ptext(
            (PLOT[0] + PLOT[1]) / 2,
            axis_y + 36,
            f"mean z-score across reviewers; bar: {coverage} interval",
            anchor="middle",
            font_size="11",
            fill=MUTED,
            class_="axis-label",
        )
    )
    return fluid_svg(
        axis_y + 44,
        "".join(parts),
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
    head = [*RANKING_HEAD, "first places", "tied with next", "vote coverage"]
    rows = [
        [
            *ranking_cells(e, esc(e.candidate)),
            str(e.first_places),
            "yes" if e.tied_with_next else "",
            # The field follows how many of the possible votes were cast, not how sure the
            # council is of the rank: a last place with every vote is "high" coverage.
            esc(e.confidence) + (" · failed safety gate" if e.safety_failed else ""),
        ]
        for e in result.rankings
    ]
    _, coverage = interval_z(result)
    return section(
        "ranking",
        "Ranking",
        f'<div class="figure">{ranking_svg(result)}</div>' + table(head, rows, {2, 3, 4, 5, 6, 7}),
        f"Method: {esc(result.method)}; bars are {coverage} intervals of the normalised mean.",
    )


def council_outcome(result: CouncilResult) -> str:
    """``winner``, ``tied`` (the first place is shared) or ``insufficient`` (no ranking)."""
    ranked = [e for e in result.rankings if e.mean_score is not None]
    if result.agreement.reviewers_scored < 2 or not ranked:
        return "insufficient"
    return "tied" if result.rankings[0].tied_with_next else "winner"


def _council_facts(result: CouncilResult) -> str:
    a = result.agreement
    top = result.rankings[0] if result.rankings else None
    facts = [
        ("method", result.method),
        (
            "reviewers scored",
            f"{a.reviewers_scored} of {a.reviewers_scored + a.reviewers_unscored}",
        ),
        (
            "alpha (overall scores)",
            fmt(a.alpha) if a.alpha is None else f"{fmt(a.alpha)} · {band(a.alpha)}",
        ),
    ]
    if top is not None and top.mean_score is not None:
        facts.append((f"{top.candidate}: raw mean", f"{fmt(top.raw_mean, 2)} / 10"))
        facts.append(
            (f"{top.candidate}: first places", f"{top.first_places} of {a.reviewers_scored}")
        )
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts)
    return f'<dl class="facts">{items}</dl>'


def _verdict(result: CouncilResult) -> str:
    outcome = council_outcome(result)
    gated = (
        f"<p>Failed the safety gate: {esc(', '.join(result.safety_failed))}.</p>"
        if result.safety_failed
        else ""
    )
    return (
        f'<section id="verdict" class="verdict outcome-{outcome}" data-outcome="{outcome}">'
        '<p class="kicker">Council verdict</p>'
        f"<h1>{esc(result.interpretation)}</h1>"
        f'<p class="topic">on <q>{esc(result.question)}</q></p>'
        f"{gated}{_council_facts(result)}</section>"
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


def _length_reading(figure: BiasFigure) -> str:
    """What the length correlation says: nothing, or which way answers' length pulls."""
    if figure.low is None or figure.high is None:
        return figure.note or ""
    if figure.low <= 0 <= figure.high:
        return "no evidence of a length preference"
    return "longer answers scored higher" if figure.low > 0 else "shorter answers scored higher"


def bias_rows(bias: CouncilBias) -> list[list[str]]:
    """One row per check: what, figure, 95 % interval, n, what it says (plain text)."""

    def interval(f: BiasFigure, digits: int) -> str:
        if f.low is None or f.high is None:
            return "-"
        return f"[{f.low:+.{digits}f}, {f.high:+.{digits}f}]"

    length = bias.length
    rows = [
        [
            "length vs raw mean, r",
            fmt(length.value, 2, signed=True),
            interval(length, 2),
            str(length.n),
            _length_reading(length),
        ]
    ]
    for r in bias.reviewers:
        f = r.offset
        reading = r.leaning or (f.note or "")
        if r.leaning in ("harsh", "generous"):
            reading = (
                f"{r.leaning}: scores {'below' if r.leaning == 'harsh' else 'above'} the others"
            )
        rows.append(
            [
                f"{r.reviewer if r.model == r.reviewer else f'{r.reviewer} ({r.model})'}"
                " offset, points",
                fmt(f.value, 2, signed=True),
                interval(f, 2),
                str(f.n),
                reading,
            ]
        )
    return rows


BIAS_HEAD = ["check", "figure", "95% interval", "n", "reading"]
BIAS_NOTE = (
    "Length: Pearson r of each candidate's length (characters) with its raw mean, Fisher "
    "interval, across candidates. Offset: a reviewer's overall score minus the other "
    "reviewers' mean on the same answers, t interval. The z-normalised ranking removes a "
    "reviewer's offset; raw means and Borda do not (ADR-010). Position bias needs many "
    "runs: see debate audit."
)


def _bias_section(result: CouncilResult) -> str:
    if result.bias is None:
        return ""
    return section(
        "bias",
        "Bias checks",
        table(BIAS_HEAD, [[esc(c) for c in row] for row in bias_rows(result.bias)], {1, 2, 3})
        + f'<p class="note">{esc(BIAS_NOTE)}</p>',
        "Does answer length or a harsh or generous reviewer move the scores?",
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

    verdict = _verdict(result)
    sections = [
        verdict,
        _ranking_section(result),
        _agreement_section(result),
        _bias_section(result),
        _reviews_section(result),
        _candidates_section(result),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
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
    if result.bias is not None:
        rows = [[cell(c) for c in row] for row in bias_rows(result.bias)]
        lines += ["", "## Bias checks", "", md_table(BIAS_HEAD, rows)]
        lines += ["", BIAS_NOTE, ""]
    for r in result.reviews:
        if r.self_votes_excluded:
            lines.append(
                f"- self-vote excluded: {cell(r.reviewer)} on {', '.join(r.self_votes_excluded)}"
            )
        if r.status == "unscored":
            lines.append(f"- reviewer {cell(r.reviewer)} unscored: {r.reason}")
    return "\n".join(lines) + "\n"
