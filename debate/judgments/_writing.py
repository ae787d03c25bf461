"""A judgments table written back: rows in the documented column order, atomically.

What :func:`write_judgments` writes, :func:`~debate.judgments._tables.read_judgments`
reads back as the same table, so a live run's judgments can be decided again later.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import numpy as np

from debate.judgments._tables import COLUMN_ORDER, SCALE_HINT, _format_of, parse_scale
from debate.records import NO_CALL, ORDERS, VERDICTS, Scale, Table, VerdictTable
from debate.storage import current_umask


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
    write = _write_csv if fmt == "csv" else _write_jsonl
    with _atomic(target) as handle:
        if scored is not None:  # the file's first line, so that the file reads alone
            handle.write(_SCALE_LINE[fmt](scored))
        write(handle, everything, list(columns))
    return target


def _chain_rows(
    first: Mapping[str, object], rest: Iterator[Mapping[str, object]]
) -> Iterator[Mapping[str, object]]:
    yield first
    yield from rest


_SCALE_LINE: dict[str, Callable[[Scale], str]] = {
    "csv": lambda scale: f"# scale: {scale}\n",
    "jsonl": lambda scale: json.dumps({"scale": str(scale)}) + "\n",
}
"""How each format declares the score scale on its first line."""


def _write_csv(handle: TextIO, rows: Iterable[Mapping[str, object]], columns: list[str]) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(columns)
    known = set(columns)
    for row in rows:
        if not row.keys() <= known:
            raise ValueError(f"write_judgments: a row has {sorted(row.keys() - known)} too")
        writer.writerow([_cell(row.get(c)) for c in columns])


def _write_jsonl(handle: TextIO, rows: Iterable[Mapping[str, object]], columns: list[str]) -> None:
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
