"""The HTML report of a debate: one self-contained page (inline CSS and SVG, no script).

Every piece of debater and judge text goes through :func:`esc`; the page loads nothing
(no CDN, no font, no image URL), so it opens offline and in a mail attachment alike.
"""

from __future__ import annotations

from collections.abc import Callable

from debate.records import DIMENSIONS, DebateResult
from debate.report import _bands, _gauges, _svg, _tables, _why
from debate.report._deliberation import deliberation_lines
from debate.report._markup import esc, key_values, section
from debate.report._view import (
    Divergence,
    divergence,
    explanation,
    headline,
    heatmap,
    margin_words,
    points,
)
from debate.stats import (
    BAND_TEXT,
    KAPPA_BAND_TEXT,
    UNDEFINED,
    band,
    fmt,
    fmt_interval,
    kappa_band,
)

SECTION_IDS: tuple[str, ...] = (
    "verdict",
    "margin",
    "agreement",
    "heatmap",
    "dimensions",
    "divergence",
    "standings",
    "usage",
    "transcript",
    "run",
)
"""The ``id`` of every section of the HTML report, in page order."""

CSS = """
:root { --ink:#1f2933; --muted:#66707a; --line:#d9dee3; --bg:#f5f7f9; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; }
main { max-width:1040px; margin:0 auto; padding:24px 20px 48px; }
section { background:#fff; border:1px solid var(--line); border-radius:10px;
  padding:18px 22px; margin:0 0 18px; min-width:0; }
h1 { margin:4px 0 6px; font-size:30px; line-height:1.2; overflow-wrap:anywhere; }
h2 { margin:0 0 8px; font-size:19px; }
h3 { margin:14px 0 4px; font-size:15px; }
h4 { margin:10px 0 4px; font-size:14px; }
p { margin:6px 0; }
.lead, .note, .muted { color:var(--muted); }
.lead { margin-bottom:10px; }
.note { font-size:13px; }
svg.chart { display:block; max-width:100%; margin:8px 0; overflow:visible;
  font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif; fill:var(--ink); }
.figure { overflow-x:auto; max-width:100%; }
.figure svg.chart { max-width:none; }
.verdict { border-width:0 0 0 10px; border-style:solid; }
.verdict .kicker { text-transform:uppercase; letter-spacing:.08em; font-size:12px;
  font-weight:700; margin:0; }
.outcome-winner { border-color:#2e7d32; background:#eef7ee; }
.outcome-too_close, .outcome-tied { border-color:#c77700; background:#fff6e6; }
.outcome-irreconcilable { border-color:#b3261e; background:#fdeeee; }
.outcome-insufficient { border-color:#6b7280; background:#f1f2f4; }
.topic { font-size:16px; overflow-wrap:anywhere; }
.reasons { margin:4px 0 8px 0; padding-left:22px; }
.why { display:grid; grid-template-columns:repeat(auto-fit,minmax(280px,1fr)); gap:4px 28px; }
.why-part { min-width:0; }
.deciding { margin:4px 0; padding-left:22px; }
.deciding li { margin:0 0 6px; overflow-wrap:anywhere; }
blockquote.finding { margin:6px 0; padding:4px 12px; border-left:3px solid rgba(0,0,0,.18);
  background:rgba(255,255,255,.55); overflow-wrap:anywhere; }
blockquote.finding p { margin:0; font-style:italic; }
blockquote.finding cite { font-size:12px; color:var(--muted); font-style:normal; }
.recommendation { border-top:1px solid rgba(0,0,0,.08); padding-top:8px; margin-top:10px; }
.facts { display:grid; grid-template-columns:repeat(auto-fill,minmax(150px,1fr));
  gap:10px 24px; margin:12px 0 4px; }
.facts div { min-width:0; }
.facts dt { font-size:12px; color:var(--muted); text-transform:uppercase; letter-spacing:.05em; }
.facts dd { margin:0; font-size:18px; font-weight:600; }
table { border-collapse:collapse; width:100%; margin:8px 0; font-size:14px; }
th, td { border-bottom:1px solid var(--line); padding:6px 8px; text-align:left;
  vertical-align:top; }
th { background:#f0f3f6; font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.scroll { overflow-x:auto; max-width:100%; }
.scroll table { width:auto; min-width:60%; }
table.kv { width:100%; max-width:640px; }
table.kv th { width:55%; }
table.standings { width:100%; min-width:0; }
table.standings td, table.standings th { padding:5px 6px; }
.judge-meta { display:block; font-weight:400; font-size:12px; color:var(--muted); }
table.divergence { width:100%; }
.claim { display:block; font-size:13px; color:var(--muted); }
.undefined { color:var(--muted); font-style:italic; }
.missing { color:#555; font-style:italic;
  background:repeating-linear-gradient(45deg,#eceef0 0 6px,#dfe2e5 6px 12px); }
.split { color:#b3261e; font-weight:700; }
.track { position:relative; display:inline-block; width:9em; max-width:100%; height:12px;
  background:#eef0f2; border-radius:2px; vertical-align:middle; }
.vbar { position:absolute; left:0; top:0; height:12px; background:#b3261e; border-radius:2px; }
.tmark { position:absolute; top:-3px; width:0; height:18px; border-left:2px dashed #1f2933; }
.vbar.calm { background:#8a96a3; }
.st { display:inline-block; padding:1px 6px; border-radius:4px; font-size:12px;
  font-weight:600; line-height:1.35; }
.st-UPHELD { background:#cde8c5; color:#1e5317; }
.st-PARTIALLY_UPHELD { background:#fff1a8; color:#5f5200; }
.st-REFUTED { background:#f6c9c4; color:#7f1d14; }
.st-UNCERTAIN, .st-other { background:#e4e6e8; color:#3b4148; }
details { margin:6px 0; }
summary { cursor:pointer; font-weight:600; }
details > summary h2 { display:inline; }
.arg { border-left:4px solid var(--line); padding:4px 12px; margin:10px 0;
  overflow-wrap:anywhere; }
.arg.PRO { border-color:#1c4f8a; }
.arg.CON { border-color:#8a3b12; }
.arg .id { font-weight:700; }
.label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
pre.raw { white-space:pre-wrap; word-break:break-word; background:#f0f3f6; padding:8px;
  border-radius:6px; font-size:13px; }
footer { color:var(--muted); font-size:12px; text-align:center; }
@media (max-width:600px) {
  body { font-size:14px; }
  main { padding:10px 8px 32px; }
  section { padding:14px 12px; margin-bottom:12px; }
  h1 { font-size:24px; }
  .facts dd { font-size:16px; }
  .facts { grid-template-columns:repeat(auto-fill,minmax(130px,1fr)); }
  table { font-size:13px; }
  th, td { padding:5px 6px; }
  .band-name { display:none; }
  .track { width:4.5em; }
  svg .value { font-size:12px; }
}
@media print {
  body { background:#fff; }
  main { max-width:none; padding:0; }
  section { break-inside:avoid; }
  .scroll, .figure { overflow:visible; }
}
"""


