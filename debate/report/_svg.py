"""Hand-written inline SVG charts: no plotting library, no script, no external reference.

Every text that reaches a chart passes through :func:`html.escape`; the ``<svg>`` elements
carry no ``xmlns`` (inline SVG in HTML5 does not need one), so the report holds no URL.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from debate.report._view import Heatmap, HeatRow
from debate.stats import ALPHA_BANDS, BAND_BOUNDS, UNDEFINED, band, fmt, fmt_interval

BAND_FILL = {
    "unacceptable": "#f6c9c4",
    "low": "#fbe0b5",
    "moderate": "#fff1a8",
    "high": "#cde8c5",
}
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
    stops = [*VIRIDIS, VIRIDIS_END]
    f = min(1.0, max(0.0, fraction)) * (len(stops) - 1)
    i = min(int(f), len(stops) - 2)
    t = f - i
    rgb = [round(a + (b - a) * t) for a, b in zip(stops[i], stops[i + 1], strict=True)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _ink_on(fraction: float) -> str:
    # Viridis is dark below about 0.55 and light above: white text on the dark half.
    return "#ffffff" if fraction < 0.55 else INK


def _alpha_floor(values: Sequence[float | None]) -> float:
    """Where an alpha scale starts: 0, or a tenth below the lowest negative value."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return min([0.0, *(math.floor((v - 0.05) * 10) / 10 for v in finite)])


def _band_spans(x: Callable[[float], float], low: float) -> list[tuple[str, float, float]]:
    """Each band's drawn extent on a scale from ``low`` to 1 (empty ones left out)."""
    spans = [(name, x(max(lo, low)), x(min(hi, 1.0))) for name, lo, hi in ALPHA_BANDS]
    return [(name, a, b) for name, a, b in spans if b > a]


def _alpha_ticks(low: float) -> list[float]:
    """The tick values of an alpha scale: its ends, zero and every band edge."""
    return sorted({low, 0.0, *BAND_BOUNDS, 1.0})


def _tick(x: float, y: float, label: str) -> list[str]:
    """A short tick below an axis at ``y``, with its label under it."""
    return [
        f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 5}" stroke="{MUTED}"/>',
        text(x, y + 17, label, anchor="middle", font_size="11"),
    ]


def _scale_bands(
    x: Callable[[float], float], low: float, top: float, bar: float, defined: bool
) -> list[str]:
    """The band strip of an agreement scale, greyed out when the value is undefined."""
    parts = []
    for band_name, a, b in _band_spans(x, low):
        parts.append(
            f'<rect class="band band-{band_name}" x="{a:.1f}" y="{top}" width="{b - a:.1f}" '
            f'height="{bar}" fill="{BAND_FILL[band_name]}"'
            + ("" if defined else ' fill-opacity="0.35"')
            + "/>"
        )
        if b - a > 64:
            parts.append(
                text((a + b) / 2, top + 16, band_name, anchor="middle", font_size="11", fill=MUTED)
            )
    return parts


def _scale_marker(name: str, value: float, vx: float, top: float, bar: float) -> list[str]:
    """The value's marker and its label, kept inside the scale."""
    left, right = 24.0, 936.0
    label = f"{name} = {fmt(value)} ({band(value)})"
    half = len(label) * 3.8 + 6  # about half the label's width at 12px
    lx = min(max(vx, left + half), right - half)
    return [
        f'<line class="marker" x1="{vx:.1f}" y1="{top - 2}" x2="{vx:.1f}" '
        f'y2="{top + bar + 2}" stroke="{INK}" stroke-width="3"/>'
        f'<path d="M{vx - 7:.1f},{top - 12} L{vx + 7:.1f},{top - 12} L{vx:.1f},{top - 3} Z" '
        f'fill="{INK}"/>',
        text(lx, top - 16, label, anchor="middle", font_weight="600", fill=BAND_INK[band(value)]),
    ]


def _scale_undefined(name: str, top: float, bar: float) -> list[str]:
    """In place of a marker: the word ``undefined`` over the greyed bands."""
    left, right = 24.0, 936.0
    mid = (left + right) / 2
    return [
        f'<rect x="{mid - 60:.1f}" y="{top + 2}" width="120" height="{bar - 4}" rx="4" '
        'fill="#ffffff"/>',
        text(
            mid,
            top + 18,
            UNDEFINED,
            anchor="middle",
            font_weight="700",
            font_size="15",
            fill=BAND_INK[UNDEFINED],
            class_="undefined",
        ),
        text(left, top - 14, f"{name} = {UNDEFINED}", font_weight="600"),
    ]


