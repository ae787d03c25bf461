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

from typing import TYPE_CHECKING

from debate._faces import lazy_names

if TYPE_CHECKING:
    from debate.report._batch import BatchSummaryLine, write_batch_summary
    from debate.report._brief import render_validity_brief
    from debate.report._deliberation import deliberation_lines
    from debate.report._dispatch import render_html, render_markdown, write_report
    from debate.report._guarantee import guarantee_html, guarantee_markdown
    from debate.report._html import CSS, SECTION_IDS, charts
    from debate.report._labelling import write_labelling_sheet
    from debate.report._markdown import cell, md_table
    from debate.report._markup import esc, key_values, section, table
    from debate.report._reliability import reliability_caption, reliability_figures, reliability_svg
    from debate.report._risk_plot import panel_inks, risk_coverage_svg

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.report._batch": (
        "BatchSummaryLine",
        "write_batch_summary",
    ),
    "debate.report._brief": ("render_validity_brief",),
    "debate.report._deliberation": ("deliberation_lines",),
    "debate.report._dispatch": (
        "render_html",
        "render_markdown",
        "write_report",
    ),
    "debate.report._guarantee": (
        "guarantee_html",
        "guarantee_markdown",
    ),
    "debate.report._html": (
        "CSS",
        "SECTION_IDS",
        "charts",
    ),
    "debate.report._labelling": ("write_labelling_sheet",),
    "debate.report._markdown": (
        "cell",
        "md_table",
    ),
    "debate.report._markup": (
        "esc",
        "key_values",
        "section",
        "table",
    ),
    "debate.report._reliability": (
        "reliability_caption",
        "reliability_figures",
        "reliability_svg",
    ),
    "debate.report._risk_plot": (
        "panel_inks",
        "risk_coverage_svg",
    ),
}
"""Where each name lives, imported on first use (PEP 562): registering a renderer or reading
track records does not import the pages' panel and numpy, which a run needs only after its
model calls."""

__getattr__, __dir__ = lazy_names(globals(), _MODULES)

__all__ = [
    "BatchSummaryLine",
    "CSS",
    "SECTION_IDS",
    "cell",
    "charts",
    "deliberation_lines",
    "esc",
    "guarantee_html",
    "guarantee_markdown",
    "key_values",
    "md_table",
    "panel_inks",
    "reliability_caption",
    "reliability_figures",
    "reliability_svg",
    "render_html",
    "render_markdown",
    "render_validity_brief",
    "risk_coverage_svg",
    "section",
    "table",
    "write_batch_summary",
    "write_labelling_sheet",
    "write_report",
]
