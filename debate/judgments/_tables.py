"""The judgments table on disk: read, write and round-trip the tidy long format.

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
import math
import os
import re
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import Any, NoReturn, TextIO

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from debate.exceptions import ConfigurationError
from debate.records import (
    NO_CALL,
    ORDERS,
    STANDINGS,
    VERDICTS,
    Scale,
    ScoreTable,
    Table,
    TableKind,
    VerdictTable,
    parse_json,
)
from debate.storage import current_umask

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
NAME_COLUMNS = frozenset({"item", "option", "unit", "judge", "dimension"})
VERDICT_CODES = {"a": 0, "b": 1, "tie": 2}
_FROM_PROBABILITY = 3
"""A blank verdict in a table with a ``probability`` column: the verdict follows it."""
ORDER_CODES = {"": 0, "AB": 1, "BA": 2}
SCALE_HINT = "declare the score scale: --scale 1-5, or a first line '# scale: 1-5'"
_NUMBER = r"(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
_SCALE = re.compile(rf"^\s*{_NUMBER}\s*-\s*{_NUMBER}\s*$")
_CHUNK = 65_536


def _fail(source: Path, line: int, column: str, problem: str) -> NoReturn:
    raise ConfigurationError(f"{source} line {line}, column {column}: {problem}", field=column)


def _shown(value: object) -> str:
    """A cell as the message quotes it: short, on one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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


class _BadRow(Exception):
    """A problem at a row, by its index among the data rows; read_judgments adds the line.

    Rows are not numbered as they are read (that alone would cost a second on a million
    rows): the rare file that fails is scanned again to find the line.
    """

    def __init__(self, index: int, column: str, problem: str, other: int | None = None) -> None:
        super().__init__(problem)
        self.index, self.column, self.problem, self.other = index, column, problem, other
        """``problem`` may name ``{other}``, the line of a second row (a duplicate's first)."""


