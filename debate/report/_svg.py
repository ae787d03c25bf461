"""Hand-written inline SVG charts: no plotting library, no script, no external reference.

Every text that reaches a chart passes through :func:`html.escape`; the ``<svg>`` elements
carry no ``xmlns`` (inline SVG in HTML5 does not need one), so the report holds no URL.
"""

from __future__ import annotations

import functools
import math

from debate.report._markup import escape
from debate.report._view import Heatmap, HeatRow
from debate.stats import UNDEFINED, fmt

BAND_INK = {
    "unacceptable": "#a12a1c",
    "low": "#9a5a00",
    "moderate": "#7a6a00",
    "high": "#2e6b22",
    UNDEFINED: "#666666",
}
INK = "#1f2933"
MUTED = "#66707a"
# Viridis at five stops: perceptually even, readable in grey, and never white or grey, so
# a hatched grey row can only mean "missing".
VIRIDIS = ((0x44, 0x01, 0x54), (0x3B, 0x52, 0x8B), (0x21, 0x91, 0x8C), (0x5E, 0xC9, 0x62))
VIRIDIS_END = (0xFD, 0xE7, 0x25)
STOPS = (*VIRIDIS, VIRIDIS_END)
HATCH_ID = "hatch-missing"


def text(x: float, y: float, content: str, *, anchor: str = "start", **attrs: str) -> str:
    """An SVG ``<text>``, content escaped."""
    # ``class_`` stands for ``class``; other underscores are SVG's hyphens (font_size).
    extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{escape(v)}"' for k, v in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{escape(content)}</text>'


def svg(width: float, height: float, body: str, label: str, cls: str = "chart") -> str:
    """Wrap chart elements in an ``<svg>`` with an accessible label."""
    return (
        f'<svg class="{cls}" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="{escape(label)}" '
        # Presentation attributes, so that a chart shown alone (in a notebook) looks the same.
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif" '
        f'font-size="12" fill="{INK}">'
        f"<title>{escape(label)}</title>{body}</svg>"
    )


def colour(fraction: float) -> str:
    """Viridis colour of a value in [0, 1] (clamped)."""
    f = min(1.0, max(0.0, fraction)) * (len(STOPS) - 1)
    i = min(int(f), len(STOPS) - 2)
    t = f - i
    (r0, g0, b0), (r1, g1, b1) = STOPS[i], STOPS[i + 1]
    r, g, b = round(r0 + (r1 - r0) * t), round(g0 + (g1 - g0) * t), round(b0 + (b1 - b0) * t)
    return f"#{r:02x}{g:02x}{b:02x}"


def _ink_on(fraction: float) -> str:
    # Viridis is dark below about 0.55 and light above: white text on the dark half.
    return "#ffffff" if fraction < 0.55 else INK


def _heat_cells(row: HeatRow, y: float, x0: float, cell: float, heat: Heatmap) -> list[str]:
    assert row.values is not None
    parts = []
    span = heat.high - heat.low
    for arg_id, value, i in zip(heat.ids, row.values, range(len(heat.ids)), strict=True):
        x = x0 + i * cell
        tip = f"{row.judge} on {arg_id}: {fmt(value)}"
        attrs = f'data-judge="{escape(row.judge)}" data-arg="{escape(arg_id)}"'
        if not math.isfinite(value):
            parts.append(
                f'<rect class="cell missing" {attrs} data-value="missing" x="{x:.1f}" y="{y}" '
                f'width="{cell - 2:.1f}" height="34" fill="url(#{HATCH_ID})">'
                f"<title>{escape(tip)}</title></rect>"
            )
            continue
        f = (value - heat.low) / span if span > 0 else 0.5
        parts.append(
            f'<rect class="cell" {attrs} data-value="{value:.3f}" x="{x:.1f}" y="{y}" '
            f'width="{cell - 2:.1f}" height="34" fill="{colour(f)}">'
            f"<title>{escape(tip)}</title></rect>"
        )
        parts.append(
            text(x + (cell - 2) / 2, y + 22, f"{value:.2f}", anchor="middle", fill=_ink_on(f))
        )
    return parts


def _short(label: str, limit: int) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


