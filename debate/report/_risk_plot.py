"""The validity report's risk-coverage plot: every gated panel and every judge on one chart.

Panels are drawn bold and coloured, the best single judge dark and dashed, every other
judge as a thin grey line under them: with 20 judges the grey lines read as a band the
panels must rise above, with 2 as two lines. Only the panels and the best judge get a
legend entry; each grey line names its judge in its tooltip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from debate.records import RiskCoverage, RiskPoint, ValidityReport
from debate.report._gauges import nice_ticks
from debate.report._markup import esc
from debate.report._svg import INK, MUTED, svg, text

PANEL_INK = {"labels": "#0072b2", "equal": "#d55e00", "latent": "#009e73"}
"""Okabe-Ito colours (told apart with colour-blindness too): label-trained blue, equal
orange, latent green."""
SPARE_INK = ("#cc79a7", "#e69f00", "#56b4e9")
"""Colours of any other gated panel, in order."""
PANEL_ROLE = {
    "labels": "label-trained weights",
    "equal": "equal weights",
    "latent": "latent weights",
}
"""What each weighting is, shown beside its name in the legend."""
JUDGE_INK = "#a9b1b9"
"""Every judge but the best: thin grey, drawn under the panels."""
MAX_PLOTTED = 400
"""Points of a curve drawn at most (evenly thinned; the ends are always kept)."""
MIN_CURVE_UNITS = 10
"""A curve starts at its first point over at least this many calls: the accuracy of the
first few calls is 0 or 1 by chance and would stretch the axis for nothing."""
MAX_NAME = 24
"""Characters of a name shown in the legend (the tooltip has the whole name)."""
WIDTH, HEIGHT = 780.0, 400.0
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 58.0, 560.0, 18.0, 340.0

Scale = Callable[[float], float]


def _short(name: str) -> str:
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"


def panel_inks(report: ValidityReport) -> dict[str, str]:
    """The colour of each gated panel's curve (also used by its reliability diagram)."""
    inks: dict[str, str] = {}
    spare = iter(SPARE_INK * (1 + len(report.risk_coverage)))
    for rc in report.risk_coverage:
        if rc.kind == "panel":
            inks[rc.method] = PANEL_INK.get(rc.method) or next(spare)
    return inks


def plotted(rc: RiskCoverage) -> list[RiskPoint]:
    """The points drawn for one curve, thinned, from its first point over enough calls.

    Calls of equal confidence share their run's accuracy (see ``top_weights``), so where the
    kept curve begins with the first run the accuracy is flat from coverage 0 to it: a judge
    without confidence gradation is a flat line at its accuracy, not a lone dot.
    """
    if not rc.curve:
        return []
    start = next((i for i, p in enumerate(rc.curve) if p.n >= MIN_CURVE_UNITS), len(rc.curve) - 1)
    points = rc.curve[start:]
    if start == 0:
        first = points[0]
        points = [first.model_copy(update={"share": 0.0, "coverage": 0.0}), *points]
    return _thin(points)


def _thin(points: Sequence[RiskPoint]) -> list[RiskPoint]:
    if len(points) <= MAX_PLOTTED:
        return list(points)
    step = (len(points) - 1) / (MAX_PLOTTED - 1)
    return [points[round(i * step)] for i in range(MAX_PLOTTED)]


def _gates(report: ValidityReport) -> list[tuple[str, float, float, float | None, str]]:
    """Per gated panel at its own coverage: (panel, coverage, accuracy, judge's, judge)."""
    return [
        (c.panel, c.coverage, c.panel_accuracy.value, c.judge_accuracy.value, c.judge)
        for c in report.equal_coverage
        if c.basis == "gate" and c.coverage is not None and c.panel_accuracy.value is not None
    ]


def _y_low(report: ValidityReport) -> float:
    values = [p.accuracy for rc in report.risk_coverage for p in plotted(rc)]
    for _, _, mine, theirs, _ in _gates(report):
        values += [mine] if theirs is None else [mine, theirs]
    low = min(values, default=0.5)
    return nice_ticks(max(0.0, low - 0.02), 1.0)[0]


def _axes(y_low: float, x: Scale, y: Scale) -> list[str]:
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
            "coverage: share of labelled units given a verdict, most confident first",
            anchor="middle",
            fill=MUTED,
        )
    )
    mid = (PLOT_TOP + PLOT_BOTTOM) / 2
    parts.append(
        f'<text x="14" y="{mid:.1f}" text-anchor="middle" fill="{MUTED}" '
        f'transform="rotate(-90 14 {mid:.1f})">accuracy against people</text>'
    )
    return parts


def _curve(rc: RiskCoverage, style: str, x: Scale, y: Scale, extra: str = "") -> str:
    points = " ".join(f"{x(p.coverage):.1f},{y(p.accuracy):.1f}" for p in plotted(rc))
    end = rc.curve[-1] if rc.curve else None
    tip = rc.method if end is None else f"{rc.method}: {end.accuracy:.3f} at {end.coverage:.1%}"
    return (
        f'<polyline class="curve" data-method="{esc(rc.method)}" data-kind="{rc.kind}"{extra} '
        f'points="{points}" fill="none" {style}><title>{esc(tip)}</title></polyline>'
    )