def charts(result: DebateResult) -> dict[str, str]:
    """The report's charts as inline SVG markup, by name (for notebooks and other pages).

    Args:
        result: A debate result.

    Returns:
        ``points``, ``margin``, ``alpha``, ``kappa``, ``heatmap`` and ``dimensions``: each an
        ``<svg>`` element with no script and no external reference, ready for
        ``IPython.display.HTML``. All but the heatmap are as wide as their box.
    """
    vote, agreement, thresholds = result.vote, result.agreement, result.decision.thresholds
    by_dim = agreement.alpha_by_dimension
    names = [d for d in DIMENSIONS if d in by_dim] + [d for d in by_dim if d not in DIMENSIONS]
    return {
        "points": _gauges.points_scale(vote.pro_points, vote.con_points),
        "margin": _gauges.margin_scale(
            vote.margin, vote.margin_ci, thresholds.gap, vote.calibration, vote.confidence
        ),
        "alpha": _gauges.agreement_scale("alpha", agreement.alpha, thresholds.alpha),
        "kappa": _gauges.agreement_scale("kappa", agreement.kappa, thresholds.kappa, _bands.KAPPA),
        "heatmap": _svg.heatmap_svg(heatmap(result)),
        "dimensions": _gauges.dimension_bars([(n, by_dim[n]) for n in names], thresholds.alpha),
    }


def _with_band(value: float | None, name_of: Callable[[float | None], str] = band) -> str:
    name = name_of(value)
    return name if name == UNDEFINED else f"{fmt(value)} · {name}"


def _facts(result: DebateResult) -> str:
    agreement, vote = result.agreement, result.vote
    total = agreement.judges_scored + agreement.judges_unscored
    facts = [
        ("PRO mean", points(vote.pro_points)),
        ("CON mean", points(vote.con_points)),
        ("PRO − CON", points(vote.margin_points, signed=True)),
        ("calibrated margin", fmt(vote.margin, signed=True)),
        ("alpha (scores)", _with_band(agreement.alpha)),
        ("kappa (standings)", _with_band(agreement.kappa, kappa_band)),
        ("judges scored", f"{agreement.judges_scored} of {total}"),
    ]
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts)
    return f'<dl class="facts">{items}</dl>'


