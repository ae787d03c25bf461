"""The escaping helpers' shortcut for clean text gives the bytes of the full escape."""

from __future__ import annotations

import html

from hypothesis import given
from hypothesis import strategies as st

from debate.report._markdown import text as md_text
from debate.report._markup import esc, escape, visible_controls

SPECIAL = "&<>\"'\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
TEXT = st.text(alphabet=st.sampled_from([*SPECIAL, "a", "Z", "1", " ", "\t", "\n", "é", "🙂"]))


@given(TEXT | st.text())
def test_esc_is_the_full_escape_with_controls_shown(value: str) -> None:
    assert esc(value) == html.escape(visible_controls(value), quote=True)


@given(TEXT | st.text())
def test_escape_is_html_escape(value: str) -> None:
    assert escape(value) == html.escape(value)


@given(TEXT | st.text())
def test_markdown_text_is_the_full_escape_on_one_line(value: str) -> None:
    full = " ".join(html.escape(visible_controls(value), quote=False).split())
    assert md_text(value) == full


def test_esc_takes_any_object() -> None:
    assert esc(2.5) == "2.5" and esc(None) == "None" and esc("a<b") == "a&lt;b"
