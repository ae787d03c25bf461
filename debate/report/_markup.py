"""Small HTML helpers shared by the report's sections."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""Characters that reorder the text around them (an RLO can make "gpj.exe" read "exe.jpg"),
as the body of a regular expression's character class."""
BIDI_CONTROLS = re.compile(f"[{BIDI}]")
MARKUP = re.compile("[&<>\"']")
"""What :func:`html.escape` replaces (``quote=True``)."""
INERT = {
    True: re.compile(f"[&<>\"'{BIDI}]"),
    False: re.compile(f"[&<>{BIDI}]"),
}
"""What :func:`inert` replaces, by ``quote``: markup characters and bidi controls."""


def visible_controls(text: str) -> str:
    """Show bidirectional control characters as ``[U+202E]`` instead of obeying them."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text)


def escape(text: str) -> str:
    """``html.escape(text)``, skipped for text with nothing to replace.

    Most of a report's strings (numbers, colours, labels) have none; one search costs a
    third of the five replacements, so a page renders faster with the same bytes.
    """
    return text if MARKUP.search(text) is None else html.escape(text)


def inert(text: str, *, quote: bool) -> str:
    """``html.escape(visible_controls(text), quote=quote)``, skipped when nothing needs it.

    HTML's and Markdown's one way to make model text inert; the search first, as in
    :func:`escape`, because most of a report's strings have nothing to replace.
    """
    if INERT[quote].search(text) is None:
        return text
    return html.escape(visible_controls(text), quote=quote)


def esc(value: object) -> str:
    """Escape any text for HTML (debater and judge text included), bidi controls shown."""
    return inert(str(value), quote=True)


def section(sid: str, title: str, body: str, lead: str = "") -> str:
    """A report section with a stable id."""
    intro = f'<p class="lead">{esc(lead)}</p>' if lead else ""
    return f'<section id="{sid}"><h2>{esc(title)}</h2>{intro}{body}</section>'


def key_values(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table of labels and values (both escaped)."""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    """A table whose cells are already markup; ``numeric`` columns are right-aligned."""

    def cls(i: int) -> str:
        return ' class="num"' if i in numeric else ""

    th = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return (
        f'<div class="scroll"><table><thead><tr>{th}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
