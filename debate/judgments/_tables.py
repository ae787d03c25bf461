"""The judgments table on disk: read the tidy long format, and its columns and scale.

One format for judgments made elsewhere (people, LLM judges run by another tool) and for the
ones ``debate calibrate`` makes, so a live run can be decided and validated later exactly as
a recorded one (``docs/judgments.md`` documents every column). Reading is columnar and
interns names as it goes: a file of 1.6 million rows is read in seconds with the csv module
alone, and every problem is reported in one line that names the file, the line, the column
and the fix, because such files are written by hand, by spreadsheets and by other tools.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from debate.exceptions import ConfigurationError
from debate.judgments._arrow_csv import Columns, arrow_columns
from debate.judgments._builder import _Builder
from debate.judgments._cells import _NUMERIC, _BadRow, _fail, _shown
from debate.records import Scale, Table, TableKind, parse_json

logger = logging.getLogger(__name__)

FORMATS: dict[str, str] = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}
"""Suffix -> format: CSV with a header row, or JSON Lines (one object per line)."""
REQUIRED: dict[TableKind, tuple[str, ...]] = {
    "scores": ("item", "option", "judge", "dimension", "score"),
    "verdicts": ("item", "judge", "verdict"),
}
OPTIONAL: dict[TableKind, tuple[str, ...]] = {
    "scores": ("unit", "order", "standing"),
    "verdicts": ("order", "probability"),
}
COLUMN_ORDER: tuple[str, ...] = (
    "item",
    "option",
    "unit",
    "judge",
    "dimension",
    "score",
    "verdict",
    "probability",
    "order",
    "standing",
)
"""How the writer orders the columns it knows (others follow, as the rows give them)."""
SCALE_HINT = "declare the score scale: --scale 1-5, or a first line '# scale: 1-5'"
_NUMBER = r"(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
_SCALE = re.compile(rf"^\s*{_NUMBER}\s*-\s*{_NUMBER}\s*$")
_CHUNK = 65_536


def parse_scale(text: str, *, where: str = "--scale") -> Scale:
    """``1-5`` -> Scale(1, 5); anything else is a one-line error naming ``where``.

    The message gives the scale's own fault: not two numbers, HIGH not above LOW, or a
    span too wide to rescale (:class:`Scale` checks the last two).
    """
    match = _SCALE.match(text)
    if match is None:
        raise ConfigurationError(
            f"{where}: scale {text.strip()!r} is not LOW-HIGH; write two numbers with HIGH "
            "above LOW, e.g. 1-5",
            field="scale",
        )
    try:
        return Scale(low=float(match[1]), high=float(match[2]))
    except ValidationError as exc:
        reason = str(exc.errors()[0]["msg"]).removeprefix("Value error, ").removeprefix("scale: ")
        raise ConfigurationError(f"{where}: scale {reason}", field="scale") from exc


def _format_of(source: Path) -> str:
    fmt = FORMATS.get(source.suffix.lower())
    if fmt is None:
        raise ConfigurationError(
            f"{source}: suffix {source.suffix or '(none)'!r} is not a judgments format; "
            "name the file .csv (a header row) or .jsonl (one JSON object per line)",
            field="file",
        )
    return fmt


def _text_of(source: Path) -> str:
    """The file's text (UTF-8, a byte-order mark dropped); empty or unreadable is an error."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ConfigurationError(
            f"{source}: cannot read it ({exc.strerror}); check the path", field="file"
        ) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigurationError(
            f"{source} line {line}: not UTF-8 text; save the file as UTF-8", field="file"
        ) from exc
    if not text.strip():
        raise ConfigurationError(
            f"{source}: the file is empty; give a header row and one row per judgment",
            field="file",
        )
    return text


def _agreed_scale(source: Path, declared: Scale | None, given: Scale | None) -> Scale | None:
    if declared is not None and given is not None and declared != given:
        raise ConfigurationError(
            f"{source}: the file declares scale {declared} but --scale says {given}; "
            "drop --scale or make them agree",
            field="scale",
        )
    return declared or given


