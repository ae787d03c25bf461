"""Rendering by result type, and writing both reports atomically."""

from __future__ import annotations

from functools import singledispatch
from pathlib import Path

from debate._faces import deferred
from debate.records import CouncilResult, DebateResult
from debate.storage import write_json_atomic


@singledispatch
def render_html(result: object) -> str:
    """The HTML report of a result: one self-contained page.

    Args:
        result: A debate or council result.

    Returns:
        The page, ``<!DOCTYPE html>`` to ``</html>``.

    Raises:
        TypeError: No renderer is registered for the type of ``result``.
    """
    raise TypeError(f"no HTML report for a {type(result).__name__}; give a DebateResult")


@singledispatch
def render_markdown(result: object) -> str:
    """The Markdown report of a result: the HTML report's content as text and tables.

    Args:
        result: A debate or council result.

    Returns:
        The Markdown text.

    Raises:
        TypeError: No renderer is registered for the type of ``result``.
    """
    raise TypeError(f"no Markdown report for a {type(result).__name__}; give a DebateResult")


# Each renderer is imported when first used: registering them must not import the panel's
# decision and numpy before a command's first model call.
render_html.register(DebateResult, deferred("debate.report._html", "render_debate_html"))
render_markdown.register(
    DebateResult, deferred("debate.report._markdown", "render_debate_markdown")
)
render_html.register(CouncilResult, deferred("debate.report._council", "render_council_html"))
render_markdown.register(
    CouncilResult, deferred("debate.report._council", "render_council_markdown")
)


def write_report(result: object, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into ``out_dir``, each atomically.

    Both are rendered before either is written, so a rendering error leaves the folder as
    it was; each file is written to a temporary file and renamed over the old one.

    Args:
        result: The result to report on.
        out_dir: The folder (created if needed).

    Returns:
        The paths of ``report.md`` and ``report.html``.
    """
    markdown, page = render_markdown(result), render_html(result)
    out = Path(out_dir)
    return (
        write_json_atomic(out / "report.md", markdown),
        write_json_atomic(out / "report.html", page),
    )
