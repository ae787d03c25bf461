"""The validity report as a page and as Markdown: does the panel beat its best judge?

One self-contained HTML page (the debate report's CSS, hand-written inline SVG, no script,
no URL) with every method's figures and intervals, the risk-coverage plot, split detection,
alpha among judges beside alpha among people, and the notes on what the numbers do not show.
The Markdown carries the same tables, for the README to quote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from debate.records._validity import (
    EqualCoverage,
    Estimate,
    MethodRow,
    RiskCoverage,
    RiskPoint,
    SplitDetection,
    ValidityReport,
)
from debate.report._gauges import nice_ticks
from debate.report._html import CSS
from debate.report._markdown import cell, md_table
from debate.report._markup import esc, key_values, section, table
from debate.report._svg import INK, MUTED, svg, text
from debate.stats import band, fmt

LINE_INK = ("#1c4f8a", "#2e7d32", "#8a3b12", "#6a3d9a", "#00838f", "#ad1457")
"""Gated panels' lines, in order; the best single judge is drawn dashed in :data:`INK`."""
MAX_PLOTTED = 400
"""Points of a curve drawn at most (evenly thinned; the ends are always kept)."""
WIDTH, HEIGHT = 760.0, 400.0
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 58.0, 560.0, 18.0, 340.0


def _method_head(report: ValidityReport) -> list[str]:
    head = ["method", "kind", "n", "accuracy", "coverage", "declared accuracy"]
    if report.kind == "scores":
        head += ["Spearman", "Kendall", "pairwise accuracy"]
    return head


def _figure(estimate: Estimate | None) -> str:
    return "—" if estimate is None else estimate.text()


def _figure_html(estimate: Estimate | None) -> str:
    """The value, and its interval under it in small type (keeps wide tables on a page)."""
    if estimate is None or estimate.value is None or estimate.low is None:
        return esc(_figure(estimate))
    assert estimate.high is not None
    return (
        f"{estimate.value:.3f}"
        f'<span class="judge-meta">[{estimate.low:.3f}, {estimate.high:.3f}]</span>'
    )


def _method_cells(
    row: MethodRow, report: ValidityReport, name: str, figure: Callable[[Estimate | None], str]
) -> list[str]:
    kind: str = "best judge" if row.name == report.best_judge else row.kind
    kind += " (gated)" if row.gated else ""
    cells = [
        name,
        kind,
        str(row.accuracy.n),
        figure(row.accuracy),
        figure(row.coverage),
        figure(row.declared_accuracy),
    ]
    if report.kind == "scores":
        cells += [figure(row.spearman), figure(row.kendall), figure(row.pairwise_accuracy)]
    return cells


EQUAL_HEAD = [
    "gated panel",
    "coverage",
    "panel accuracy",
    "best judge",
    "judge at equal coverage",
    "panel − judge",
]
SPLIT_HEAD = ["gated panel", "flagged", "people split", "precision", "recall", "base rate", "lift"]


def _equal_cells(c: EqualCoverage, name: Callable[[str], str]) -> list[str]:
    return [
        name(c.panel),
        "undefined" if c.coverage is None else f"{c.coverage:.1%}",
        c.panel_accuracy.text(),
        name(c.judge),
        c.judge_accuracy.text(),
        c.difference.text(),
    ]


def _split_cells(s: SplitDetection, name: Callable[[str], str]) -> list[str]:
    return [
        name(s.method),
        f"{s.flagged} of {s.units}",
        str(s.people_split),
        s.precision.text(),
        s.recall.text(),
        s.base_rate.text(),
        s.lift.text(),
    ]


# --- the risk-coverage plot ---------------------------------------------------------------


def _thin(points: Sequence[RiskPoint]) -> list[RiskPoint]:
    if len(points) <= MAX_PLOTTED:
        return list(points)
    step = (len(points) - 1) / (MAX_PLOTTED - 1)
    return [points[round(i * step)] for i in range(MAX_PLOTTED)]