def _deciding(result: DebateResult) -> str:
    pulls = _why.deciding(result)
    if not pulls:
        return ""
    leader = result.decision.winner
    title = (
        f"Arguments that decided it for {leader}"
        if leader
        else "Arguments that moved the margin most"
    )
    items = "".join(
        f'<li data-arg="{esc(p.argument)}"><strong>{esc(p.argument)}</strong> '
        f"<q>{esc(p.claim)}</q><br>"
        f'<span class="muted">{esc(_why.pull_words(p))}</span></li>'
        for p in pulls
    )
    return f'<div class="why-part"><h4>{esc(title)}</h4><ol class="deciding">{items}</ol></div>'


def _findings(result: DebateResult) -> str:
    found = _why.findings(result)
    if not found:
        return ""
    quotes = "".join(
        f'<blockquote class="finding" data-judge="{esc(judge)}"><p>{esc(text)}</p>'
        f"<cite>{esc(judge)}</cite></blockquote>"
        for judge, text in found
    )
    return f'<div class="why-part"><h4>In the judges\' words</h4>{quotes}</div>'


def _causes(result: DebateResult) -> str:
    causes = _why.split_causes(result)
    if not causes:
        return ""
    items = "".join(f"<li>{esc(c)}</li>" for c in causes)
    return (
        '<div class="why-part causes"><h4>Where the split comes from</h4>'
        f'<ul class="reasons">{items}</ul></div>'
    )


def _verdict(result: DebateResult) -> str:
    decision = result.decision
    reasons = "".join(f"<li>{esc(r)}</li>" for r in decision.reasons)
    parts = _causes(result) + _deciding(result) + _findings(result)
    return (
        f'<section id="verdict" class="verdict outcome-{esc(decision.outcome)}" '
        f'data-outcome="{esc(decision.outcome)}">'
        '<p class="kicker">Verdict</p>'
        f"<h1>{esc(headline(result))}</h1>"
        f'<p class="topic">on <q>{esc(result.topic)}</q></p>'
        f'<p class="explain">{esc(explanation(result))}</p>'
        f"{_facts(result)}"
        f'<h3>Why</h3><ul class="reasons">{reasons}</ul>'
        f'<div class="why">{parts}</div>'
        f'<p class="recommendation"><strong>What to do:</strong> '
        f"{esc(decision.recommendation)}</p>{_deliberation(result)}</section>"
    )


def _deliberation(result: DebateResult) -> str:
    """How deliberation moved the judges ("" without it)."""
    lines = deliberation_lines(result)
    if not lines:
        return ""
    head, *rest = lines
    items = "".join(f"<li>{esc(r.removeprefix('  - '))}</li>" for r in rest)
    return f'<div class="deliberation"><p><strong>{esc(head)}</strong></p><ul>{items}</ul></div>'


def _margin(result: DebateResult, figures: dict[str, str]) -> str:
    vote, gap = result.vote, result.decision.thresholds.gap
    level = f"{vote.confidence:.0%}"
    rows = [
        ("PRO mean, points (1–10)", points(vote.pro_points)),
        ("CON mean, points (1–10)", points(vote.con_points)),
        ("PRO − CON, points", points(vote.margin_points, signed=True)),
        (f"{level} interval, points", fmt_interval(vote.margin_points_ci, digits=2)),
        ("PRO mean (calibrated)", fmt(vote.pro)),
        ("CON mean (calibrated)", fmt(vote.con)),
        ("margin PRO − CON (calibrated)", fmt(vote.margin, signed=True)),
        (f"{level} interval (calibrated)", fmt_interval(vote.margin_ci)),
        ("too close below", f"±{gap:g} (calibrated)"),
        ("calibration", vote.calibration),
        ("topic type", f"{vote.topic_type} (from {vote.topic_source.replace('_', ' ')})"),
    ]
    body = (
        "<h3>In the judges' own points</h3>"
        + figures["points"]
        + "<h3>On calibrated scores (what the verdict is decided on)</h3>"
        + f"<p>{esc(margin_words(result))}</p>{figures['margin']}"
        + key_values(rows)
    )
    return section(
        "margin",
        "Who argued better: the PRO − CON margin",
        body,
        "Each side's mean on the judges' 1–10 scale says how big the difference is. For the "
        "verdict, each judge's scores are calibrated to its own scale (a harsh and a lenient "
        "judge who rank alike count alike), averaged per side with the judges' weights, and "
        "PRO's mean minus CON's is the calibrated margin.",
    )


