"""What a debate needs after its model calls: imported ahead, where that pays.

``debate run`` imports them in a thread while it waits for its first replies
(:mod:`debate._cli.preload`); a batch of several processes imports them once before it
forks (:mod:`debate.batch._processes`), so that no copy imports them again.
"""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger(__name__)

AFTER_CALLS: tuple[tuple[str, str | None], ...] = (
    ("numpy", None),
    ("debate.panel", "conclude_batch"),
    ("debate.panel", "doubt_features"),
    ("debate.panel", "PolicyRule"),
    ("numpy.random", None),
    ("numpy.ma", None),
    ("debate.report", "charts"),
    ("debate.report", "md_table"),
    ("debate.report", "deliberation_lines"),
)
"""Modules, or faces and a name whose module the face imports on first use, that the decision
and the reports import, numpy first: the judging's decision (its bootstrap draws numpy.random,
a quantile numpy.ma), the report's HTML and Markdown."""


HTTP_CLIENT: tuple[tuple[str, str | None], ...] = (("aiohttp", None),)
"""What a model call imports at its first request: aiohttp, with its TLS contexts. A process
that forks copies to make calls imports it once before (the batch's processes, the warm
process of ``DEBATE_WARM``)."""


def import_after_calls(extra: tuple[tuple[str, str | None], ...] = ()) -> None:
    """Import :data:`AFTER_CALLS` and ``extra``, in order; the first that fails ends it."""
    for module, name in (*AFTER_CALLS, *extra):
        try:
            face = importlib.import_module(module)
            if name is not None:
                getattr(face, name)
        except Exception:  # noqa: BLE001 - the command's own import reports it where needed
            log.debug("importing %s ahead of use failed", module, exc_info=True)
            return
