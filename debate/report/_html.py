"""The HTML report of a debate: one self-contained page (inline CSS and SVG, no script).

Every piece of debater and judge text goes through :func:`esc`; the page loads nothing
(no CDN, no font, no image URL), so it opens offline and in a mail attachment alike.
"""

from __future__ import annotations

from debate.records._result import DebateResult
from debate.records._transcript import DIMENSIONS
from debate.report import _svg, _tables
from debate.report._markup import esc, key_values, section
from debate.report._view import (
    divergence,
    explanation,
    headline,
    heatmap,
    margin_words,
)
from debate.stats import BAND_TEXT, UNDEFINED, band, fmt, fmt_interval

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
  padding:18px 22px; margin:0 0 18px; }
h1 { margin:4px 0 6px; font-size:30px; line-height:1.2; }
h2 { margin:0 0 8px; font-size:19px; }
h3 { margin:14px 0 4px; font-size:15px; }
p { margin:6px 0; }
.lead { color:var(--muted); margin-bottom:10px; }
svg.chart { display:block; max-width:100%; height:auto; margin:8px 0;
  font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif; fill:var(--ink); }
.verdict { border-width:0 0 0 10px; border-style:solid; }
.verdict .kicker { text-transform:uppercase; letter-spacing:.08em; font-size:12px;
  font-weight:700; margin:0; }