@dataclass
class _Column:
    """One column's raw values, interned as read (codes in first-seen order of raw values)."""

    name: str
    raw: dict[object, int] = field(default_factory=dict)
    codes: array[int] = field(default_factory=lambda: array("i"))

    def add(self, values: list[object]) -> None:
        seen = self.raw
        try:
            for value in dict.fromkeys(values):  # distinct, first-seen order, at C speed
                if value not in seen:
                    seen[value] = len(seen)
        except TypeError:
            k = next(i for i, v in enumerate(values) if not _hashable(v))
            problem = f"{_shown(values[k])} is not a value; write text or a number"
            raise _BadRow(len(self.codes) + k, self.name, problem) from None
        self.codes.extend(map(seen.__getitem__, values))

    def resolve(
        self, canon: Callable[[object], int | str | None]
    ) -> tuple[NDArray[np.int32], list[str]]:
        """Final codes and names: ``canon`` maps a raw value to a name (or a fixed code).

        Raw values that mean the same (``" x"`` and ``"x"``; ``7`` and ``"7"``) share a
        code; a raw value ``canon`` rejects (None) fails at its first row.
        """
        remap = np.empty(len(self.raw), dtype=np.int32)
        names: dict[str, int] = {}
        codes = np.frombuffer(self.codes, dtype=np.int32) if self.codes else np.empty(0, np.int32)
        for value, raw_code in self.raw.items():
            meant = canon(value)
            if meant is None:
                first = int(np.flatnonzero(codes == raw_code)[0])
                raise _BadRow(first, self.name, self.problem(value))
            code = meant if isinstance(meant, int) else names.setdefault(meant, len(names))
            remap[raw_code] = code
        return remap[codes], list(names)

    def problem(self, value: object) -> str:
        if value is None or (isinstance(value, str) and not value.strip()):
            return f"{self.name} is empty or missing; every row needs one"
        if self.name == "verdict":
            hint = ""
            if str(value).strip() in ("0", "1", "2"):
                hint = " (numeric codes are not read: map them to A, B, tie first)"
            return f"verdict {_shown(value)}; write A (first option better), B or tie{hint}"
        if self.name == "order":
            return f"order {_shown(value)}; write AB (as listed), BA (swapped) or leave it blank"
        if self.name == "standing":
            allowed = ", ".join(STANDINGS)
            return f"standing {_shown(value)}; write one of {allowed} or leave it blank"
        return f"{_shown(value)} is not a name; write text or a whole number"


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _name(value: object) -> str | None:
    """A name as read: text stripped; a JSON integer (or whole float) as its digits."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else repr(value)
    return None


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _verdict(value: object) -> int | None:
    return VERDICT_CODES.get(value.strip().lower()) if isinstance(value, str) else None


def _order(value: object) -> int | None:
    if value is None:
        return 0
    return ORDER_CODES.get(value.strip().upper()) if isinstance(value, str) else None


def _standing(value: object) -> int | None:
    if _blank(value):
        return NO_CALL
    if not isinstance(value, str):
        return None
    text = value.strip().upper().replace(" ", "_")
    return STANDINGS.index(text) if text in STANDINGS else None


CANON: dict[str, Callable[[object], int | str | None]] = {
    "verdict": _verdict,
    "order": _order,
    "standing": _standing,
}


@dataclass
class _Builder:
    """Collects chunks of rows column by column.

    :meth:`scores` and :meth:`verdicts` check the whole and finish the table.
    """

    kind: TableKind
    present: tuple[str, ...]
    ignored: tuple[str, ...]
    columns: dict[str, _Column] = field(default_factory=dict)
    score: list[NDArray[np.float64]] = field(default_factory=list)
    rows: int = 0

    probability: list[NDArray[np.float64]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.columns = {c: _Column(c) for c in self.present if c not in _NUMERIC}

    def add(self, columns: dict[str, list[object]]) -> None:
        if "unit" in columns:  # a row without a unit scores its option as a whole
            units, option = columns["unit"], columns["option"]
            columns["unit"] = [o if _blank(u) else u for u, o in zip(units, option, strict=True)]
        for name, column in self.columns.items():
            column.add(columns[name])
        if "score" in columns:
            self.score.append(_scores(columns["score"], self.rows))
        if "probability" in columns:
            self.probability.append(_probabilities(columns["probability"], self.rows))
        self.rows += len(columns[self.present[0]])

    def resolved(self, name: str) -> tuple[NDArray[np.int32], list[str]]:
        return self.columns[name].resolve(CANON.get(name, _name))

    def scores(self, scale: Scale, source: str) -> ScoreTable:
        s = np.concatenate(self.score)
        _check_range(s, scale)
        item, items = self.resolved("item")
        option, options = self.resolved("option")
        unit, units = self.resolved("unit") if "unit" in self.columns else (option, options)
        judge, judges = self.resolved("judge")
        dimension, dimensions = self.resolved("dimension")
        order = self._fixed("order")
        has_standing = "standing" in self.columns
        _check_unique((item, option, unit, judge, dimension, order), "judge")
        _check_units(item, unit, option)
        return ScoreTable(
            source=source,
            scale=scale,
            items=tuple(items),
            options=tuple(options),
            judges=tuple(judges),
            dimensions=tuple(dimensions),
            units=tuple(units),
            item=item,
            option=option,
            unit=unit,
            judge=judge,
            dimension=dimension,
            score=s,
            order=order,
            standing=self._fixed("standing") if has_standing else np.full(len(s), NO_CALL, np.int8),
            standings=STANDINGS if has_standing else (),
            ignored_columns=self.ignored,
        )

    def verdicts(self, source: str) -> VerdictTable:
        item, items = self.resolved("item")
        judge, judges = self.resolved("judge")
        probability = np.concatenate(self.probability) if self.probability else None
        if probability is None:
            verdict = self._fixed("verdict")
        else:
            codes, _ = self.columns["verdict"].resolve(_verdict_or_blank)
            verdict = _with_probability(codes.astype(np.int8), probability)
        order = self._fixed("order")
        _check_unique((item, judge, order), "verdict")
        return VerdictTable(
            source=source,
            items=tuple(items),
            judges=tuple(judges),
            item=item,
            judge=judge,
            verdict=verdict,
            order=order,
            ignored_columns=self.ignored,
            probability=probability,
        )

    def _fixed(self, name: str) -> NDArray[np.int8]:
        """A column of fixed codes (verdict, order, standing); order absent -> all 0."""
        if name not in self.columns:
            return np.zeros(self.rows, dtype=np.int8)
        codes, _ = self.resolved(name)
        return codes.astype(np.int8)


def _scores(values: list[object], start: int) -> NDArray[np.float64]:
    """Scores as numbers: text that parses, or JSON numbers (never true/false/null)."""
    if set(map(type, values)) <= {str, int, float}:
        try:
            return np.array(values, dtype=np.float64)
        except ValueError:
            pass
    for k, value in enumerate(values):
        if value is None or (isinstance(value, str) and not value.strip()):
            raise _BadRow(start + k, "score", "score is empty or missing; every row needs one")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise _BadRow(start + k, "score", f"{_shown(value)} is not a score; write a number")
        try:
            float(value)
        except ValueError:
            hint = "; use a point as the decimal separator" if "," in str(value) else ""
            raise _BadRow(start + k, "score", f"{_shown(value)} is not a number{hint}") from None
    raise AssertionError("unreachable: a score failed to parse but none was found")


_NUMERIC = frozenset({"score", "probability"})
"""Columns read as numbers, not interned as names or codes."""
_TIE_BAND = 0.5
"""A probability of exactly 0.5 is no preference: its verdict is tie."""


def _probabilities(values: list[object], start: int) -> NDArray[np.float64]:
    """A judge's probability that A is better: a number in [0, 1], or blank (none given)."""
    out = np.full(len(values), np.nan)
    for k, value in enumerate(values):
        if _blank(value):
            continue
        number: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                number = None
        if number is None or not (0.0 <= number <= 1.0):
            raise _BadRow(
                start + k,
                "probability",
                f"probability {_shown(value)}; write the judge's probability that A is better, "
                "a number from 0 to 1 (or leave it blank)",
            )
        out[k] = number
    return out