def _y_range(report: ValidityReport) -> tuple[float, float]:
    values = [p.accuracy for rc in report.risk_coverage for p in rc.curve]
    values += [c.judge_accuracy.value for c in report.equal_coverage if c.judge_accuracy.value]
    low = min(values, default=0.5)
    ticks = nice_ticks(max(0.0, low - 0.02), 1.0)
    return ticks[0], 1.0


def _axes(y_low: float, x: Callable[[float], float], y: Callable[[float], float]) -> list[str]:
    parts = [
        f'<rect x="{PLOT_LEFT}" y="{PLOT_TOP}" width="{PLOT_RIGHT - PLOT_LEFT}" '
        f'height="{PLOT_BOTTOM - PLOT_TOP}" fill="#fbfcfd" stroke="#d9dee3"/>'
    ]
    for t in nice_ticks(0.0, 1.0):
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{PLOT_BOTTOM}" x2="{x(t):.1f}" y2="{PLOT_BOTTOM + 5}" '
            f'stroke="{MUTED}"/>'
        )
        parts.append(text(x(t), PLOT_BOTTOM + 18, f"{t:.0%}", anchor="middle", font_size="11"))
    for t in nice_ticks(y_low, 1.0):
        parts.append(
            f'<line x1="{PLOT_LEFT}" y1="{y(t):.1f}" x2="{PLOT_RIGHT}" y2="{y(t):.1f}" '
            'stroke="#e4e7ea"/>'
        )
        parts.append(text(PLOT_LEFT - 6, y(t) + 4, f"{t:.0%}", anchor="end", font_size="11"))
    parts.append(
        text(
            (PLOT_LEFT + PLOT_RIGHT) / 2,
            PLOT_BOTTOM + 38,
            "coverage: share of labelled units given a declared verdict",
            anchor="middle",
            fill=MUTED,
        )
    )
    mid = (PLOT_TOP + PLOT_BOTTOM) / 2
    parts.append(
        f'<text x="14" y="{mid:.1f}" text-anchor="middle" fill="{MUTED}" '
        f'transform="rotate(-90 14 {mid:.1f})">accuracy of those verdicts</text>'
    )
    return parts


def _curve(
    rc: RiskCoverage, ink: str, x: Callable[[float], float], y: Callable[[float], float]
) -> str:
    dash = ' stroke-dasharray="6 4"' if rc.kind == "judge" else ""
    points = " ".join(f"{x(p.coverage):.1f},{y(p.accuracy):.1f}" for p in _thin(rc.curve))
    return (
        f'<polyline class="curve" data-method="{esc(rc.method)}" data-kind="{rc.kind}" '
        f'points="{points}" fill="none" stroke="{ink}" stroke-width="2.2"{dash}>'
        f"<title>{esc(rc.method)}</title></polyline>"
    )


def _markers(
    report: ValidityReport,
    inks: dict[str, str],
    x: Callable[[float], float],
    y: Callable[[float], float],
) -> list[str]:
    """At each gated panel's own coverage: its declared accuracy, and the judge's there."""
    parts = []
    for c in report.equal_coverage:
        if c.coverage is None or c.panel_accuracy.value is None:
            continue
        ink, cx = inks.get(c.panel, INK), x(c.coverage)
        parts.append(
            f'<line x1="{cx:.1f}" y1="{PLOT_TOP}" x2="{cx:.1f}" y2="{PLOT_BOTTOM}" '
            f'stroke="{ink}" stroke-dasharray="2 3" stroke-opacity="0.6"/>'
        )
        tip = f"{c.panel}: {c.panel_accuracy.text()} at coverage {c.coverage:.1%}"
        parts.append(
            f'<circle class="marker" data-method="{esc(c.panel)}" cx="{cx:.1f}" '
            f'cy="{y(c.panel_accuracy.value):.1f}" r="6" fill="{ink}" stroke="#fff" '
            f'stroke-width="1.5"><title>{esc(tip)}</title></circle>'
        )
        if c.judge_accuracy.value is not None:
            tip = f"{c.judge} at equal coverage: {c.judge_accuracy.text()}"
            parts.append(
                f'<circle class="marker judge" cx="{cx:.1f}" cy="{y(c.judge_accuracy.value):.1f}" '
                f'r="5" fill="#fff" stroke="{ink}" stroke-width="2"><title>{esc(tip)}</title>'
                "</circle>"
            )
    return parts


