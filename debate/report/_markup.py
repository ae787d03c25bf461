"""Small HTML helpers shared by the report's sections."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape


def esc(value: object) -> str:
    """Escape any text for HTML (debater and judge text included)."""
    return escape(str(value), quote=True)


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
