"""One-dimensional charts that fill their box at any width and keep their text readable.

A chart drawn in a fixed ``viewBox`` shrinks as a whole on a phone: at 420 px a 960-unit
chart draws 12 px text at about 4 px. These charts have no ``viewBox``: every horizontal
position is a percentage of the chart's width and every size is in pixels, so the scale
stretches or narrows with the page while the text stays 11-13 px. A label near an end is
anchored to that end so it never runs off the chart.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from debate.report._bands import ALPHA, Bands
from debate.report._markup import escape
from debate.report._svg import BAND_INK, INK, MUTED
from debate.stats import UNDEFINED, band, fmt, fmt_interval

PASS_INK = "#2e6b22"
FAIL_INK = "#a12a1c"
PRO_INK = "#1c4f8a"
CON_INK = "#8a3b12"
LEFT, RIGHT = 1.5, 98.5
"""Where a scale starts and ends, in percent of the chart's width."""


def pct(value: float) -> str:
    """A horizontal position in percent of the chart's width."""
    return f"{value:.2f}%"


def fluid_svg(height: float, body: str, label: str, cls: str = "chart fluid") -> str:
    """An ``<svg>`` as wide as its box, ``height`` px tall, with an accessible label."""
    return (
        f'<svg class="{cls}" width="100%" height="{height:.0f}" role="img" '
        f'aria-label="{escape(label)}" overflow="visible" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif" '
        f'font-size="12" fill="{INK}"><title>{escape(label)}</title>{body}</svg>'
    )


def at(x: float, inner: str) -> str:
    """Markup drawn in pixels around the point ``x`` percent across (markers, brackets)."""
    return f'<svg x="{pct(x)}" overflow="visible">{inner}</svg>'


def anchor_for(x: float) -> str:
    """``start`` near the left end, ``end`` near the right end, else ``middle``."""
    return "start" if x < 15 else "end" if x > 85 else "middle"


def _attrs(attrs: dict[str, str]) -> str:
    # ``class_`` stands for ``class``; other underscores are SVG's hyphens (font_size).
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{escape(v)}"' for k, v in attrs.items())


def ptext(x: float, y: float, content: str, *, anchor: str = "start", **attrs: str) -> str:
    """A ``<text>`` at ``x`` percent across and ``y`` px down (content escaped)."""
    return (
        f'<text x="{pct(x)}" y="{y:.1f}" text-anchor="{anchor}"{_attrs(attrs)}>'
        f"{escape(content)}</text>"
    )


def vline(x: float, y1: float, y2: float, **attrs: str) -> str:
    """A vertical line at ``x`` percent across."""
    return f'<line x1="{pct(x)}" y1="{y1:.1f}" x2="{pct(x)}" y2="{y2:.1f}"{_attrs(attrs)}/>'


def hline(x1: float, x2: float, y: float, **attrs: str) -> str:
    """A horizontal line from ``x1`` to ``x2`` percent across."""
    return f'<line x1="{pct(x1)}" y1="{y:.1f}" x2="{pct(x2)}" y2="{y:.1f}"{_attrs(attrs)}/>'


def prect(x1: float, x2: float, y: float, height: float, fill: str, cls: str = "") -> str:
    """A rectangle from ``x1`` to ``x2`` percent across, ``height`` px tall."""
    klass = f' class="{cls}"' if cls else ""
    return (
        f'<rect{klass} x="{pct(x1)}" y="{y:.1f}" width="{pct(max(x2 - x1, 0.3))}" '
        f'height="{height:.1f}" fill="{fill}"/>'
    )


def axis(
    x: Callable[[float], float], ticks: Sequence[float], y: float, fmt_tick: Callable[[float], str]
) -> list[str]:
    """A baseline with a short tick and a label under it at each tick value."""
    parts = [hline(LEFT, RIGHT, y, stroke=MUTED)]
    for t in ticks:
        parts.append(vline(x(t), y, y + 5, stroke=MUTED))
        parts.append(ptext(x(t), y + 18, fmt_tick(t), anchor=anchor_for(x(t)), font_size="11"))
    return parts


