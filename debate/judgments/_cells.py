"""A judgments table's cells: each value read, named or coded, and each fault located.

Values are interned column by column as they are read (:class:`_Column`), and a fault is
raised as :class:`_BadRow` by its row's index: the reader turns the index into the file's
line only when a file fails, so the common path never numbers its rows.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
from numpy.typing import NDArray

from debate.exceptions import ConfigurationError
from debate.records import NO_CALL, STANDINGS

VERDICT_CODES = {"a": 0, "b": 1, "tie": 2}
_FROM_PROBABILITY = 3
"""A blank verdict in a table with a ``probability`` column: the verdict follows it."""
ORDER_CODES = {"": 0, "AB": 1, "BA": 2}


def _fail(source: Path, line: int, column: str, problem: str) -> NoReturn:
    raise ConfigurationError(f"{source} line {line}, column {column}: {problem}", field=column)


def _shown(value: object) -> str:
    """A cell as the message quotes it: short, on one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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

    def adopt(self, values: list[str], codes: NDArray[np.int32]) -> None:
        """The whole column at once, already interned, into an empty column.

        ``values`` distinct in first-seen order and each row's index among them: what
        :meth:`add` makes of the rows.
        """
        if self.codes:
            raise ValueError(f"{self.name}: adopt a whole column into an empty one only")
        self.raw = dict(zip(values, range(len(values)), strict=True))
        self.codes.frombytes(np.ascontiguousarray(codes, dtype=np.int32).tobytes())

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
