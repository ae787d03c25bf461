"""The one JSONL reader: every caller's errors name the file, the line and the fix."""

from pathlib import Path

import pytest

from debate.exceptions import ConfigurationError
from debate.quality import read_debate_items
from debate.records import Candidate
from debate.storage import read_jsonl, read_jsonl_records


def test_blank_lines_are_skipped_and_numbers_stay_true(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n', encoding="utf-8")
    assert list(read_jsonl(path, "rows")) == [(1, {"a": 1}), (4, {"a": 2})]


def test_bad_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n{"a": \n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"rows .*rows.jsonl line 3: not valid JSON"):
        list(read_jsonl(path, "rows"))


def test_invalid_record_names_its_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "A", "text": "x"}\n{"id": "B"}\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"line 2\.text"):
        read_jsonl_records(path, "candidates", Candidate)


def test_unreadable_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read it"):
        read_debate_items(tmp_path / "missing.jsonl")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"id": "caf\xe9"}\n')
    with pytest.raises(ConfigurationError, match="not UTF-8 text"):
        list(read_jsonl(latin, "rows"))