def agreement_scale(name: str, value: float | None, threshold: float) -> str:
    """A coefficient on a scale marked with the interpretation bands and the threshold.

    The scale runs from 0 (or lower, when the value is negative) to 1; an undefined value
    greys the bands out and says "undefined" instead of drawing a marker.
    """
    width, left, right, top, bar = 960.0, 24.0, 936.0, 30.0, 26.0
    low = _alpha_floor([value])

    def x(v: float) -> float:
        return left + (v - low) / (1.0 - low) * (right - left)

    parts = _scale_bands(x, low, top, bar, value is not None and math.isfinite(value))
    for t in _alpha_ticks(low):
        parts += _tick(x(t), top + bar, f"{t:.2f}")
    tx = x(threshold)
    parts.append(
        f'<line class="threshold" x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" '
        f'y2="{top + bar + 4}" stroke="{INK}" stroke-width="1.5" stroke-dasharray="4 3"/>'
    )
    parts.append(
        text(left, top + bar + 34, f"dashed: decision threshold {threshold:.2f}", font_size="11")
    )
    if value is not None and math.isfinite(value):
        parts += _scale_marker(name, value, x(value), top, bar)
    else:
        parts += _scale_undefined(name, top, bar)
    label = f"{name}: {fmt(value)} ({band(value)}); threshold {threshold:.2f}"
    return svg(width, top + bar + 44, "".join(parts), label)


def _margin_axis(x: Callable[[float], float], reach: float, axis: float, gap: float) -> list[str]:
    """The sides' labels, the too-close zone, the axis, zero and the ticks."""
    left, right = 24.0, 936.0
    parts = [
        text(left, 16, "◀ CON stronger", font_weight="600", fill="#8a3b12"),
        text(right, 16, "PRO stronger ▶", anchor="end", font_weight="600", fill="#1c4f8a"),
        f'<rect class="gap-zone" x="{x(-gap):.1f}" y="{axis - 16}" '
        f'width="{max(x(gap) - x(-gap), 2):.1f}" height="32" fill="#fbe0b5"/>',
        f'<line x1="{left}" y1="{axis}" x2="{right}" y2="{axis}" stroke="{MUTED}"/>',
        f'<line x1="{x(0):.1f}" y1="{axis - 22}" x2="{x(0):.1f}" y2="{axis + 22}" '
        f'stroke="{MUTED}" stroke-dasharray="3 3"/>',
    ]
    for t in (-reach, -reach / 2, 0.0, reach / 2, reach):
        parts += _tick(x(t), axis + 22, f"{t:+.2f}")
    return parts


def _margin_mark(x: Callable[[float], float], margin: float | None, axis: float) -> list[str]:
    """The margin's dot and label, or "margin undefined"."""
    left, right = 24.0, 936.0
    if margin is None or not math.isfinite(margin):
        return [
            text(
                (left + right) / 2,
                axis - 24,
                "margin undefined",
                anchor="middle",
                font_weight="700",
                fill=BAND_INK[UNDEFINED],
                class_="undefined",
            )
        ]
    mx = x(margin)
    lx = min(max(mx, left + 56), right - 56)
    return [
        f'<circle class="margin" cx="{mx:.1f}" cy="{axis}" r="7" fill="{INK}"/>',
        text(
            lx, axis - 24, f"margin {fmt(margin, signed=True)}", anchor="middle", font_weight="600"
        ),
    ]


def margin_scale(
    margin: float | None,
    interval: tuple[float, float] | None,
    gap: float,
    calibration: str,
) -> str:
    """The PRO-CON margin with its 95% interval on a scale centred on zero."""
    width, left, right, axis = 960.0, 24.0, 936.0, 62.0
    values: list[float | None] = [margin, *(interval or ())]
    ends = [abs(v) for v in values if v is not None and math.isfinite(v)]
    reach = math.ceil(max([1.0 if calibration == "minmax" else 2.0, *ends]) * 2) / 2

    def x(v: float) -> float:
        return left + (v + reach) / (2 * reach) * (right - left)

    parts = _margin_axis(x, reach, axis, gap)
    if interval is not None:
        a, b = x(interval[0]), x(interval[1])
        parts.append(
            f'<g class="interval" stroke="{INK}" stroke-width="2.5">'
            f'<line x1="{a:.1f}" y1="{axis}" x2="{b:.1f}" y2="{axis}"/>'
            f'<line x1="{a:.1f}" y1="{axis - 9}" x2="{a:.1f}" y2="{axis + 9}"/>'
            f'<line x1="{b:.1f}" y1="{axis - 9}" x2="{b:.1f}" y2="{axis + 9}"/></g>'
        )
    parts += _margin_mark(x, margin, axis)
    legend = f"shaded: within ±{gap:g} is too close to call"
    if interval is not None:
        legend += "; bar: 95% interval"
    parts.append(text(left, axis + 58, legend, font_size="11", fill=MUTED))
    ci = fmt_interval(interval, "[{low}, {high}]")
    label = f"PRO minus CON margin {fmt(margin, signed=True)}, 95% interval {ci}"
    return svg(width, axis + 66, "".join(parts), label)


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