def _legend(report: ValidityReport, inks: dict[str, str]) -> list[str]:
    parts, yy = [], PLOT_TOP + 8.0
    for rc in report.risk_coverage:
        ink = inks.get(rc.method, INK)
        dash = ' stroke-dasharray="6 4"' if rc.kind == "judge" else ""
        parts.append(
            f'<line x1="{PLOT_RIGHT + 18}" y1="{yy}" x2="{PLOT_RIGHT + 46}" y2="{yy}" '
            f'stroke="{ink}" stroke-width="2.5"{dash}/>'
        )
        parts.append(text(PLOT_RIGHT + 52, yy + 4, rc.method[:24]))
        if rc.kind == "judge":  # a judge's name fills the line: its role goes under it
            parts.append(text(PLOT_RIGHT + 52, yy + 18, "best single judge", font_size="11"))
            yy += 14
        yy += 22
    yy += 10
    parts.append(f'<circle cx="{PLOT_RIGHT + 32}" cy="{yy}" r="5" fill="{INK}"/>')
    parts.append(text(PLOT_RIGHT + 52, yy + 4, "panel at its coverage", font_size="11"))
    parts.append(
        f'<circle cx="{PLOT_RIGHT + 32}" cy="{yy + 20}" r="5" fill="#fff" stroke="{INK}" '
        'stroke-width="2"/>'
    )
    parts.append(text(PLOT_RIGHT + 52, yy + 24, "best judge there", font_size="11"))
    return parts


def risk_coverage_svg(report: ValidityReport) -> str:
    """Accuracy against coverage for each gated panel (solid) and the best judge (dashed).

    Each curve runs from the method's most confident declared verdict to all of them; a
    filled dot marks each gated panel at its own coverage and a hollow one the best single
    judge's accuracy at that same coverage.
    """
    y_low, y_high = _y_range(report)

    def x(c: float) -> float:
        return PLOT_LEFT + min(1.0, max(0.0, c)) * (PLOT_RIGHT - PLOT_LEFT)

    def y(a: float) -> float:
        f = (a - y_low) / (y_high - y_low)
        return PLOT_BOTTOM - min(1.0, max(0.0, f)) * (PLOT_BOTTOM - PLOT_TOP)

    panels = [rc.method for rc in report.risk_coverage if rc.kind == "panel"]
    inks = {name: LINE_INK[i % len(LINE_INK)] for i, name in enumerate(panels)}
    parts = _axes(y_low, x, y)
    parts += [_curve(rc, inks.get(rc.method, INK), x, y) for rc in report.risk_coverage]
    parts += _markers(report, inks, x, y) + _legend(report, inks)
    label = "Risk-coverage: accuracy of the most confident declared verdicts against coverage"
    return svg(WIDTH, HEIGHT, "".join(parts), label, cls="chart risk-coverage")


# --- the page -----------------------------------------------------------------------------


def _summary(report: ValidityReport) -> str:
    facts = [
        ("units", f"{report.units:,}"),
        ("labelled by people", f"{report.labelled:,}"),
        ("items", f"{report.items:,}"),
        ("folds", str(report.folds)),
        ("bootstrap", f"{report.bootstrap:,} × seed {report.seed}"),
        ("best judge", report.best_judge or "none"),
    ]
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts)
    what = f"{report.kind}" + (f", dimension {report.dimension}" if report.dimension else "")
    return (
        '<section id="summary" class="verdict outcome-insufficient">'
        '<p class="kicker">Validity against people</p>'
        "<h1>Does the panel beat its best judge?</h1>"
        f'<p class="topic">{esc(report.source)} ({esc(what)})</p>'
        f'<dl class="facts">{items}</dl></section>'
    )


