"""Council mode: the same panel ranks N candidate answers to one question.

The rules cited across the package as ADR-007, ADR-010, ADR-016 and ADR-017 (Borda and vote
coverage, normalised averaging, the rubric and its accuracy ceiling, order randomisation) are
stated in ``docs/decisions.md``.
"""

from __future__ import annotations

from debate.council._review import check_candidates, escalate_on_tied_top
from debate.council._run import load_candidates, run_council, run_council_sync

__all__ = [
    "check_candidates",
    "escalate_on_tied_top",
    "load_candidates",
    "run_council",
    "run_council_sync",
]