def _layout(source: Path, header: Sequence[str], line: int) -> tuple[TableKind, tuple[str, ...]]:
    """The table's kind from its columns, and the columns it ignores."""
    names = set(header)
    if "score" in names and "verdict" in names:
        _fail(source, line, "verdict", "a table has score rows or verdict rows, not both; split it")
    kind: TableKind = "verdicts" if "verdict" in names else "scores"
    if "score" not in names and "verdict" not in names:
        sep = next((s for s in (";", "\t") if any(s in h for h in header)), None)
        hint = f" (the columns seem separated by {sep!r}: use commas)" if sep else ""
        _fail(
            source,
            line,
            "score",
            "no score or verdict column; score rows need item, option, judge, dimension, "
            f"score and verdict rows need item, judge, verdict{hint}",
        )
    missing = [c for c in REQUIRED[kind] if c not in names]
    if missing:
        _fail(
            source,
            line,
            missing[0],
            f"missing column {missing[0]}; {kind[:-1]} rows need {', '.join(REQUIRED[kind])}",
        )
    known = set(REQUIRED[kind]) | set(OPTIONAL[kind])
    return kind, tuple(h for h in header if h not in known)


def _header(source: Path, row: Sequence[str], line: int) -> list[str]:
    names = [h.strip().lower() for h in row]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            _fail(source, line, name, f"column {name} appears twice in the header; keep one")
        seen.add(name)
    return names


def _csv_scale(source: Path, first: str) -> Scale | None:
    """The ``# scale: 1-5`` line, if the file starts with one."""
    text = first.strip()
    if not text.startswith("#"):
        return None
    body = text[1:].strip()
    if not body.lower().startswith("scale:"):
        _fail(source, 1, "scale", f"{_shown(text)}; the only first-line comment is '# scale: 1-5'")
    return parse_scale(body[len("scale:") :], where=f"{source} line 1")


def _filled(row: list[str]) -> bool:
    return any(c.strip() for c in row)


@dataclass
class _Csv:
    """A CSV judgments file being read: its text, where its rows start, and their width."""

    source: Path
    text: str
    offset: int = 0
    """1 when the first line declares the scale."""
    names: list[str] = field(default_factory=list)

    def reader(self) -> tuple[Any, list[str]]:
        """A csv reader positioned after the header, and the header row."""
        stream = io.StringIO(self.text, newline="")
        if self.offset:
            stream.readline()
        reader = csv.reader(stream)
        header = next((row for row in reader if _filled(row)), None)
        if header is None:
            raise ConfigurationError(
                f"{self.source}: no header row; the first row names the columns", field="file"
            )
        return reader, header

    def kept(self, row: list[str]) -> bool:
        return len(row) == len(self.names) and _filled(row)

    def line_of(self, index: int) -> int:
        """The file line of the ``index``-th data row (the rare error path: a second scan)."""
        reader, _ = self.reader()
        n = -1
        for row in reader:
            n += self.kept(row)
            if n == index:
                return int(reader.line_num) + self.offset
        raise AssertionError(f"row {index} is not in the file")

    def width_error(self) -> NoReturn:
        reader, _ = self.reader()
        width = len(self.names)
        for row in reader:
            if len(row) != width and _filled(row):
                column = self.names[len(row)] if len(row) < width else self.names[-1]
                _fail(
                    self.source,
                    int(reader.line_num) + self.offset,
                    column,
                    f"the row has {len(row)} cells and the header {width}; give every column "
                    "a cell, and quote cells that hold commas",
                )
        raise AssertionError("no row of the wrong width")


def _read_csv(source: Path, text: str) -> tuple[_Builder, Scale | None, Callable[[int], int]]:
    declared = _csv_scale(source, io.StringIO(text, newline="").readline())
    shape = _Csv(source, text, offset=1 if declared is not None else 0)
    reader, header = shape.reader()
    line = int(reader.line_num) + shape.offset
    shape.names = _header(source, header, line)
    kind, ignored = _layout(source, shape.names, line)
    builder = _Builder(kind, tuple(c for c in COLUMN_ORDER if c in shape.names), ignored)
    encoded: Columns | None = None
    plain: list[str] | None = None
    if '"' not in text and "\r" not in text:  # each line is its cells split at commas
        wanted = {c: c in _NUMERIC for c in builder.present}
        encoded = arrow_columns(text, _data_start(text, line), shape.names, wanted)
        if encoded is None:
            plain = _plain_lines(text, line, len(shape.names))
    try:
        if encoded is not None:
            builder.add_encoded(encoded)
        elif plain is None:
            _csv_rows(reader, builder, shape)
        else:
            _split_rows(plain, builder, shape)
    except _BadRow as bad:
        _located(source, bad, shape.line_of)
    except csv.Error as exc:
        line = int(reader.line_num) + shape.offset
        raise ConfigurationError(
            f"{source} line {line}: not readable as CSV ({exc}); fix the quoting on that line",
            field="file",
        ) from exc
    return builder, declared, shape.line_of