def _methods(report: ValidityReport) -> str:
    rows = [_method_cells(r, report, esc(r.name), _figure_html) for r in report.methods]
    numeric = set(range(2, len(_method_head(report))))
    return section(
        "methods",
        "Every panel and every single judge",
        table(_method_head(report), rows, numeric),
        "Accuracy is against people's majority on the units where people have one (a tie "
        "called against a majority counts wrong); coverage is the share of those units given "
        "a declared verdict; declared accuracy is the accuracy there. Brackets: 95 % "
        "bootstrap intervals over items.",
    )


def _risk(report: ValidityReport) -> str:
    equal = table(EQUAL_HEAD, [_equal_cells(c, esc) for c in report.equal_coverage], {1, 2, 4, 5})
    notes = "".join(
        f'<p class="note">{esc(c.panel)} vs {esc(c.judge)}: {esc(c.note)}</p>'
        for c in report.equal_coverage
        if c.note
    )
    return section(
        "risk-coverage",
        "Risk and coverage: the panel against its best judge",
        f'<div class="figure">{risk_coverage_svg(report)}</div>'
        + "<h3>At equal coverage</h3>"
        + equal
        + notes,
        "A gated panel answers only where its judges agree. To compare it fairly, the best "
        "single judge answers as often, on its own most confident calls.",
    )


def _splits(report: ValidityReport) -> str:
    rows = [_split_cells(s, esc) for s in report.split_detection]
    return section(
        "splits",
        "Do the panel's splits find where people disagree?",
        table(SPLIT_HEAD, rows, {1, 2, 3, 4, 5, 6}),
        "A flag is a too_close or irreconcilable outcome; people split where their majority "
        "holds less than 3/4 of them. Lift is precision over the base rate: 1 is chance.",
    )


def _alpha(value: float | None) -> str:
    return fmt(value) if value is None else f"{fmt(value)} · {band(value)}"


def _agreement(report: ValidityReport) -> str:
    a = report.agreement
    return section(
        "agreement",
        "Alpha among judges beside alpha among people",
        key_values(
            [
                ("alpha among judges", _alpha(a.alpha_judges)),
                ("alpha among people", _alpha(a.alpha_people)),
                ("level", a.level),
            ]
        ),
        "Krippendorff's alpha on the same items. Judges that agree with each other more than "
        "people do are consistent, not necessarily right.",
    )


def _weights(report: ValidityReport) -> str:
    if not report.weights:
        return ""
    judges = sorted({j for folds in report.weights.values() for w in folds for j in w})
    rows = [
        [esc(kind), str(i + 1), *(fmt(w.get(j), 3) if j in w else "—" for j in judges)]
        for kind, folds in report.weights.items()
        for i, w in enumerate(folds)
    ]
    head = ["weighting", "fold", *judges]
    return section(
        "weights",
        "Judge weights per fold",
        table(head, rows, set(range(1, len(head)))),
        "Each fold's units were decided with these weights, learned on the other folds.",
    )


def _notes(report: ValidityReport) -> str:
    items = "".join(f"<li>{esc(n)}</li>" for n in report.notes)
    return section(
        "notes", "What the numbers do and do not show", f'<ul class="reasons">{items}</ul>'
    )


def render_validity_html(report: ValidityReport) -> str:
    """The whole HTML page of a validity report (no script, no external reference)."""
    sections = [
        _summary(report),
        _methods(report),
        _risk(report),
        _splits(report),
        _agreement(report),
        _weights(report),
        _notes(report),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Validity report: {esc(report.source)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(sections)}<footer>debate validity · {esc(report.source)} · "
        f"seed {report.seed}</footer></main></body></html>\n"
    )


# --- Markdown -----------------------------------------------------------------------------