@functools.cache
def _gradient() -> str:
    """The colour bar's stops: the same in every heatmap, so worked out once."""
    return "".join(
        f'<stop offset="{i / 10:.1f}" stop-color="{colour(i / 10)}"/>' for i in range(11)
    )


def _colour_bar(y: float, x0: float, heat: Heatmap) -> list[str]:
    stops = _gradient()
    if heat.calibration == "minmax":
        low_text, high_text = "0 = the judge's weakest argument", "1 = its strongest"
    else:
        low_text, high_text = f"{heat.low:+.1f} (z-score within judge)", f"{heat.high:+.1f}"
    return [
        f'<defs><linearGradient id="heat-scale">{stops}</linearGradient></defs>',
        f'<rect x="{x0}" y="{y}" width="200" height="12" fill="url(#heat-scale)"/>',
        text(x0, y + 26, low_text, font_size="11"),
        text(x0 + 200, y + 26, high_text, anchor="end", font_size="11")
        if heat.calibration != "minmax"
        else text(x0 + 206, y + 10, high_text, font_size="11"),
        f'<rect x="{x0 + 330}" y="{y}" width="28" height="12" fill="url(#{HATCH_ID})" '
        f'stroke="{MUTED}"/>',
        text(x0 + 364, y + 10, "missing (unscored judge), never 0", font_size="11"),
    ]


def _judge_label(row: HeatRow) -> str:
    return _short(f"{row.judge} ({row.role})" if row.role != row.judge else row.judge, 32)


def heatmap_svg(heat: Heatmap) -> str:
    """Judges x arguments heatmap of calibrated scores; unscored judges hatched, not zero."""
    top, row_h = 30.0, 38.0
    names = [_judge_label(row) for row in heat.rows]
    # About 7.5 px a character of 12 px bold: the names column is as wide as its longest name.
    label_width = max(90.0, 20.0 + 7.5 * max([0, *(len(n) for n in names)]))
    cell = max(50.0, min(88.0, 690.0 / max(1, len(heat.ids))))
    width = max(label_width + cell * len(heat.ids) + 16, 560.0)
    height = top + row_h * len(heat.rows) + 52
    parts = [
        f'<defs><pattern id="{HATCH_ID}" width="8" height="8" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="8" height="8" fill="#e4e6e8"/>'
        '<line x1="0" y1="0" x2="0" y2="8" stroke="#9aa0a6" stroke-width="3"/></pattern></defs>'
    ]
    for i, arg_id in enumerate(heat.ids):
        parts.append(
            text(label_width + i * cell + (cell - 2) / 2, top - 10, arg_id, anchor="middle")
        )
    for r, row in enumerate(heat.rows):
        y = top + r * row_h
        parts.append(text(label_width - 10, y + 22, names[r], anchor="end", font_weight="600"))
        if row.values is None:
            span = cell * len(heat.ids) - 2
            box = min(span, 560.0)
            reason = row.missing or "missing"
            parts.append(
                f'<g class="row missing" data-judge="{escape(row.judge)}" data-missing="true">'
                f'<rect x="{label_width}" y="{y}" width="{span:.1f}" height="34" '
                f'fill="url(#{HATCH_ID})" stroke="#9aa0a6"><title>{escape(reason)}</title></rect>'
                + f'<rect x="{label_width + span / 2 - box / 2 + 4:.1f}" y="{y + 8}" '
                f'width="{box - 8:.1f}" height="18" rx="3" fill="#ffffff" '
                'fill-opacity="0.9"/>'
                + text(
                    label_width + span / 2,
                    y + 21,
                    _short(reason, int(box / 6.6)),
                    anchor="middle",
                    font_style="italic",
                )
                + "</g>"
            )
            continue
        parts.append(f'<g class="row" data-judge="{escape(row.judge)}" data-missing="false">')
        parts += _heat_cells(row, y, label_width, cell, heat)
        parts.append("</g>")
    parts += _colour_bar(top + row_h * len(heat.rows) + 14, 8.0, heat)
    label = f"Calibrated scores ({heat.calibration}) of each judge for each argument"
    return svg(width, height, "".join(parts), label, cls="chart heatmap")