def _data_start(text: str, header_line: int) -> int:
    """Where the line after line ``header_line`` (the header's, counted from 1) starts."""
    at = 0
    for _ in range(header_line):
        at = text.find("\n", at) + 1
        if not at:
            return len(text)
    return at


def _csv_rows(reader: Iterator[list[str]], builder: _Builder, shape: _Csv) -> None:
    """Rows in chunks; a chunk of full rows (the usual case) is checked at C speed."""
    width = len(shape.names)
    picks = {c: itemgetter(shape.names.index(c)) for c in builder.present}
    key = itemgetter(shape.names.index("item"))
    while chunk := list(islice(reader, _CHUNK)):
        if set(map(len, chunk)) != {width} or not all(map(str.strip, map(key, chunk))):
            if any(len(row) != width and _filled(row) for row in chunk):
                shape.width_error()
            chunk = [row for row in chunk if shape.kept(row)]
            if not chunk:
                continue
        builder.add({c: list(map(pick, chunk)) for c, pick in picks.items()})


def _plain_lines(text: str, header_line: int, width: int) -> list[str] | None:
    """The data lines of unquoted text when the csv module would read each as its cells.

    ``text`` has no quote and no carriage return (the caller checks, for pyarrow's path
    too); its lines are plain when every cell is within the csv module's size limit and
    every non-blank line has exactly ``width`` cells. Such a file (every file the writer
    makes) is split column by column at C speed; None for any other, which the csv module
    reads (and whose faults it locates) as before.
    """
    lines = text.split("\n")[header_line:]
    if lines and not lines[-1]:  # the newline that ends the last row
        lines.pop()
    if "" in lines:
        lines = [row for row in lines if row]
    if not lines or max(map(len, lines)) > csv.field_size_limit():
        return None
    if set(map(str.count, lines, repeat(",", len(lines)))) != {width - 1}:
        return None
    return lines


def _split_rows(lines: list[str], builder: _Builder, shape: _Csv) -> None:
    """:func:`_csv_rows` of plain lines (:func:`_plain_lines`): each chunk split in one call."""
    width = len(shape.names)
    where = {c: shape.names.index(c) for c in builder.present}
    item = shape.names.index("item")
    for start in range(0, len(lines), _CHUNK):
        cells: list[Any] = ",".join(lines[start : start + _CHUNK]).split(",")
        if not all(map(str.strip, cells[item::width])):  # a row without an item: the csv path
            _csv_rows(csv.reader(lines[start:]), builder, shape)
            return
        builder.add({c: cells[k::width] for c, k in where.items()})