def _agreement(result: DebateResult, figures: dict[str, str]) -> str:
    agreement = result.agreement
    body = (
        "<h3>Krippendorff's alpha: do the judges give the same arguments the same scores?</h3>"
        + figures["alpha"]
        + f'<p class="note">Alpha\'s bands (Krippendorff): {esc(BAND_TEXT)}.</p>'
        + "<h3>Fleiss' kappa: do the judges give the same standings "
        "(upheld, refuted, ...)?</h3>"
        + figures["kappa"]
        + f'<p class="note">Kappa\'s bands (Landis and Koch): {esc(KAPPA_BAND_TEXT)}.</p>'
        + key_values(
            [
                ("alpha, calibrated scores", _with_band(agreement.alpha)),
                ("alpha, raw 1–10 scores", _with_band(agreement.alpha_raw)),
                ("kappa, standings", _with_band(agreement.kappa, kappa_band)),
                (
                    "judges scored / unscored",
                    f"{agreement.judges_scored} / {agreement.judges_unscored}",
                ),
                ("independent votes", agreement.votes_text()),
            ]
        )
        + (f'<p class="note">{esc(agreement.warning)}</p>' if agreement.warning else "")
    )
    return section(
        "agreement",
        "Do the judges agree?",
        body,
        "1 means the judges agree perfectly, 0 no better than chance; below 0 they "
        "systematically disagree. Each coefficient is read on its own scale, and the dashed "
        "line is the threshold the verdict needs. Undefined means there was too little "
        "variation or too few judges to compute it.",
    )


def _heatmap(result: DebateResult, figures: dict[str, str]) -> str:
    missing = [e for e in result.evaluations if e.status != "scored"]
    note = (
        f"<p>{len(missing)} judge(s) could not score; their rows are hatched, not zero, and "
        "they are left out of every statistic.</p>"
        if missing
        else ""
    )
    return section(
        "heatmap",
        "Each judge's calibrated scores",
        note + f'<div class="figure">{figures["heatmap"]}</div>',
        "One row per judge, one column per argument. Scores are calibrated within each judge "
        f"({result.vote.calibration}), so colours compare a judge's arguments with each other; "
        "rows that look alike mean the judges agree.",
    )


def _dimensions(figures: dict[str, str]) -> str:
    return section(
        "dimensions",
        "Agreement per rubric dimension",
        figures["dimensions"],
        "Alpha on the judges' raw 1–10 scores for each rubric dimension: which kind of "
        "judgement the panel shares, and which it does not.",
    )


def _divergence_row(r: Divergence, threshold: float, top: float) -> str:
    width = 0.0 if r.variance is None else 100 * r.variance / top
    bar = (
        f'<span class="track"><span class="vbar{"" if r.split else " calm"}" '
        f'style="width:{width:.1f}%"></span><span class="tmark" '
        f'style="left:{100 * threshold / top:.1f}%"></span></span>'
    )
    status = '<span class="split">split</span>' if r.split else "agreed"
    return (
        f'<tr data-arg="{esc(r.argument)}"><td><strong>{esc(r.argument)}</strong>'
        f'<span class="claim">{esc(r.claim)}</span></td>'
        f'<td class="num">{esc(fmt(r.variance, 2))}</td><td>{bar}</td><td>{status}</td></tr>'
    )


def _divergence(result: DebateResult) -> str:
    rows = divergence(result)
    threshold = result.decision.thresholds.variance
    top = max([threshold, *(r.variance for r in rows if r.variance is not None)])
    lines = "".join(_divergence_row(r, threshold, top) for r in rows)
    named = result.decision.high_variance_arguments
    lead = (
        f"The judges split on {', '.join(named)}: these arguments decide whether the panel "
        "can agree. Read them yourself first."
        if named
        else f"No argument reached the split threshold ({threshold:g}); the arguments are "
        "sorted by how much the judges disagreed on them."
    )
    table = (
        '<div class="scroll"><table class="divergence"><thead><tr><th>argument</th>'
        f'<th class="num">variance</th><th>bar (dashed: threshold {threshold:g})</th>'
        f"<th>status</th></tr></thead><tbody>{lines}</tbody></table></div>"
    )
    return section(
        "divergence",
        "Arguments that drove the divergence",
        f"<p>{esc(lead)}</p>{table}",
        "Variance across judges of each argument's score after removing each judge's own "
        "offset (1–10 scale).",
    )


def render_debate_html(result: DebateResult) -> str:
    """The whole HTML page of a debate result."""
    figures = charts(result)
    sections = [
        _verdict(result),
        _margin(result, figures),
        _agreement(result, figures),
        _heatmap(result, figures),
        _dimensions(figures),
        _divergence(result),
        _tables.standings_section(result),
        _tables.usage_section(result),
        _tables.transcript_section(result),
        _tables.run_section(result),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Debate report: {esc(result.topic)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(sections)}"
        f"<footer>debate {esc(result.version)} · seed {esc(result.seed)}</footer>"
        "</main></body></html>\n"
    )