def _curves(report: ValidityReport, inks: dict[str, str], x: Scale, y: Scale) -> list[str]:
    """Grey judges first, then the best judge, then the panels on top of them all."""
    judges = [rc for rc in report.risk_coverage if rc.kind == "judge"]
    parts = [
        _curve(rc, f'stroke="{JUDGE_INK}" stroke-width="1.1" stroke-opacity="0.9"', x, y)
        for rc in judges
        if rc.method != report.best_judge
    ]
    for rc in judges:
        if rc.method == report.best_judge:
            style = f'stroke="{INK}" stroke-width="2.2" stroke-dasharray="7 4"'
            parts.append(_curve(rc, style, x, y, ' data-best="true"'))
            last = plotted(rc)[-1:]
            parts += [
                f'<circle cx="{x(p.coverage):.1f}" cy="{y(p.accuracy):.1f}" r="3.5" fill="{INK}"/>'
                for p in last
            ]
    # The label-trained panel, the one a user with labels would run, is drawn last (on top).
    panels = sorted(
        (rc for rc in report.risk_coverage if rc.kind == "panel"),
        key=lambda rc: rc.method == "labels",
    )
    parts += [
        _curve(rc, f'stroke="{inks[rc.method]}" stroke-width="3" stroke-linejoin="round"', x, y)
        for rc in panels
    ]
    return parts


def _markers(report: ValidityReport, inks: dict[str, str], x: Scale, y: Scale) -> list[str]:
    """At each gated panel's own coverage: its declared accuracy, and the judge's there."""
    parts = []
    for panel, coverage, mine, theirs, judge in _gates(report):
        ink, cx = inks.get(panel, INK), x(coverage)
        parts.append(
            f'<line x1="{cx:.1f}" y1="{PLOT_TOP}" x2="{cx:.1f}" y2="{PLOT_BOTTOM}" '
            f'stroke="{ink}" stroke-dasharray="2 3" stroke-opacity="0.6"/>'
        )
        tip = f"{panel}, gated: {mine:.3f} on its declared verdicts ({coverage:.1%})"
        parts.append(
            f'<circle class="marker" data-method="{esc(panel)}" cx="{cx:.1f}" '
            f'cy="{y(mine):.1f}" r="6" fill="{ink}" stroke="#fff" stroke-width="1.5">'
            f"<title>{esc(tip)}</title></circle>"
        )
        if theirs is not None:
            tip = f"{judge} at the same coverage: {theirs:.3f}"
            parts.append(
                f'<circle class="marker judge" cx="{cx:.1f}" cy="{y(theirs):.1f}" r="5" '
                f'fill="#fff" stroke="{ink}" stroke-width="2"><title>{esc(tip)}</title></circle>'
            )
    return parts


def _legend_line(yy: float, style: str, label: str, under: str = "") -> list[str]:
    parts = [
        f'<line x1="{PLOT_RIGHT + 18}" y1="{yy}" x2="{PLOT_RIGHT + 46}" y2="{yy}" {style}/>',
        text(PLOT_RIGHT + 52, yy + 4, label),
    ]
    if under:
        parts.append(text(PLOT_RIGHT + 52, yy + 18, under, font_size="11", fill=MUTED))
    return parts


def _legend(report: ValidityReport, inks: dict[str, str]) -> list[str]:
    """Panels and the best judge by name; the other judges as one grey entry."""
    parts, yy = [], PLOT_TOP + 8.0
    for name, ink in inks.items():
        role = PANEL_ROLE.get(name)
        style = f'stroke="{ink}" stroke-width="3"'
        parts += _legend_line(yy, style, _short(name), role or "gated panel")
        yy += 36
    judges = [rc.method for rc in report.risk_coverage if rc.kind == "judge"]
    if report.best_judge in judges:
        style = f'stroke="{INK}" stroke-width="2.2" stroke-dasharray="7 4"'
        parts += _legend_line(yy, style, _short(report.best_judge or ""), "best single judge")
        yy += 36
    others = len(judges) - (report.best_judge in judges)
    if others:
        label = f"{others} other judge" + ("s" if others > 1 else "")
        parts += _legend_line(yy, f'stroke="{JUDGE_INK}" stroke-width="1.5"', label)
        yy += 26
    if _gates(report):
        yy += 8
        parts.append(f'<circle cx="{PLOT_RIGHT + 32}" cy="{yy}" r="5" fill="{INK}"/>')
        parts.append(text(PLOT_RIGHT + 52, yy + 4, "gated panel's verdicts", font_size="11"))
        parts.append(
            f'<circle cx="{PLOT_RIGHT + 32}" cy="{yy + 20}" r="5" fill="#fff" stroke="{INK}" '
            'stroke-width="2"/>'
        )
        parts.append(text(PLOT_RIGHT + 52, yy + 24, "best judge, same coverage", font_size="11"))
    return parts


def risk_coverage_svg(report: ValidityReport) -> str:
    """Accuracy against coverage for every gated panel and every single judge.

    A panel's curve ranks its lead on every labelled unit by ``p_agree`` (abstentions
    included), so it runs to 100 %; a judge's ranks its declared calls by its own
    confidence and ends at the share it declares. A filled dot marks each gated panel's
    declared verdicts at its own coverage and a hollow one the best judge's accuracy there.
    """
    y_low = _y_low(report)

    def x(c: float) -> float:
        return PLOT_LEFT + min(1.0, max(0.0, c)) * (PLOT_RIGHT - PLOT_LEFT)

    def y(a: float) -> float:
        f = (a - y_low) / (1.0 - y_low)
        return PLOT_BOTTOM - min(1.0, max(0.0, f)) * (PLOT_BOTTOM - PLOT_TOP)

    inks = panel_inks(report)
    parts = _axes(y_low, x, y) + _curves(report, inks, x, y)
    parts += _markers(report, inks, x, y) + _legend(report, inks)
    label = "Risk-coverage: accuracy against people of the most confident verdicts, by coverage"
    return svg(WIDTH, HEIGHT, "".join(parts), label, cls="chart risk-coverage")