def _verdict_or_blank(value: object) -> int | None:
    """A verdict code, or :data:`_FROM_PROBABILITY` for a blank one."""
    return _FROM_PROBABILITY if _blank(value) else _verdict(value)


def _with_probability(
    verdict: NDArray[np.int8], probability: NDArray[np.float64]
) -> NDArray[np.int8]:
    """Blank verdicts follow the probability; a verdict and a probability must agree."""
    derived = np.where(probability > _TIE_BAND, 0, np.where(probability < _TIE_BAND, 1, 2))
    blank = verdict == _FROM_PROBABILITY
    missing = np.flatnonzero(blank & np.isnan(probability))
    if missing.size:
        raise _BadRow(
            int(missing[0]),
            "verdict",
            "verdict is empty and the row gives no probability; write A, B or tie, or the "
            "judge's probability that A is better",
        )
    given = ~blank & ~np.isnan(probability)
    clash = np.flatnonzero(given & (verdict != 2) & (verdict != derived))
    if clash.size:
        k = int(clash[0])
        raise _BadRow(
            k,
            "probability",
            f"verdict {VERDICTS[verdict[k]]} but probability {probability[k]:g} favours "
            f"{VERDICTS[derived[k]]}; the probability is that A is better: fix one of them",
        )
    return np.where(blank, derived, verdict).astype(np.int8)


def _check_range(s: NDArray[np.float64], scale: Scale) -> None:
    outside = np.flatnonzero(~((s >= scale.low) & (s <= scale.high)))
    if outside.size:
        value = float(s[outside[0]])
        problem = (
            f"score {value:g} is not a finite number; write a number"
            if not math.isfinite(value)
            else f"score {value:g} is outside the declared scale {scale}; fix the score, or "
            "declare the scale the scores are on"
        )
        raise _BadRow(int(outside[0]), "score", problem)


def _check_unique(key: tuple[NDArray[Any], ...], column: str) -> None:
    """No two rows give the same judgment (stable sort: the earlier row is named first)."""
    if key[0].size < 2:
        return
    rank = np.lexsort(key[::-1])
    same = np.ones(rank.size - 1, dtype=bool)
    for col in key:
        ordered = col[rank]
        same &= ordered[1:] == ordered[:-1]
    hits = np.flatnonzero(same)
    if hits.size:
        at = int(hits[np.argmin(rank[hits + 1])])
        what = "the same item, option, unit, judge, dimension and order"
        if column == "verdict":
            what = "the same item, judge and order"
        raise _BadRow(
            int(rank[at + 1]),
            column,
            f"duplicate of line {{other}} ({what}); keep one, or tell the readings apart with "
            "an order column (AB, BA)",
            other=int(rank[at]),
        )


def _check_units(
    item: NDArray[np.int32], unit: NDArray[np.int32], option: NDArray[np.int32]
) -> None:
    """A unit (an argument) belongs to one option of its item."""
    rank = np.lexsort((option, unit, item))
    i, u, o = item[rank], unit[rank], option[rank]
    clash = np.flatnonzero((i[1:] == i[:-1]) & (u[1:] == u[:-1]) & (o[1:] != o[:-1]))
    if clash.size:
        at = int(clash[0])
        raise _BadRow(
            int(rank[at + 1]),
            "unit",
            "this unit of the item is also listed under another option on line {other}; a "
            "unit belongs to one option: rename one of them",
            other=int(rank[at]),
        )


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
    try:
        _csv_rows(reader, builder, shape)
    except _BadRow as bad:
        _located(source, bad, shape.line_of)
    except csv.Error as exc:
        line = int(reader.line_num) + shape.offset
        raise ConfigurationError(
            f"{source} line {line}: not readable as CSV ({exc}); fix the quoting on that line",
            field="file",
        ) from exc
    return builder, declared, shape.line_of


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


