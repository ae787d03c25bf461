"""The validity report's reliability diagrams: is a panel's ``p_agree`` a probability?

One small chart per panel: the labelled units binned by ``p_agree`` (x) against the share
on which people's majority agreed with the panel's lead (y). On the diagonal, ``p_agree``
means what it says. Each dot's area and the bar strip under the chart give the bin's
units, so a bin of three units is not read like one of three hundred. The caption carries
the expected calibration error with its interval, and says "uncalibrated score" where the
panel had no labels to calibrate on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from debate.records import Calibration
from debate.report._markup import esc
from debate.report._risk_plot import PANEL_ROLE
from debate.report._svg import INK, MUTED, svg, text
from debate.stats import Bin

WIDTH, HEIGHT = 300.0, 340.0
LEFT, RIGHT, TOP, BOTTOM = 50.0, 290.0, 12.0, 238.0
STRIP_TOP, STRIP_BOTTOM = 250.0, 290.0
"""The bar strip of units per bin, under the plot, on the same x axis."""
MAX_RADIUS, MIN_RADIUS = 11.0, 2.5
"""A dot's radius: its area grows with the bin's units, the largest bin at the maximum."""

Scale = Callable[[float], float]


def _filled(bins: list[Bin]) -> list[Bin]:
    return [b for b in bins if b.n and b.confidence is not None and b.accuracy is not None]


def ranges(calibrations: Sequence[Calibration]) -> tuple[float, float]:
    """Where x and y start, shared by every diagram so they read side by side.

    Both axes end at 1 and the diagonal runs across them. x starts at 0.5 when every
    unit's ``p_agree`` is at least 0.5 (a lead's usually is), else at the lowest filled
    bin; y starts there too, or lower when a bin's agreement is lower.
    """
    filled = [b for c in calibrations for b in _filled(c.bins)]
    x_low = min([0.5, *(math.floor(b.low * 10 + 1e-9) / 10 for b in filled)])
    lowest = min((b.accuracy for b in filled if b.accuracy is not None), default=x_low)
    return x_low, min(x_low, math.floor(lowest * 10) / 10)


def _ticks(low: float) -> list[float]:
    """Tenths from ``low`` to 1, every other one when the axis spans more than 0.7."""
    step = 1 if low >= 0.3 - 1e-9 else 2
    first = math.ceil(low * 10 - 1e-9)
    return [t / 10 for t in range(first, 11) if (10 - t) % step == 0]


def _axes(x_low: float, y_low: float, x: Scale, y: Scale, calibrated: bool) -> list[str]:
    parts = [
        f'<rect x="{LEFT}" y="{TOP}" width="{RIGHT - LEFT}" height="{BOTTOM - TOP}" '
        'fill="#fbfcfd" stroke="#d9dee3"/>'
    ]
    for t in _ticks(x_low):
        parts.append(text(x(t), STRIP_BOTTOM + 14, f"{t:.1f}", anchor="middle", font_size="10"))
    for t in _ticks(y_low):
        parts.append(
            f'<line x1="{LEFT}" y1="{y(t):.1f}" x2="{RIGHT}" y2="{y(t):.1f}" stroke="#e4e7ea"/>'
        )
        parts.append(text(LEFT - 5, y(t) + 3, f"{t:.0%}", anchor="end", font_size="10"))
    what = "p_agree, calibrated" if calibrated else "uncalibrated score (p_agree)"
    parts.append(text((LEFT + RIGHT) / 2, STRIP_BOTTOM + 32, what, anchor="middle", fill=MUTED))
    mid = (TOP + BOTTOM) / 2
    parts.append(
        f'<text x="12" y="{mid:.1f}" text-anchor="middle" fill="{MUTED}" font-size="11" '
        f'transform="rotate(-90 12 {mid:.1f})">share people agreed with</text>'
    )
    # The diagonal: where the share agreed equals p_agree.
    lo = max(x_low, y_low)
    parts.append(
        f'<line class="diagonal" x1="{x(lo):.1f}" y1="{y(lo):.1f}" x2="{x(1):.1f}" '
        f'y2="{y(1):.1f}" stroke="{MUTED}" stroke-dasharray="4 3"/>'
    )
    return parts


def _strip(bins: list[Bin], x: Scale, ink: str) -> list[str]:
    """Units per bin as bars under the plot, the count written over each bar."""
    filled = _filled(bins)
    top = max((b.n for b in filled), default=1)
    parts = [
        f'<line x1="{LEFT}" y1="{STRIP_BOTTOM}" x2="{RIGHT}" y2="{STRIP_BOTTOM}" stroke="{MUTED}"/>'
    ]
    for b in filled:
        height = (STRIP_BOTTOM - STRIP_TOP - 10) * b.n / top
        x0, x1 = x(b.low) + 1, x(b.high) - 1
        parts.append(
            f'<rect class="bin-count" data-n="{b.n}" x="{x0:.1f}" y="{STRIP_BOTTOM - height:.1f}" '
            f'width="{max(1.0, x1 - x0):.1f}" height="{height:.1f}" fill="{ink}" '
            f'fill-opacity="0.35"><title>{b.n} units with p_agree in [{b.low:.1f}, '
            f"{b.high:.1f})</title></rect>"
        )
        parts.append(
            text((x0 + x1) / 2, STRIP_BOTTOM - height - 2, str(b.n), anchor="middle",
                 font_size="9", fill=MUTED)
        )  # fmt: skip
    return parts


def _dots(bins: list[Bin], x: Scale, y: Scale, ink: str) -> list[str]:
    filled = _filled(bins)
    top = max((b.n for b in filled), default=1)
    line = " ".join(f"{x(b.confidence or 0):.1f},{y(b.accuracy or 0):.1f}" for b in filled)
    parts = [f'<polyline points="{line}" fill="none" stroke="{ink}" stroke-width="1.5"/>']
    for b in filled:
        assert b.confidence is not None and b.accuracy is not None
        r = max(MIN_RADIUS, MAX_RADIUS * math.sqrt(b.n / top))
        tip = (
            f"p_agree {b.low:.1f}-{b.high:.1f}: {b.n} units, mean p_agree {b.confidence:.3f}, "
            f"people agreed on {b.accuracy:.3f}"
        )
        parts.append(
            f'<circle class="bin" data-n="{b.n}" cx="{x(b.confidence):.1f}" '
            f'cy="{y(b.accuracy):.1f}" r="{r:.1f}" fill="{ink}" fill-opacity="0.8" '
            f'stroke="#fff"><title>{esc(tip)}</title></circle>'
        )
    return parts


def reliability_svg(
    calibration: Calibration, ink: str = INK, axes: tuple[float, float] | None = None
) -> str:
    """One panel's reliability diagram: dots per bin of ``p_agree``, the diagonal, counts.

    ``axes`` gives where x and y start (see :func:`ranges`); by default, this panel's own.
    """
    x_low, y_low = axes or ranges([calibration])

    def x(p: float) -> float:
        return LEFT + (min(1.0, max(x_low, p)) - x_low) / (1 - x_low) * (RIGHT - LEFT)

    def y(a: float) -> float:
        return BOTTOM - (min(1.0, max(y_low, a)) - y_low) / (1 - y_low) * (BOTTOM - TOP)

    parts = _axes(x_low, y_low, x, y, calibration.calibrated)
    parts += _strip(calibration.bins, x, ink) + _dots(calibration.bins, x, y, ink)
    label = f"Reliability of {calibration.method}: share people agreed with, by p_agree"
    return svg(WIDTH, HEIGHT, "".join(parts), label, cls="chart reliability")


def reliability_caption(calibration: Calibration) -> str:
    """The diagram's caption in plain text: the ECE and its interval, and what p_agree is."""
    ece = f"ECE {calibration.ece.text()} over {calibration.units:,} labelled units"
    if calibration.calibrated:
        return f"{ece}; p_agree calibrated on the other folds."
    return (
        f"{ece}; uncalibrated score: p_agree here is the sigmoid of the weighted evidence, "
        "which orders the units but is not a probability until calibrated against people."
    )


def _role(method: str) -> str:
    role = PANEL_ROLE.get(method)
    return f" ({role})" if role else ""


def reliability_figures(calibrations: Sequence[Calibration], inks: dict[str, str]) -> str:
    """Every panel's diagram with its caption, side by side on the same axes."""
    axes = ranges(calibrations)
    return "".join(
        f'<figure class="reliability" data-method="{esc(c.method)}">'
        f"{reliability_svg(c, inks.get(c.method, INK), axes)}"
        f"<figcaption><strong>{esc(c.method)}</strong>{esc(_role(c.method))}: "
        f"{esc(reliability_caption(c))}"
        "</figcaption></figure>"
        for c in calibrations
    )