@functools.lru_cache(maxsize=256)
def axis_markup(low: float, high: float, ticks: tuple[float, ...], y: float, spec: str) -> str:
    """:func:`axis` on ``scale(low, high)`` with labels ``format(t, spec)``, as markup.

    Reports draw the same few axes (1 to 10 points; alpha's and kappa's from 0 or a tenth
    below it): each is worked out once per process instead of once per report.
    """
    return "".join(axis(scale(low, high), ticks, y, lambda t: format(t, spec)))


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values from at or below ``low`` to at or above ``high`` (about ``count``)."""
    span = high - low if high > low else 1.0
    raw = span / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * 0.75)
    first = math.floor(low / step + 1e-9) * step
    last = math.ceil(high / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(round((last - first) / step) + 1)]


def scale(low: float, high: float) -> Callable[[float], float]:
    """Value to percent across, ``low`` at the left end, ``high`` at the right."""

    def x(v: float) -> float:
        return LEFT + (v - low) / (high - low) * (RIGHT - LEFT)

    return x


def _floor(values: Sequence[float | None]) -> float:
    """Where an agreement scale starts: 0, or a tenth below the lowest negative value."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return min([0.0, *(math.floor((v - 0.05) * 10) / 10 for v in finite)])


def _edges(bands: Bands, low: float) -> list[float]:
    """Ticks at 0, 1 and every band edge; the scale's negative end too when not crowded."""
    ticks = {0.0, 1.0, *(lo for _, lo, _ in bands.table if low < lo < 1.0)}
    if low < 0 and -low / (1.0 - low) >= 0.12:  # else its label would run into 0's
        ticks.add(low)
    return sorted(ticks)


def _band_strip(bands: Bands, low: float, top: float) -> tuple[str, ...]:
    """The named bands from ``low`` to 1 (the same for every report on that scale)."""
    return _named_bands(bands.table, tuple(bands.fill.items()), low, top)


@functools.lru_cache(maxsize=64)
def _named_bands(
    table: tuple[tuple[str, float, float], ...],
    fills: tuple[tuple[str, str], ...],
    low: float,
    top: float,
) -> tuple[str, ...]:
    fill = dict(fills)
    parts = []
    for name, a, b in _spans(table, low):
        parts.append(prect(a, b, top, 26, fill[name], f"band band-{name.replace(' ', '-')}"))
        parts.append(
            ptext(
                (a + b) / 2,
                top + 17,
                name,
                anchor="middle",
                font_size="11",
                fill=MUTED,
                class_="band-name",
            )
        )
    return tuple(parts)


def _marker(name: str, value: float, threshold: float, bands: Bands, vx: float) -> list[str]:
    """The value's marker on the strip, and its reading written in full above the strip."""
    passes = value >= threshold
    gate = f"{'meets' if passes else 'below'} the gate {threshold:.2f}"
    label = f"{name} = {fmt(value)} · {bands.name_of(value)} · {gate}"
    return [
        vline(vx, 28, 60, stroke=INK, stroke_width="3", class_="marker"),
        at(vx, f'<path d="M-7,19 L7,19 L0,28 Z" fill="{INK}"/>'),
        ptext(
            LEFT,
            14,
            label,
            font_weight="600",
            font_size="13",
            fill=PASS_INK if passes else FAIL_INK,
            class_="value pass" if passes else "value fail",
        ),
    ]


