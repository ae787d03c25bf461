"""Decisions on judgments made elsewhere: the recorded-judgments product.

A judgments table (people's or other tools' scores and verdicts, in the tidy format of
``docs/judgments.md``) is read here, decided with the panel's decision engine and no model
call (``debate decide``), measured against people by cross-fitting (``debate validity``),
and turned into a policy with a stated guarantee and into the validity report. Judges' track
records (the weights they earn against people) live here too. The package sits above the
live panel and the report, whose rules and renderers it reuses, and below the CLI, the batch
and the service that call it.

The validity report's renderers are registered with :func:`debate.report.render_html` and
:func:`debate.report.render_markdown` when this package is imported, and imported at their
first use, as every name here is (PEP 562): ``debate run`` reads track records from here
before its first model call and must not load scipy, the table reader or numpy then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from debate._faces import deferred, lazy_names
from debate.records import ValidityReport
from debate.report import render_html, render_markdown

if TYPE_CHECKING:
    from debate.judgments._correlation import call_error_correlation
    from debate.judgments._decide import (
        Decided,
        Validity,
        Weights,
        decide_judgments,
        load_table,
        validate_judgments,
    )
    from debate.judgments._frame_table import write_frame_csv
    from debate.judgments._policy import choose_policy
    from debate.judgments._report import (
        render_validity_html,
        render_validity_markdown,
        render_validity_summary,
    )
    from debate.judgments._simulate import planted_pairs, planted_scores, planted_verdicts
    from debate.judgments._tables import parse_scale, read_judgment_rows, read_judgments
    from debate.judgments._track import (
        DimensionAgreement,
        ScoreRow,
        TrackRecords,
        dimension_agreement,
    )
    from debate.judgments._writing import table_rows, write_judgments

# A validity report renders through the report's entry points (and ``write_report``).
# (imported on first use, as every name here: reading track records imports no renderer)
render_html.register(ValidityReport, deferred("debate.judgments._report", "render_validity_html"))
render_markdown.register(
    ValidityReport, deferred("debate.judgments._report", "render_validity_markdown")
)

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.judgments._correlation": ("call_error_correlation",),
    "debate.judgments._decide": (
        "Decided",
        "Validity",
        "Weights",
        "decide_judgments",
        "load_table",
        "validate_judgments",
    ),
    "debate.judgments._frame_table": ("write_frame_csv",),
    "debate.judgments._policy": ("choose_policy",),
    "debate.judgments._report": (
        "render_validity_html",
        "render_validity_markdown",
        "render_validity_summary",
    ),
    "debate.judgments._simulate": ("planted_pairs", "planted_scores", "planted_verdicts"),
    "debate.judgments._tables": ("parse_scale", "read_judgment_rows", "read_judgments"),
    "debate.judgments._track": (
        "DimensionAgreement",
        "ScoreRow",
        "TrackRecords",
        "dimension_agreement",
    ),
    "debate.judgments._writing": ("table_rows", "write_judgments"),
}
"""Where each lazily imported name lives; the TYPE_CHECKING imports say the same to mypy."""

__all__ = [
    "Decided",
    "DimensionAgreement",
    "ScoreRow",
    "TrackRecords",
    "Validity",
    "ValidityReport",
    "Weights",
    "call_error_correlation",
    "choose_policy",
    "decide_judgments",
    "dimension_agreement",
    "load_table",
    "parse_scale",
    "planted_pairs",
    "planted_scores",
    "planted_verdicts",
    "read_judgment_rows",
    "read_judgments",
    "render_validity_html",
    "render_validity_markdown",
    "render_validity_summary",
    "table_rows",
    "validate_judgments",
    "write_frame_csv",
    "write_judgments",
]

__getattr__, __dir__ = lazy_names(globals(), _MODULES)
