"""A recorded score table read as a live panel reads its judges: one score per cell.

A cell is an (item, option, unit); per cell each judge's dimension scores are weighted into
one score, the readings of both orders averaged and the standings compared, exactly as
:func:`debate.panel._decision.score_matrices` does for a live panel. A judge missing any
score of a cell has none there: nothing is filled in. Also the way back, a live panel's
evaluations as a score table (:func:`evaluation_table`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from debate.judgments._arrays import FloatArray, IntArray
from debate.panel import RESOLUTION
from debate.records import (
    DIMENSIONS,
    NO_CALL,
    ORDERS,
    SIDES,
    STANDINGS,
    JudgeEvaluation,
    Scale,
    ScoreTable,
    Transcript,
)

DimensionWeights = Mapping[str, float] | Mapping[str, Mapping[str, float]]
WEIGHT_TOLERANCE = 1e-6
"""Dimension weights summing to 1 within this are used as given (as a live judge's rubric
weights are), so that a recorded live run reproduces the live sums bit for bit; others are
divided by their sum."""


@dataclass(frozen=True)
class Cells:
    """Every (item, option, unit) of the table's selected rows, items first, first-seen order.

    ``points`` and ``dims`` hold each judge's score of each cell (NaN where the judge gave
    no complete score); ``standing`` its standing code (``NO_CALL`` where none).
    """

    item: IntArray
    option: IntArray
    unit: IntArray
    points: FloatArray
    """Cells x judges: the dimension-weighted score (1-10), readings of both orders averaged."""
    dims: dict[str, FloatArray]
    standing: IntArray
    dimensions: list[str]


def _used_dimensions(table: ScoreTable, dimension: str | None) -> list[str]:
    if dimension is None:
        return list(table.dimensions)
    if dimension not in table.dimensions:
        raise ValueError(
            f"dimension: {dimension!r} is not in {table.source}; use one of "
            + ", ".join(table.dimensions)
        )
    return [dimension]


def _weight_row(given: Mapping[str, float], used: list[str], where: str) -> list[float]:
    """One judge's dimension weights over ``used``, checked, summing to 1."""
    missing = [d for d in used if d not in given]
    if missing:
        raise ValueError(f"{where}: no weight for dimension {missing[0]!r}; give one for each")
    values = [given[d] for d in used]
    if any(isinstance(v, bool) or not math.isfinite(v) or v < 0 for v in values):
        raise ValueError(f"{where}: weights must be finite numbers >= 0")
    total = sum(values)
    if not total > 0:
        raise ValueError(f"{where}: the weights sum to 0; give a dimension a positive weight")
    return values if abs(total - 1.0) <= WEIGHT_TOLERANCE else [v / total for v in values]


def _dimension_weights(
    table: ScoreTable, used: list[str], given: DimensionWeights | None
) -> FloatArray:
    """Judges x used dimensions: each judge's weights (equal unless given)."""
    if given is None:
        return np.full((len(table.judges), len(used)), 1.0 / len(used))
    per_judge = any(isinstance(v, Mapping) for v in given.values())
    if not per_judge:
        row = _weight_row(given, used, "dimension_weights")  # type: ignore[arg-type]
        return np.tile(row, (len(table.judges), 1))
    missing = [j for j in table.judges if j not in given]
    if missing:
        raise ValueError(
            f"dimension_weights: no weights for judge {missing[0]!r}; give every judge's"
        )
    return np.array(
        [
            _weight_row(given[j], used, f"dimension_weights[{j!r}]")  # type: ignore[arg-type]
            for j in table.judges
        ]
    )


def _rows(table: ScoreTable, used: list[str], items: Sequence[int] | None) -> IntArray:
    """Indices of the rows to read: used dimensions, selected items, in table order."""
    dims = np.array([table.dimensions.index(d) for d in used])
    keep = np.isin(table.dimension, dims)
    if items is not None:
        keep &= np.isin(table.item, np.asarray(items, dtype=np.int64))
    return np.flatnonzero(keep)


def _first_seen(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], IntArray, IntArray]:
    """Distinct keys, the row each is first seen at, and each row's key index."""
    distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return distinct, first, inverse.ravel()


def _cell_order(table: ScoreTable, rows: IntArray) -> tuple[IntArray, IntArray]:
    """Each row's cell id (cells items first, then first-seen) and each cell's first row."""
    n_opt, n_unit = len(table.options), len(table.units)
    key = (table.item[rows].astype(np.int64) * n_opt + table.option[rows]) * n_unit
    key += table.unit[rows]
    distinct, first, inverse = _first_seen(key)
    item_of = distinct // (n_opt * n_unit)
    order = np.lexsort((first, item_of))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse], rows[first[order]]


