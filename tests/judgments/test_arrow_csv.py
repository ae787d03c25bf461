"""A large plain CSV file read with pyarrow (the arrow extra): the same table, the same errors.

pyarrow runs for real here (a dev dependency); :data:`ARROW_FROM` is lowered so that small
files take its path, and the csv module's path is what the same file reads as without it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from debate.exceptions import ConfigurationError
from debate.judgments import _arrow_csv, read_judgments, write_judgments
from debate.judgments._arrow_csv import Columns, Encoded
from debate.records import ScoreTable, Table, VerdictTable
from tests.judgments.test_judgments_io import MALFORMED, three_option_rows

Read = Table | tuple[str, str | None]
"""A table, or the message and field of the error reading it raised."""


def _read(path: Path) -> Read:
    try:
        return read_judgments(path)
    except ConfigurationError as exc:
        return str(exc), exc.field


@pytest.fixture
def both_ways(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], tuple[Read, Read, bool]]:
    """Read a file with pyarrow and without: both results, and whether pyarrow read it."""
    monkeypatch.setattr(_arrow_csv, "ARROW_FROM", 0)
    found: list[Columns | None] = []
    arrow = _arrow_csv.arrow_columns

    def watched(*args: object) -> Columns | None:
        columns = arrow(*args)  # type: ignore[arg-type]
        found.append(columns)
        return columns

    monkeypatch.setattr("debate.judgments._tables.arrow_columns", watched)

    def read(path: Path) -> tuple[Read, Read, bool]:
        found.clear()
        with_arrow = _read(path)
        used = bool(found) and found[-1] is not None
        with monkeypatch.context() as off:
            off.setattr(_arrow_csv, "_pyarrow", lambda: None)
            without = _read(path)
        return with_arrow, without, used

    return read


def _same(left: Read, right: Read) -> None:
    if isinstance(left, tuple) or isinstance(right, tuple):
        assert left == right
        return
    assert type(left) is type(right)
    for name in type(left).__dataclass_fields__:
        a, b = getattr(left, name), getattr(right, name)
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
        else:
            assert a == b, name


def test_a_plain_file_reads_the_same_with_pyarrow(
    tmp_path: Path, both_ways: Callable[[Path], tuple[Read, Read, bool]]
) -> None:
    """Units, orders, standings (some blank), a blank line and no final newline."""
    path = tmp_path / "s.csv"
    write_judgments(path, three_option_rows(), scale="1-10.75")
    lines = path.read_text().splitlines()
    lines.insert(4, "")
    path.write_text("\n".join(lines))
    with_arrow, without, used = both_ways(path)
    assert used and isinstance(with_arrow, ScoreTable)
    assert with_arrow.standings and len(with_arrow.units) == 6
    _same(with_arrow, without)


def test_a_verdict_file_with_probabilities_reads_the_same_with_pyarrow(
    tmp_path: Path, both_ways: Callable[[Path], tuple[Read, Read, bool]]
) -> None:
    path = tmp_path / "v.csv"
    rows = ["item,judge,verdict,probability,order,note"]
    calls = [("A", "0.8"), ("B", "0.25"), ("tie", "")]
    rows += [f"q{k // 3},j{k % 3},{calls[k % 3][0]},{calls[k % 3][1]},AB,n{k}" for k in range(60)]
    rows += ["q100,j0,,0.9,BA,blank verdict from its probability"]
    path.write_text("\n".join(rows) + "\n")
    with_arrow, without, used = both_ways(path)
    assert used and isinstance(with_arrow, VerdictTable)
    assert with_arrow.probability is not None and with_arrow.ignored_columns == ("note",)
    _same(with_arrow, without)


@pytest.mark.parametrize(
    ("case", "text", "used"),
    [
        ("quoted cell", 'item,option,judge,dimension,score\ni1,"a",j1,d,3\ni1,b,j1,d,4\n', False),
        ("carriage returns", "item,option,judge,dimension,score\r\ni1,a,j1,d,3\r\n", False),
        ("short row", "item,option,judge,dimension,score\ni1,a,j1,d,3\ni1,b,j1\n", False),
        ("blank item", "item,option,judge,dimension,score\ni1,a,j1,d,3\n ,b,j1,d,4\n", False),
        ("blank row", "item,option,judge,dimension,score\ni1,a,j1,d,3\n,,,,\n", False),
        ("blank unit", "item,option,unit,judge,dimension,score\ni1,a,,j1,d,3\n", False),
        ("spaced names", "item,option,judge,dimension,score\n i1 ,a,j1,d,3\ni1,b, j1,d,4\n", True),
        ("bad score", "item,option,judge,dimension,score\ni1,a,j1,d,3\ni1,b,j1,d,x\n", True),
        ("duplicate", "item,option,judge,dimension,score\ni1,a,j1,d,3\ni1,a,j1,d,4\n", True),
    ],
)
def test_what_pyarrow_leaves_to_the_csv_module_and_what_it_reads(
    tmp_path: Path,
    both_ways: Callable[[Path], tuple[Read, Read, bool]],
    case: str,
    text: str,
    used: bool,
) -> None:
    """Quotes, carriage returns, a row of another width, a blank item or unit: the csv
    module reads the file. Otherwise pyarrow does, and the builder's checks name the line."""
    path = tmp_path / "s.csv"
    path.write_bytes(("# scale: 1-5" + ("\r\n" if "\r" in text else "\n") + text).encode())
    with_arrow, without, took = both_ways(path)
    assert took is used, case
    _same(with_arrow, without)


@pytest.mark.parametrize(
    ("name", "content", "line", "column", "words"),
    [case for case in MALFORMED if case[0].endswith(".csv")],
)
def test_every_malformed_file_fails_alike_with_pyarrow(
    tmp_path: Path,
    both_ways: Callable[[Path], tuple[Read, Read, bool]],
    name: str,
    content: str,
    line: int,
    column: str,
    words: str,
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with_arrow, without, _ = both_ways(path)
    assert isinstance(with_arrow, tuple) and f"line {line}" in with_arrow[0]
    assert with_arrow == without


def test_a_small_file_or_no_pyarrow_leaves_the_csv_module_to_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "item,judge,verdict\n" + "i1,j1,A\n" * 3
    names = ["item", "judge", "verdict"]
    wanted = dict.fromkeys(names, False)
    assert _arrow_csv.arrow_columns(text, 19, names, wanted) is None  # under ARROW_FROM
    monkeypatch.setattr(_arrow_csv, "ARROW_FROM", 0)
    found = _arrow_csv.arrow_columns(text, 19, names, wanted)
    assert found is not None and _arrow_csv.arrow_available()
    item = found["item"]
    assert isinstance(item, Encoded) and item.values == ["i1"] and item.codes.tolist() == [0] * 3
    monkeypatch.setattr(_arrow_csv, "_pyarrow", lambda: None)
    assert _arrow_csv.arrow_columns(text, 19, names, wanted) is None


def test_a_pyarrow_older_than_the_extra_pins_is_left_unused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyarrow

    _arrow_csv._pyarrow.cache_clear()
    monkeypatch.setattr(pyarrow, "__version__", "13.0.0")
    try:
        assert not _arrow_csv.arrow_available()
    finally:
        _arrow_csv._pyarrow.cache_clear()
    monkeypatch.undo()
    assert _arrow_csv.arrow_available()
