"""A judgments table assembled from its columns, and checked as a whole.

Rows arrive in chunks; :class:`_Builder` keeps each column's interned codes and, once every
chunk is in, checks what no single row can show (a duplicate judgment, a unit under two
options, a verdict its probability contradicts) and finishes the columnar table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from debate.judgments._arrow_csv import Columns, Encoded
from debate.judgments._cells import (
    _FROM_PROBABILITY,
    _NUMERIC,
    _TIE_BAND,
    CANON,
    _BadRow,
    _blank,
    _Column,
    _name,
    _probabilities,
    _scores,
    _verdict_or_blank,
)
from debate.records import NO_CALL, STANDINGS, VERDICTS, Scale, ScoreTable, TableKind, VerdictTable


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
        self._numbers(columns, len(columns[self.present[0]]))

    def add_encoded(self, columns: Columns) -> None:
        """Every row at once into an empty builder, the named columns already interned.

        From :mod:`debate.judgments._arrow_csv`, which leaves a blank unit to :meth:`add`.
        """
        rows = 0
        for name, column in self.columns.items():
            encoded = columns[name]
            if not isinstance(encoded, Encoded):
                raise TypeError(f"{name}: give a named column interned")
            column.adopt(encoded.values, encoded.codes)
            rows = encoded.codes.size
        numeric = {name: cells for name, cells in columns.items() if isinstance(cells, list)}
        self._numbers(numeric, rows)

    def _numbers(self, columns: dict[str, list[object]], rows: int) -> None:
        """The numeric columns of the next ``rows`` rows (numbered after those already in)."""
        if "score" in columns:
            self.score.append(_scores(columns["score"], self.rows))
        if "probability" in columns:
            self.probability.append(_probabilities(columns["probability"], self.rows))
        self.rows += rows

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
            **self._shared(source, (item, items), (judge, judges), order),
            scale=scale,
            options=tuple(options),
            dimensions=tuple(dimensions),
            units=tuple(units),
            option=option,
            unit=unit,
            dimension=dimension,
            score=s,
            standing=self._fixed("standing") if has_standing else np.full(len(s), NO_CALL, np.int8),
            standings=STANDINGS if has_standing else (),
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
            **self._shared(source, (item, items), (judge, judges), order),
            verdict=verdict,
            probability=probability,
        )

    def _shared(
        self,
        source: str,
        item: tuple[NDArray[np.int32], list[str]],
        judge: tuple[NDArray[np.int32], list[str]],
        order: NDArray[np.int8],
    ) -> dict[str, Any]:
        """The fields both kinds of table have: items and judges, the order, what was ignored."""
        return {
            "source": source,
            "items": tuple(item[1]),
            "judges": tuple(judge[1]),
            "item": item[0],
            "judge": judge[0],
            "order": order,
            "ignored_columns": self.ignored,
        }

    def _fixed(self, name: str) -> NDArray[np.int8]:
        """A column of fixed codes (verdict, order, standing); order absent -> all 0."""
        if name not in self.columns:
            return np.zeros(self.rows, dtype=np.int8)
        codes, _ = self.resolved(name)
        return codes.astype(np.int8)


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