def agreement_scale(name: str, value: float | None, threshold: float, bands: Bands = ALPHA) -> str:
    """A coefficient on its own interpretation bands, with the decision threshold dashed.

    The marker's label says the band and whether the value meets the threshold, coloured
    by that (green meets, red falls short), so a kappa above its gate never reads as failing.
    """
    defined = value is not None and math.isfinite(value)
    low = _floor([value])
    x = scale(low, 1.0)
    top = 32.0
    parts = list(_band_strip(bands, low, top))
    if not defined:
        parts = [p.replace("<rect ", '<rect fill-opacity="0.35" ', 1) for p in parts]
    parts.append(axis_markup(low, 1.0, tuple(_edges(bands, low)), top + 26, ".2f"))
    tx = x(threshold)
    parts.append(
        vline(
            tx,
            top - 4,
            top + 30,
            class_="threshold",
            stroke=INK,
            stroke_width="1.5",
            stroke_dasharray="4 3",
        )
    )
    legend = f"dashed: decision threshold {threshold:.2f}"
    parts.append(ptext(LEFT, top + 62, legend, font_size="11", fill=MUTED))
    if defined:
        assert value is not None
        parts += _marker(name, value, threshold, bands, x(value))
    else:
        parts += [
            ptext(
                50,
                top + 18,
                UNDEFINED,
                anchor="middle",
                font_weight="700",
                font_size="15",
                fill="#666666",
                class_="undefined",
            ),
            ptext(LEFT, 14, f"{name} = {UNDEFINED}", font_weight="600", font_size="13"),
        ]
    label = f"{name}: {fmt(value)} ({bands.name_of(value)}); threshold {threshold:.2f}"
    return fluid_svg(top + 70, "".join(parts), label)


def _margin_mark(x: Callable[[float], float], margin: float | None, axis_y: float) -> list[str]:
    """The margin's dot and label, or "margin undefined"."""
    if margin is None or not math.isfinite(margin):
        return [
            ptext(
                50,
                axis_y - 24,
                "margin undefined",
                anchor="middle",
                font_weight="700",
                fill="#666666",
                class_="undefined",
            )
        ]
    mx = x(margin)
    return [
        f'<circle class="margin" cx="{pct(mx)}" cy="{axis_y}" r="7" fill="{INK}"/>',
        ptext(
            mx,
            axis_y - 22,
            f"margin {fmt(margin, signed=True)}",
            anchor=anchor_for(mx),
            font_weight="600",
            font_size="13",
        ),
    ]


def margin_scale(
    margin: float | None,
    interval: tuple[float, float] | None,
    gap: float,
    calibration: str,
    confidence: float = 0.95,
) -> str:
    """The calibrated PRO-CON margin with its interval on a scale centred on zero."""
    axis_y = 64.0
    ends = [abs(v) for v in (margin, *(interval or ())) if v is not None and math.isfinite(v)]
    reach = math.ceil(max([1.0 if calibration == "minmax" else 2.0, *ends]) * 2) / 2
    x = scale(-reach, reach)
    parts = [
        ptext(LEFT, 16, "◀ CON stronger", font_weight="600", fill=CON_INK),
        ptext(RIGHT, 16, "PRO stronger ▶", anchor="end", font_weight="600", fill=PRO_INK),
        prect(x(-gap), x(gap), axis_y - 16, 32, "#fbe0b5", "gap-zone"),
        vline(x(0), axis_y - 22, axis_y + 22, stroke=MUTED, stroke_dasharray="3 3"),
        axis_markup(
            -reach, reach, (-reach, -reach / 2, 0.0, reach / 2, reach), axis_y + 22, "+.2f"
        ),
    ]
    level = f"{confidence:.0%}"
    if interval is not None:
        a, b = x(interval[0]), x(interval[1])
        parts.append(
            f'<g class="interval" stroke="{INK}" stroke-width="2.5">'
            + hline(a, b, axis_y)
            + vline(a, axis_y - 9, axis_y + 9)
            + vline(b, axis_y - 9, axis_y + 9)
            + "</g>"
        )
    parts += _margin_mark(x, margin, axis_y)
    legend = f"shaded: within ±{gap:g} is too close to call"
    if interval is not None:
        legend += f"; bar: {level} interval"
    parts.append(ptext(LEFT, axis_y + 62, legend, font_size="11", fill=MUTED))
    ci = fmt_interval(interval, "[{low}, {high}]")
    label = f"PRO minus CON margin {fmt(margin, signed=True)}, {level} interval {ci}"
    return fluid_svg(axis_y + 70, "".join(parts), label)