def _points_table(report: ValidityReport) -> list[str]:
    if not report.risk_coverage:
        return []
    head = ["most confident", *(cell(rc.method) for rc in report.risk_coverage)]
    rows = []
    for i in range(10):
        row = [f"{(i + 1) * 10} %"]
        for rc in report.risk_coverage:
            p = rc.points[i] if i < len(rc.points) else None
            row.append("—" if p is None else f"{p.accuracy:.3f} (cov. {p.coverage:.1%})")
        rows.append(row)
    return [
        "",
        "Accuracy of the most confident declared verdicts (coverage):",
        "",
        md_table(head, rows),
    ]


def render_validity_markdown(report: ValidityReport) -> str:
    """The validity report's tables as Markdown (the README quotes them)."""
    what = report.kind + (f", dimension {report.dimension}" if report.dimension else "")
    lines = [
        f"# Validity: {cell(report.source)} ({cell(what)})",
        "",
        f"{report.units:,} units ({report.labelled:,} with a people majority), "
        f"{report.items:,} items, {report.folds} folds, {report.bootstrap:,} bootstrap "
        f"replicates, seed {report.seed}. Best single judge: {cell(report.best_judge or 'none')}.",
        "",
        md_table(
            _method_head(report),
            [_method_cells(r, report, cell(r.name), _figure) for r in report.methods],
        ),
    ]
    if report.equal_coverage:
        lines += ["", "At equal coverage:", ""]
        lines.append(md_table(EQUAL_HEAD, [_equal_cells(c, cell) for c in report.equal_coverage]))
    lines += _points_table(report)
    if report.split_detection:
        lines += ["", "Splits against people's disagreement:", ""]
        lines.append(md_table(SPLIT_HEAD, [_split_cells(s, cell) for s in report.split_detection]))
    a = report.agreement
    lines += [
        "",
        f"Alpha ({cell(a.level)}) among judges {_alpha(a.alpha_judges)}; "
        f"among people {_alpha(a.alpha_people)}.",
        "",
        *(f"- {cell(n)}" for n in report.notes),
    ]
    return "\n".join(lines) + "\n"


SUMMARY_HEAD = [
    "dimension",
    "best judge",
    "Spearman: best judge",
    "Spearman: weighted panel",
    "pairwise: best judge",
    "pairwise: weighted panel",
    "gated panel: coverage",
    "gated panel: accuracy",
    "best judge, same coverage",
    "gated − judge",
]
"""One row per report: the figures that answer "does the panel beat its best judge?"."""


def _short(estimate: Estimate | None) -> str:
    """Value with its interval, two decimals: the summary has ten columns."""
    if estimate is None or estimate.value is None:
        return "—"
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.2f}"
    return f"{estimate.value:.2f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def _summary_cells(report: ValidityReport, panel: str) -> list[str]:
    rows = {r.name: r for r in report.methods}
    judge = rows.get(report.best_judge or "")
    weighted = rows.get(panel)
    gated = next((c for c in report.equal_coverage if c.panel == panel), None)
    return [
        cell(report.dimension or "all"),
        cell(report.best_judge or "none"),
        _short(judge.spearman if judge else None),
        _short(weighted.spearman if weighted else None),
        _short(judge.pairwise_accuracy if judge else None),
        _short(weighted.pairwise_accuracy if weighted else None),
        "—" if gated is None or gated.coverage is None else f"{gated.coverage:.0%}",
        _short(gated.panel_accuracy if gated else None),
        _short(gated.judge_accuracy if gated else None),
        _short(gated.difference if gated else None),
    ]


def render_validity_summary(reports: Sequence[ValidityReport], panel: str = "labels") -> str:
    """One Markdown table over several reports (one per dimension), for ``panel``.

    ``panel`` is the weighting shown (default: label-trained weights, the calibrated
    weighted panel); the per-report tables give every weighting.
    """
    rows = [_summary_cells(r, panel) for r in reports]
    return md_table(SUMMARY_HEAD, rows) + "\n"
