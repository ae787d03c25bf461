"""Small HTML helpers shared by the report's sections."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters that reorder the text around them (an RLO can make "gpj.exe" read "exe.jpg")."""


def visible_controls(text: str) -> str:
    """Show bidirectional control characters as ``[U+202E]`` instead of obeying them."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text)


def esc(value: object) -> str:
    """Escape any text for HTML (debater and judge text included), bidi controls shown."""
    return escape(visible_controls(str(value)), quote=True)


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