def _check_duplicates(table: ScoreTable, rows: IntArray, reading: IntArray) -> None:
    key = reading.astype(np.int64) * len(table.dimensions) + table.dimension[rows]
    distinct, counts = np.unique(key, return_counts=True)
    if (counts > 1).any():
        row = int(rows[np.flatnonzero(key == distinct[np.argmax(counts > 1)])[1]])
        raise ValueError(
            f"{table.source}: row {row} repeats item {table.items[table.item[row]]!r}, option "
            f"{table.options[table.option[row]]!r}, unit {table.units[table.unit[row]]!r}, judge "
            f"{table.judges[table.judge[row]]!r}, dimension "
            f"{table.dimensions[table.dimension[row]]!r}, order "
            f"{ORDERS[table.order[row]] or 'none'!r}; give each score once"
        )


def _standings(
    table: ScoreTable, rows: IntArray, reading: IntArray, cell_judge: IntArray, size: int
) -> IntArray:
    """Per cell-judge standing code, one per reading of its rows.

    A standing that moved with the order is UNCERTAIN (its own code); NO_CALL where any
    reading gave none.
    """
    uncertain = (
        table.standings.index("UNCERTAIN")
        if "UNCERTAIN" in table.standings
        else len(table.standings)
    )
    given = table.standing[rows].astype(np.intp)
    per_reading = np.full(int(reading.max()) + 1 if reading.size else 0, NO_CALL, dtype=np.intp)
    np.maximum.at(per_reading, reading, given)  # a reading's rows share one standing
    reading_cell = np.zeros_like(per_reading)
    reading_cell[reading] = cell_judge
    low = np.full(size, np.iinfo(np.intp).max, dtype=np.intp)
    high = np.full(size, NO_CALL, dtype=np.intp)
    np.minimum.at(low, reading_cell, per_reading)
    np.maximum.at(high, reading_cell, per_reading)
    out = np.where(low == high, low, uncertain)
    out[(low == NO_CALL) | (high == NO_CALL) | (low == np.iinfo(np.intp).max)] = NO_CALL
    return out


_ONCE: ContextVar[dict[tuple[int, str | None], tuple[ScoreTable, Cells]] | None] = ContextVar(
    "debate_cells_once", default=None
)


@contextmanager
def cells_read_once() -> Iterator[None]:
    """Within the block, a table's cells (every item, equal dimension weights) are read once.

    ``decide_judgments`` reads them to decide (once per tier, with a policy) and again for
    the table's alpha: 0.6 s a read on 100,000 x 8 scores. The cells read are shared, so
    their arrays are made read-only: a caller that wrote to them would fail, not change
    what the next caller reads.
    """
    token = _ONCE.set({})
    try:
        yield
    finally:
        _ONCE.reset(token)


def read_cells(
    table: ScoreTable,
    *,
    dimension: str | None = None,
    dimension_weights: DimensionWeights | None = None,
    items: Sequence[int] | None = None,
) -> Cells:
    """Each judge's score per cell as a live panel forms it, never filling a gap.

    Per reading (cell, judge, order) the dimension scores are weighted in the table's
    dimension order; a reading missing a dimension leaves the judge without a score for
    that cell. Readings of both orders are averaged, then rounded as a live panel rounds.
    Read once per table and dimension within :func:`cells_read_once`.
    """
    once = _ONCE.get()
    if once is None or dimension_weights is not None or items is not None:
        return _read_cells(table, dimension, dimension_weights, items)
    key = (id(table), dimension)  # unique in the block: the memo keeps the table alive
    if key not in once:
        cells = _read_cells(table, dimension, None, None)
        shared = (cells.item, cells.option, cells.unit, cells.points, cells.standing)
        for array in (*shared, *cells.dims.values()):
            array.flags.writeable = False
        once[key] = (table, cells)
    return once[key][1]


def _read_cells(
    table: ScoreTable,
    dimension: str | None,
    dimension_weights: DimensionWeights | None,
    items: Sequence[int] | None,
) -> Cells:
    used = _used_dimensions(table, dimension)
    weights = _dimension_weights(table, used, dimension_weights)
    rows = _rows(table, used, items)
    cell_of_row, cell_first = _cell_order(table, rows)
    n_cells, n_judges = cell_first.size, len(table.judges)
    dim_pos = np.full(len(table.dimensions), -1)
    dim_pos[[table.dimensions.index(d) for d in used]] = np.arange(len(used))
    pos = dim_pos[table.dimension[rows]]
    judge = table.judge[rows].astype(np.int64)
    cell_judge = cell_of_row * n_judges + judge
    reading_key = cell_judge * len(ORDERS) + table.order[rows]
    _, _, reading = _first_seen(reading_key)
    _check_duplicates(table, rows, reading)
    order = np.lexsort((pos, reading))  # within a reading, dimensions in the table's order
    rows, reading, pos, cell_judge = rows[order], reading[order], pos[order], cell_judge[order]
    score = table.scale.to_rubric(table.score[rows])
    n_read = int(reading.max()) + 1 if reading.size else 0
    weighted = np.asarray(
        np.bincount(reading, weights[judge[order], pos] * score, minlength=n_read), np.float64
    )
    complete = np.bincount(reading, minlength=n_read) == len(used)
    reading_cell = np.zeros(n_read, dtype=np.int64)
    reading_cell[reading] = cell_judge
    size = n_cells * n_judges
    points = _reading_mean(weighted, complete, reading_cell, size)
    dims = {}
    for p, name in enumerate(used):
        at = pos == p
        per = np.full(n_read, np.nan)
        per[reading[at]] = score[at]
        dims[name] = _reading_mean(per, complete, reading_cell, size).reshape(n_cells, n_judges)
    standing = _standings(table, rows, reading, cell_judge, size)
    return Cells(
        item=table.item[cell_first].astype(np.intp),
        option=table.option[cell_first].astype(np.intp),
        unit=table.unit[cell_first].astype(np.intp),
        points=np.round(points, RESOLUTION).reshape(n_cells, n_judges),
        dims=dims,
        standing=standing.reshape(n_cells, n_judges),
        dimensions=used,
    )