def points_scale(pro: float | None, con: float | None) -> str:
    """Each side's mean on the judges' own 1-10 scale, and the gap between them in points."""
    x = scale(1.0, 10.0)
    axis_y = 58.0
    parts = [axis_markup(1.0, 10.0, tuple(float(t) for t in range(1, 11)), axis_y, ".0f")]
    if pro is None or con is None or not (math.isfinite(pro) and math.isfinite(con)):
        parts.append(
            ptext(
                50,
                axis_y - 20,
                "no per-side means in points",
                anchor="middle",
                font_weight="700",
                fill="#666666",
                class_="undefined",
            )
        )
        return fluid_svg(axis_y + 28, "".join(parts), "Per-side means in points: undefined")
    a, b = sorted((x(pro), x(con)))
    parts.append(prect(a, b, axis_y - 20, 8, "#d9dee3", "points-gap"))
    for side, value, y, ink in (("PRO", pro, 14.0, PRO_INK), ("CON", con, 30.0, CON_INK)):
        vx = x(value)
        parts.append(
            f'<circle class="side {side}" cx="{pct(vx)}" cy="{axis_y - 16}" r="7" fill="{ink}"/>'
        )
        parts.append(
            ptext(
                vx,
                y,
                f"{side} {value:.1f}",
                anchor=anchor_for(vx),
                font_weight="700",
                font_size="13",
                fill=ink,
            )
        )
    label = (
        f"Mean score in points (1-10): PRO {pro:.1f}, CON {con:.1f}, "
        f"difference {pro - con:+.1f} points"
    )
    return fluid_svg(axis_y + 28, "".join(parts), label)


def _dimension_row(
    name: str, value: float | None, y: float, threshold: float, low: float
) -> list[str]:
    """A dimension's name and reading on a line of its own, its bar on the bands below it."""
    x = scale(low, 1.0)
    defined = value is not None and math.isfinite(value)
    reading = f"{fmt(value)} {band(value)}" if defined else UNDEFINED
    parts = [
        ptext(
            LEFT,
            y + 15,
            f"{name}: {reading}",
            font_weight="600",
            font_size="13",
            class_="" if defined else "undefined",
        )
    ]
    parts.append(_alpha_bands(low, y + 20))
    if defined:
        assert value is not None
        a, b = sorted((x(0), x(value)))
        parts.append(
            prect(a, b, y + 23, 10, BAND_INK[band(value)], "bar").replace(
                "<rect ", f'<rect data-dimension="{escape(name)}" ', 1
            )
        )
    parts.append(
        vline(x(threshold), y + 18, y + 38, stroke=INK, stroke_dasharray="3 2", class_="threshold")
    )
    return parts


@functools.lru_cache(maxsize=256)
def _alpha_bands(low: float, top: float) -> str:
    """Alpha's bands from ``low`` to 1 under a dimension's bar (the same in every report)."""
    spans = _spans(ALPHA.table, low)
    return "".join(prect(a, b, top, 16, ALPHA.fill[name], "band") for name, a, b in spans)


def _spans(table: Sequence[tuple[str, float, float]], low: float) -> list[tuple[str, float, float]]:
    """Each band's name and its ends on ``scale(low, 1)``, for the bands seen from ``low`` to 1."""
    x = scale(low, 1.0)
    ends = [(name, x(max(lo, low)), x(min(hi, 1.0))) for name, lo, hi in table]
    return [(name, a, b) for name, a, b in ends if b > a]


def dimension_bars(alphas: Sequence[tuple[str, float | None]], threshold: float) -> str:
    """One bar per rubric dimension on alpha's bands, its name and value above it."""
    row_h = 44.0
    low = _floor([v for _, v in alphas])
    bottom = row_h * len(alphas)
    parts = []
    for i, (name, value) in enumerate(alphas):
        parts += _dimension_row(name, value, i * row_h, threshold, low)
    parts.append(axis_markup(low, 1.0, tuple(_edges(ALPHA, low)), bottom, ".2f"))
    parts.append(
        ptext(
            LEFT,
            bottom + 36,
            f"dashed: decision threshold {threshold:.2f}",
            font_size="11",
            fill=MUTED,
        )
    )
    label = "Krippendorff's alpha per rubric dimension: " + ", ".join(
        f"{n} {fmt(v)}" for n, v in alphas
    )
    return fluid_svg(bottom + 42, "".join(parts), label)