def _jsonl_objects(source: Path, lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """Every line parsed in one call (per line only to find a bad one), each an object."""
    try:
        joined = "[" + ",".join(text for _, text in lines) + "]"
        objects = parse_json(joined, str(source))
    except (json.JSONDecodeError, ConfigurationError):  # found and named line by line below
        objects = None
    if not isinstance(objects, list) or len(objects) != len(lines):
        objects = [_json_line(source, number, text) for number, text in lines]
    for (number, _), obj in zip(lines, objects, strict=True):
        if not isinstance(obj, dict):
            raise ConfigurationError(
                f"{source} line {number}: a JSON {type(obj).__name__}, not an object; write "
                'one object per line, e.g. {"item": "1", "judge": "j", "verdict": "A"}',
                field="file",
            )
    return objects


def _json_line(source: Path, number: int, text: str) -> object:
    try:
        return parse_json(text, f"{source} line {number}")
    except json.JSONDecodeError as exc:
        hint = " (a JSON array: write one object per line)" if text.lstrip()[:1] == "[" else ""
        raise ConfigurationError(
            f"{source} line {number}: not valid JSON ({exc.msg}){hint}", field="file"
        ) from exc


def _read_jsonl(source: Path, text: str) -> tuple[_Builder, Scale | None, Callable[[int], int]]:
    lines = [(n, t) for n, t in enumerate(text.splitlines(), start=1) if t.strip()]
    declared = None
    first = _json_line(source, *lines[0])
    if isinstance(first, dict) and set(first) == {"scale"}:
        declared = parse_scale(str(first["scale"]), where=f"{source} line {lines[0][0]}")
        lines = lines[1:]
        if not lines:
            raise ConfigurationError(f"{source}: no rows after the scale line", field="file")
    objects = _jsonl_objects(source, lines)
    kind, _ = _layout(source, list(objects[0]), lines[0][0])
    known = set(REQUIRED[kind]) | set(OPTIONAL[kind])
    given = dict.fromkeys(chain.from_iterable(objects))
    other = "score" if kind == "verdicts" else "verdict"
    if other in given:
        at = next(n for (n, _), obj in zip(lines, objects, strict=True) if other in obj)
        _fail(source, at, other, "a table has score rows or verdict rows, not both; split it")
    present = tuple(c for c in COLUMN_ORDER if c in known and c in given)
    builder = _Builder(kind, present, tuple(k for k in given if k not in known))
    try:
        for start in range(0, len(objects), _CHUNK):
            part = objects[start : start + _CHUNK]
            builder.add({c: [obj.get(c) for obj in part] for c in present})
    except _BadRow as bad:
        _located(source, bad, lambda index: lines[index][0])
    return builder, declared, lambda index: lines[index][0]


def read_judgments(path: str | Path, *, scale: Scale | str | None = None) -> Table:
    """A judgments file as a :class:`ScoreTable` or :class:`VerdictTable`.

    The kind follows the columns (``verdict`` -> verdicts, ``score`` -> scores); the
    format the suffix (``.csv``; ``.jsonl`` or ``.json`` for JSON Lines). Score tables need
    a scale, declared in the file or by ``scale`` (both: they must agree).

    Raises:
        ConfigurationError: one line naming the file, the line, the column and the fix.
    """
    source = Path(path)
    fmt = _format_of(source)
    given = parse_scale(scale) if isinstance(scale, str) else scale
    text = _text_of(source)
    return _table(source, (_read_csv if fmt == "csv" else _read_jsonl)(source, text), given)


def read_judgment_rows(
    rows: Sequence[Mapping[str, object]], *, scale: Scale | str | None = None, source: str = "rows"
) -> Table:
    """Rows given as JSON objects (an HTTP body, an MCP tool's argument) as a table.

    They are read and checked as the lines of a JSON Lines file, so the messages are the
    CLI's; a bad row is named ``rows line N`` (N counts the rows from 1).

    Raises:
        ConfigurationError: one line naming the row, the column and the fix.
    """
    where = Path(source)
    if not rows:
        raise ConfigurationError(f"{source}: no rows; give one row per judgment", field=source)
    given = parse_scale(scale, where="scale") if isinstance(scale, str) else scale
    text = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
    return _table(where, _read_jsonl(where, text), given)


def _table(
    source: Path,
    read: tuple[_Builder, Scale | None, Callable[[int], int]],
    given: Scale | None,
) -> Table:
    builder, declared, line_of = read
    try:
        return _finish(source, builder, declared, given)
    except _BadRow as bad:
        _located(source, bad, line_of)


def _located(source: Path, bad: _BadRow, line_of: Callable[[int], int]) -> NoReturn:
    other = "" if bad.other is None else str(line_of(bad.other))
    _fail(source, line_of(bad.index), bad.column, bad.problem.replace("{other}", other))


def _finish(source: Path, builder: _Builder, declared: Scale | None, given: Scale | None) -> Table:
    if not builder.rows:
        raise ConfigurationError(
            f"{source}: a header and no rows; give one row per judgment", field="file"
        )
    if builder.ignored:
        logger.info("%s: ignored columns %s", source, ", ".join(builder.ignored))
    if builder.kind == "verdicts":
        return builder.verdicts(str(source))
    chosen = _agreed_scale(source, declared, given)
    if chosen is None:
        raise ConfigurationError(f"{source}: {SCALE_HINT}", field="scale")
    return builder.scores(chosen, str(source))