def table_rows(table: Table) -> Iterator[dict[str, object]]:
    """The table back as rows.

    What :func:`write_judgments` writes; reading that file back gives the same table.
    """
    if isinstance(table, VerdictTable):
        yield from _verdict_rows(table)
        return
    with_unit = table.units != table.options or not np.array_equal(table.unit, table.option)
    with_order = bool(table.order.any())
    for k in range(table.rows):
        row: dict[str, object] = {
            "item": table.items[table.item[k]],
            "option": table.options[table.option[k]],
        }
        if with_unit:
            row["unit"] = table.units[table.unit[k]]
        row["judge"] = table.judges[table.judge[k]]
        row["dimension"] = table.dimensions[table.dimension[k]]
        row["score"] = float(table.score[k])
        if with_order:
            row["order"] = ORDERS[table.order[k]]
        if table.standings:
            code = int(table.standing[k])
            row["standing"] = "" if code == NO_CALL else table.standings[code]
        yield row


def _verdict_rows(table: VerdictTable) -> Iterator[dict[str, object]]:
    with_order = bool(table.order.any())
    for k in range(table.rows):
        row: dict[str, object] = {
            "item": table.items[table.item[k]],
            "judge": table.judges[table.judge[k]],
            "verdict": VERDICTS[table.verdict[k]],
        }
        if table.probability is not None and not np.isnan(table.probability[k]):
            row["probability"] = float(table.probability[k])
        if with_order:
            row["order"] = ORDERS[table.order[k]]
        yield row


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def write_judgments(
    path: str | Path,
    rows: Iterable[Mapping[str, object]],
    *,
    scale: Scale | str | None,
    columns: Sequence[str] | None = None,
) -> Path:
    """Write rows as a judgments file (CSV or JSONL by suffix), atomically.

    Score rows need ``scale`` (a Scale or ``"1-5"``): it becomes the file's first line, so
    the file reads alone.
    ``columns`` defaults to the first row's keys (known columns in the documented order);
    give it when there may be no rows, so the file still has a header.
    """
    target = Path(path)
    fmt = _format_of(target)
    rest = iter(rows)
    first = next(rest, None)
    if columns is None:
        if first is None:
            raise ValueError("write_judgments: no rows and no columns; pass columns=")
        columns = [c for c in COLUMN_ORDER if c in first] + [
            c for c in first if c not in COLUMN_ORDER
        ]
    if isinstance(scale, str):
        scale = parse_scale(scale, where="scale")
    if "score" in columns and scale is None:
        raise ValueError(f"write_judgments: score rows need a scale ({SCALE_HINT})")
    scored = scale if "score" in columns else None
    everything = rest if first is None else _chain_rows(first, rest)
    with _atomic(target) as handle:
        if fmt == "csv":
            _write_csv(handle, everything, list(columns), scored)
        else:
            _write_jsonl(handle, everything, list(columns), scored)
    return target


def _chain_rows(
    first: Mapping[str, object], rest: Iterator[Mapping[str, object]]
) -> Iterator[Mapping[str, object]]:
    yield first
    yield from rest


def _write_csv(
    handle: TextIO,
    rows: Iterable[Mapping[str, object]],
    columns: list[str],
    scale: Scale | None,
) -> None:
    if scale is not None:
        handle.write(f"# scale: {scale}\n")
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(columns)
    known = set(columns)
    for row in rows:
        if not row.keys() <= known:
            raise ValueError(f"write_judgments: a row has {sorted(row.keys() - known)} too")
        writer.writerow([_cell(row.get(c)) for c in columns])


def _write_jsonl(
    handle: TextIO,
    rows: Iterable[Mapping[str, object]],
    columns: list[str],
    scale: Scale | None,
) -> None:
    if scale is not None:
        handle.write(json.dumps({"scale": str(scale)}) + "\n")
    for row in rows:
        values = {c: row.get(c) for c in columns if row.get(c) not in (None, "")}
        handle.write(json.dumps(values, ensure_ascii=False) + "\n")


@contextmanager
def _atomic(target: Path) -> Iterator[TextIO]:
    """A text file that appears whole or not at all (temp file + rename).

    It gets the mode any other program's output would (see ``write_json_atomic``).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~current_umask())
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