def _reading_mean(
    values: FloatArray, complete: NDArray[np.bool_], cell: NDArray[np.int64], size: int
) -> FloatArray:
    """Per cell-judge: the mean over its readings; NaN where any reading is incomplete."""
    total = np.bincount(cell, np.where(complete, values, 0.0), minlength=size)
    count = np.bincount(cell, minlength=size)
    broken = np.bincount(cell, (~complete).astype(np.float64), minlength=size) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
    mean[broken | (count == 0)] = np.nan
    return mean


def option_points(
    table: ScoreTable, *, dimension: str | None = None
) -> tuple[NDArray[np.int32], NDArray[np.int32], FloatArray]:
    """Each judge's 1-10 score per (item, option): dimension-weighted, units averaged.

    Rows in table order (items, then options first-seen); NaN where the judge left any
    unit of the option without a complete score. For the rank correlations with people
    and the latent one-factor model.

    Returns:
        The item index and option index of each row, and rows x judges scores.
    """
    cells = read_cells(table, dimension=dimension)
    key = cells.item.astype(np.int64) * len(table.options) + cells.option
    distinct, first, inverse = _first_seen(key)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    row = rank[inverse]
    n_rows = distinct.size
    sums = np.zeros((n_rows, len(table.judges)))
    np.add.at(sums, row, cells.points)  # NaN propagates: a missing unit leaves NaN
    counts = np.bincount(row, minlength=n_rows).astype(np.float64)
    group = (distinct[order] // len(table.options)).astype(np.int32)
    option = (distinct[order] % len(table.options)).astype(np.int32)
    return group, option, sums / counts[:, None]


def evaluation_table(
    transcript: Transcript,
    evaluations: Sequence[JudgeEvaluation],
    *,
    source: str = "live panel",
) -> ScoreTable:
    """A live panel's evaluations as a score table (option = side, unit = argument id).

    Scored evaluations only (an unscored judge has no rows); a swapped reading adds rows
    of order ``BA`` beside the first reading's ``AB``. ``debate calibrate`` writes this
    table so that a live run can be decided and validated again later.
    """
    side_of = {a.id: a.side for a in transcript.arguments}
    ids = transcript.argument_ids
    judges = [e.judge for e in evaluations if e.status == "scored"]
    rows: list[tuple[int, int, int, int, float, int, int]] = []
    for j, evaluation in enumerate(e for e in evaluations if e.status == "scored"):
        assert evaluation.scores is not None  # scored evaluations carry scores
        readings = [(evaluation.scores, 0)]
        if evaluation.swap is not None and evaluation.swap.scores is not None:
            readings = [(evaluation.scores, 1), (evaluation.swap.scores, 2)]
        for scores, order in readings:
            for u, arg_id in enumerate(ids):
                score = scores[arg_id]
                side, standing = SIDES.index(side_of[arg_id]), STANDINGS.index(score.standing)
                for d, name in enumerate(DIMENSIONS):
                    rows.append((side, u, j, d, score.dimension(name), order, standing))
    columns = np.array(rows, dtype=np.float64).reshape(-1, 7)
    return ScoreTable(
        source=source,
        scale=Scale(low=1, high=10),
        items=(transcript.topic,),
        options=SIDES,
        judges=tuple(judges),
        dimensions=DIMENSIONS,
        units=tuple(ids),
        item=np.zeros(len(rows), dtype=np.int32),
        option=columns[:, 0].astype(np.int32),
        unit=columns[:, 1].astype(np.int32),
        judge=columns[:, 2].astype(np.int32),
        dimension=columns[:, 3].astype(np.int32),
        score=columns[:, 4],
        order=columns[:, 5].astype(np.int8),
        standing=columns[:, 6].astype(np.int8),
        standings=STANDINGS,
    )