def _colour_bar(y: float, x0: float, heat: Heatmap) -> list[str]:
    stops = "".join(
        f'<stop offset="{i / 10:.1f}" stop-color="{colour(i / 10)}"/>' for i in range(11)
    )
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


def heatmap_svg(heat: Heatmap) -> str:
    """Judges x arguments heatmap of calibrated scores; unscored judges hatched, not zero."""
    label_width, top, row_h = 250.0, 30.0, 38.0
    cell = max(50.0, min(116.0, 690.0 / max(1, len(heat.ids))))
    width = max(label_width + cell * len(heat.ids) + 16, label_width + 560)
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
        name = _short(f"{row.judge} ({row.role})" if row.role != row.judge else row.judge, 32)
        parts.append(text(label_width - 10, y + 22, name, anchor="end", font_weight="600"))
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
    parts += _colour_bar(top + row_h * len(heat.rows) + 14, label_width, heat)
    label = f"Calibrated scores ({heat.calibration}) of each judge for each argument"
    return svg(width, height, "".join(parts), label, cls="chart heatmap")


def _dimension_row(
    name: str, value: float | None, y: float, x: Callable[[float], float], right: float
) -> list[str]:
    """One dimension's bar from zero, coloured by its band, with its value and band."""
    if value is None or not math.isfinite(value):
        return [
            text(x(0) + 6, y + 19, UNDEFINED, font_style="italic", fill=MUTED, class_="undefined")
        ]
    a, b = sorted((x(0), x(value)))
    ink = BAND_INK[band(value)]
    parts = [
        f'<rect class="bar" data-dimension="{escape(name)}" x="{a:.1f}" y="{y + 6}" '
        f'width="{max(b - a, 1.5):.1f}" height="18" fill="{ink}"/>'
    ]
    # Labels go right of the bar, or right of zero for a negative one (the names are
    # on the left), or inside a bar that reaches the right edge.
    tx, anchor, fill = b + 6, "start", ink
    if value >= 0 and tx > right - 120:
        tx, anchor, fill = b - 6, "end", "#ffffff"
    parts.append(text(tx, y + 19, f"{fmt(value)} {band(value)}", anchor=anchor, fill=fill))
    return parts


def dimension_bars(alphas: Sequence[tuple[str, float | None]], threshold: float) -> str:
    """One horizontal bar per rubric dimension, coloured by its interpretation band."""
    label_width, left_pad, row_h, top = 150.0, 8.0, 32.0, 8.0
    right = 920.0
    low = _alpha_floor([v for _, v in alphas])
    x0 = label_width + left_pad

    def x(v: float) -> float:
        return x0 + (v - low) / (1.0 - low) * (right - x0)

    bottom = top + row_h * len(alphas)
    parts = [
        f'<rect x="{a:.1f}" y="{top}" width="{b - a:.1f}" height="{bottom - top:.1f}" '
        f'fill="{BAND_FILL[band_name]}" fill-opacity="0.45"/>'
        for band_name, a, b in _band_spans(x, low)
    ]
    for i, (name, value) in enumerate(alphas):
        y = top + i * row_h
        parts.append(text(label_width, y + 19, name, anchor="end", font_weight="600"))
        parts += _dimension_row(name, value, y, x, right)
    parts.append(
        f'<line x1="{x(0):.1f}" y1="{top - 2}" x2="{x(0):.1f}" y2="{bottom + 2}" stroke="{MUTED}"/>'
    )
    tx = x(threshold)
    parts.append(
        f'<line x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{bottom + 4}" stroke="{INK}" '
        'stroke-dasharray="4 3"/>'
    )
    for t in _alpha_ticks(low):
        parts.append(text(x(t), bottom + 18, f"{t:.2f}", anchor="middle", font_size="11"))
    label = "Krippendorff's alpha per rubric dimension: " + ", ".join(
        f"{n} {fmt(v)}" for n, v in alphas
    )
    return svg(right + 16, bottom + 26, "".join(parts), label)
