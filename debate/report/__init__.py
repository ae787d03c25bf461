"""Reports a person can take in at a glance: ``report.md`` and a self-contained ``report.html``.

``render_html`` and ``render_markdown`` dispatch on the type of the result, so another kind
of result (the council's ranking, say) gets its own renderer with ``register``::

    render_html.register(CouncilResult, render_council_html)

The HTML page is one file with inline CSS and hand-written inline SVG: no script, no CDN,
no URL, so it opens offline. Every piece of model text in it is HTML-escaped. The validity
report of recorded judgments renders through the same entry points, registered by
:mod:`debate.judgments` (the layer above, which owns it).
"""

from __future__ import annotations

from debate.report._deliberation import deliberation_lines
from debate.report._dispatch import render_html, render_markdown, write_report
from debate.report._html import SECTION_IDS, charts
from debate.report._labelling import write_labelling_sheet
from debate.report._reliability import reliability_svg
from debate.report._risk_plot import risk_coverage_svg

__all__ = [
    "SECTION_IDS",
    "charts",
    "deliberation_lines",
    "render_html",
    "render_markdown",
    "reliability_svg",
    "risk_coverage_svg",
    "write_labelling_sheet",
    "write_report",
]
