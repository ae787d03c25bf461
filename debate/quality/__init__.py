"""Judge quality of the live panel: bias audit, stability, benchmarking judges against people.

`debate calibrate` runs the panel on items with a known answer and records what each judge
got right (track records and the judgments table, :mod:`debate.judgments`); `debate audit`
and `debate stability` read recorded runs or judge them again.

Every name is imported on first use (PEP 562): the audit and the calibration pull in scipy
and the live panel, which only their commands need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from debate._faces import lazy_names

if TYPE_CHECKING:
    from debate.quality._audit import audit
    from debate.quality._audit_text import format_audit
    from debate.quality._benchmark import calibrate_debates, calibrate_pairwise, read_debate_items
    from debate.quality._stability import (
        council_stability,
        debate_stability,
        rejudge,
        rerank,
        run_seeds,
        stability_text,
    )
    from debate.quality._validity import CalibrationReport, format_report, load_items

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.quality._audit": ("audit",),
    "debate.quality._audit_text": ("format_audit",),
    "debate.quality._benchmark": (
        "calibrate_debates",
        "calibrate_pairwise",
        "read_debate_items",
    ),
    "debate.quality._stability": (
        "council_stability",
        "debate_stability",
        "rejudge",
        "rerank",
        "run_seeds",
        "stability_text",
    ),
    "debate.quality._validity": (
        "CalibrationReport",
        "format_report",
        "load_items",
    ),
}
"""Where each lazily imported name lives; the TYPE_CHECKING imports say the same to mypy."""

__all__ = [
    "CalibrationReport",
    "audit",
    "calibrate_debates",
    "calibrate_pairwise",
    "council_stability",
    "debate_stability",
    "format_audit",
    "format_report",
    "load_items",
    "read_debate_items",
    "rejudge",
    "rerank",
    "run_seeds",
    "stability_text",
]

__getattr__, __dir__ = lazy_names(globals(), _MODULES)