.outcome-winner { border-color:#2e7d32; background:#eef7ee; }
.outcome-too_close { border-color:#c77700; background:#fff6e6; }
.outcome-irreconcilable { border-color:#b3261e; background:#fdeeee; }
.outcome-insufficient { border-color:#6b7280; background:#f1f2f4; }
.topic { font-size:16px; }
.reasons { margin:4px 0 8px 0; padding-left:22px; }
.recommendation { border-top:1px solid rgba(0,0,0,.08); padding-top:8px; }
.facts { display:flex; flex-wrap:wrap; gap:10px 28px; margin:12px 0 0; }
.facts div { min-width:120px; }
.facts dt { font-size:12px; color:var(--muted); text-transform:uppercase; letter-spacing:.05em; }
.facts dd { margin:0; font-size:18px; font-weight:600; }
table { border-collapse:collapse; width:100%; margin:8px 0; font-size:14px; }
th, td { border-bottom:1px solid var(--line); padding:6px 8px; text-align:left;
  vertical-align:top; }
th { background:#f0f3f6; font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.scroll { overflow-x:auto; }
table.kv { width:auto; min-width:420px; }
.scroll table { width:auto; min-width:60%; }
.scroll table.standings { width:100%; }
table.kv th { width:260px; }
.undefined { color:var(--muted); font-style:italic; }
.missing { color:#555; font-style:italic;
  background:repeating-linear-gradient(45deg,#eceef0 0 6px,#dfe2e5 6px 12px); }
.split { color:#b3261e; font-weight:700; }
.track { position:relative; display:inline-block; width:160px; height:12px;
  background:#eef0f2; border-radius:2px; vertical-align:middle; }
.vbar { position:absolute; left:0; top:0; height:12px; background:#b3261e; border-radius:2px; }
.tmark { position:absolute; top:-3px; width:0; height:18px; border-left:2px dashed #1f2933; }
.vbar.calm { background:#8a96a3; }
.st { display:inline-block; padding:1px 6px; border-radius:4px; font-size:12px;
  font-weight:600; white-space:nowrap; }
.st-UPHELD { background:#cde8c5; color:#1e5317; }
.st-PARTIALLY_UPHELD { background:#fff1a8; color:#5f5200; }
.st-REFUTED { background:#f6c9c4; color:#7f1d14; }
.st-UNCERTAIN, .st-other { background:#e4e6e8; color:#3b4148; }
details { margin:6px 0; }
summary { cursor:pointer; font-weight:600; }
details > summary h2 { display:inline; }
.arg { border-left:4px solid var(--line); padding:4px 12px; margin:10px 0; }
.arg.PRO { border-color:#1c4f8a; }
.arg.CON { border-color:#8a3b12; }
.arg .id { font-weight:700; }
.label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
pre.raw { white-space:pre-wrap; word-break:break-word; background:#f0f3f6; padding:8px;
  border-radius:6px; font-size:13px; }
footer { color:var(--muted); font-size:12px; text-align:center; }
"""


def charts(result: DebateResult) -> dict[str, str]:
    """The report's charts as inline SVG markup, by name (for notebooks and other pages).

    Args:
        result: A debate result.

    Returns:
        ``margin``, ``alpha``, ``kappa``, ``heatmap`` and ``dimensions``: each an ``<svg>``
        element with no script and no external reference, ready for ``IPython.display.HTML``.
    """
    vote, agreement, thresholds = result.vote, result.agreement, result.decision.thresholds
    by_dim = agreement.alpha_by_dimension
    names = [d for d in DIMENSIONS if d in by_dim] + [d for d in by_dim if d not in DIMENSIONS]
    return {
        "margin": _svg.margin_scale(vote.margin, vote.margin_ci, thresholds.gap, vote.calibration),
        "alpha": _svg.agreement_scale("alpha", agreement.alpha, thresholds.alpha),
        "kappa": _svg.agreement_scale("kappa", agreement.kappa, thresholds.kappa),
        "heatmap": _svg.heatmap_svg(heatmap(result)),
        "dimensions": _svg.dimension_bars([(n, by_dim[n]) for n in names], thresholds.alpha),
    }


def _with_band(value: float | None) -> str:
    name = band(value)
    return name if name == UNDEFINED else f"{fmt(value)} · {name}"


def _verdict(result: DebateResult) -> str:
    decision, agreement, vote = result.decision, result.agreement, result.vote
    reasons = "".join(f"<li>{esc(r)}</li>" for r in decision.reasons)
    total = agreement.judges_scored + agreement.judges_unscored
    facts = [
        ("PRO − CON margin", fmt(vote.margin, signed=True)),
        ("alpha (scores)", _with_band(agreement.alpha)),
        ("kappa (standings)", _with_band(agreement.kappa)),
        ("judges scored", f"{agreement.judges_scored} of {total}"),
    ]
    facts_html = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts)
    return (
        f'<section id="verdict" class="verdict outcome-{esc(decision.outcome)}" '
        f'data-outcome="{esc(decision.outcome)}">'
        '<p class="kicker">Verdict</p>'
        f"<h1>{esc(headline(result))}</h1>"
        f'<p class="topic">on <q>{esc(result.topic)}</q></p>'
        f'<p class="explain">{esc(explanation(result))}</p>'
        f'<h3>Why</h3><ul class="reasons">{reasons}</ul>'
        f'<p class="recommendation"><strong>What to do:</strong> '
        f"{esc(decision.recommendation)}</p>"
        f'<dl class="facts">{facts_html}</dl></section>'
    )


def _margin(result: DebateResult, figures: dict[str, str]) -> str:
    vote, gap = result.vote, result.decision.thresholds.gap
    ci = fmt_interval(vote.margin_ci)
    rows = [
        ("PRO mean (calibrated)", fmt(vote.pro)),
        ("CON mean (calibrated)", fmt(vote.con)),
        ("margin PRO − CON", fmt(vote.margin, signed=True)),
        ("95% interval", ci),
        ("too close below", f"±{gap:g}"),
        ("calibration", vote.calibration),
        ("topic type", f"{vote.topic_type} (from {vote.topic_source.replace('_', ' ')})"),
    ]
    body = f"<p>{esc(margin_words(result))}</p>{figures['margin']}" + key_values(rows)
    return section(
        "margin",
        "Who argued better: the PRO − CON margin",
        body,
        "Each judge's scores are calibrated to its own scale, averaged per side with the "
        "judges' weights, and PRO's mean minus CON's is the margin.",
    )


def _agreement(result: DebateResult, figures: dict[str, str]) -> str:
    agreement = result.agreement
    body = (
        "<h3>Krippendorff's alpha: do the judges give the same arguments the same scores?</h3>"
        + figures["alpha"]
        + "<h3>Fleiss' kappa: do the judges give the same standings "
        "(upheld, refuted, ...)?</h3>"
        + figures["kappa"]
        + key_values(
            [
                ("alpha, calibrated scores", fmt(agreement.alpha)),
                ("alpha, raw 1–10 scores", fmt(agreement.alpha_raw)),
                ("kappa, standings", fmt(agreement.kappa)),
                (
                    "judges scored / unscored",
                    f"{agreement.judges_scored} / {agreement.judges_unscored}",
                ),
            ]
        )
    )
    return section(
        "agreement",
        "Do the judges agree?",
        body,
        "1 means the judges agree perfectly, 0 no better than chance; below 0 they "
        f"systematically disagree. Bands: {BAND_TEXT}. Undefined means there was too little "
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
        note + figures["heatmap"],
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


def _divergence(result: DebateResult) -> str:
    rows = divergence(result)
    threshold = result.decision.thresholds.variance
    top = max([threshold, *(r.variance for r in rows if r.variance is not None)])
    lines = []
    for r in rows:
        width = 0.0 if r.variance is None else 100 * r.variance / top
        bar = (
            f'<span class="track"><span class="vbar{"" if r.split else " calm"}" '
            f'style="width:{width:.1f}%"></span><span class="tmark" '
            f'style="left:{100 * threshold / top:.1f}%"></span></span>'
        )
        status = '<span class="split">split</span>' if r.split else "agreed"
        lines.append(
            f'<tr data-arg="{esc(r.argument)}"><td><strong>{esc(r.argument)}</strong></td>'
            f'<td class="num">{esc(fmt(r.variance, 2))}</td><td>{bar}</td>'
            f"<td>{status}</td><td>{esc(r.claim)}</td></tr>"
        )
    named = result.decision.high_variance_arguments
    lead = (
        f"The judges split on {', '.join(named)}: these arguments decide whether the panel "
        "can agree. Read them yourself first."
        if named
        else f"No argument reached the split threshold ({threshold:g}); the arguments are "
        "sorted by how much the judges disagreed on them."
    )
    table = (
        '<div class="scroll"><table><thead><tr><th>argument</th><th class="num">variance</th>'
        f"<th>bar (dashed: threshold {threshold:g})</th><th>status</th><th>claim</th></tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table></div>"
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
