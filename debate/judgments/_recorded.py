"""Decisions from recorded score tables: the live panel's decision path, without a model.

A :class:`~debate.records._judgments.ScoreTable` holds judgments made elsewhere (people,
or LLM judges run by another tool). Each item's pair of options becomes what a live panel
sees: the first option's units are PRO's arguments, the second's CON's; each judge's
dimension scores are weighted into one score per unit, the readings of both orders are
averaged and the standings compared, exactly as :func:`debate.panel._decision.score_matrices`
does for a live panel. The pairs are then grouped by shape (which judges scored, which
units are whose) and each group goes through :func:`debate.panel._decision.conclude_batch`,
the one path a live panel takes too.

A judge missing any score a pair needs is unscored on that pair: left out of every
statistic and named in the reasons; nothing is filled in.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from debate._gc import collector_held
from debate.panel import (
    RESOLUTION,
    Conclusion,
    Context,
    ScoreBatch,
    Setting,
    conclude_batch,
)
from debate.records import (
    DIMENSIONS,
    NO_CALL,
    ORDERS,
    SIDES,
    STANDINGS,
    ItemDecision,
    JudgeEvaluation,
    Scale,
    ScoreTable,
    Thresholds,
    Transcript,
    interval_confidence,
)
from debate.stats import Method as CalibrationMethod
from debate.stats import choose_calibration, side_means

logger = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
DimensionWeights = Mapping[str, float] | Mapping[str, Mapping[str, float]]
WEIGHT_TOLERANCE = 1e-6
"""Dimension weights summing to 1 within this are used as given (as a live judge's rubric
weights are), so that a recorded live run reproduces the live sums bit for bit; others are
divided by their sum."""
STANDINGS_MISSING = "a scored judge gave no standing for some unit of this pair"
TOPIC = "recorded"
"""The topic type a recorded decision carries (no topic was classified)."""


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
    """
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


@dataclass(frozen=True)
class Pairs:
    """Every decision: an item's two options, and their cells in first-seen order.

    Cells are held per number of cells: the pairs of that size and, row by row, their
    cell indices (items of two options, the common case, are found without a loop).
    """

    item: IntArray
    options: IntArray
    """Pairs x 2: the first option (PRO) and the second (CON)."""
    cells: dict[int, tuple[IntArray, IntArray]]
    """Number of cells -> (pair indices, pairs x cells cell indices)."""

    def __len__(self) -> int:
        return int(self.item.size)


def _item_spans(cells: Cells) -> tuple[IntArray, IntArray, IntArray]:
    """Per item present: its first cell, its number of cells, its number of options."""
    n = cells.item.size
    starts = np.flatnonzero(np.r_[True, cells.item[1:] != cells.item[:-1]]) if n else cells.item
    sizes = np.diff(np.r_[starts, n])
    key = cells.item.astype(np.int64) * (int(cells.option.max()) + 1 if n else 1) + cells.option
    item_of_option = np.unique(key) // (int(cells.option.max()) + 1 if n else 1)
    per_item = np.bincount(
        np.searchsorted(cells.item[starts], item_of_option), minlength=starts.size
    )
    return starts, sizes, per_item


def _many_options(cells: Cells, start: int, end: int) -> list[tuple[int, int, list[int]]]:
    """The pairs of an item of more than two options: (first, second, cells), in order."""
    options = cells.option[start:end].tolist()
    seen = list(dict.fromkeys(options))
    return [
        (seen[a], seen[b], [start + c for c, o in enumerate(options) if o in (seen[a], seen[b])])
        for a in range(len(seen))
        for b in range(a + 1, len(seen))
    ]


def pairs(cells: Cells) -> Pairs:
    """Every pair of options of every item, options and cells in first-seen order."""
    starts, sizes, n_options = _item_spans(cells)
    for i in np.flatnonzero(n_options < 2).tolist():
        logger.info("item %s has one option only; there is no pair", cells.item[starts[i]])
    counts = n_options * (n_options - 1) // 2
    first_pair = np.r_[0, np.cumsum(counts)[:-1]] if counts.size else counts
    total = int(counts.sum())
    item = np.repeat(cells.item[starts], counts)
    options = np.zeros((total, 2), dtype=np.intp)
    rows: dict[int, tuple[list[IntArray], list[IntArray]]] = {}
    two = np.flatnonzero(n_options == 2)
    if two.size:
        first = cells.option[starts[two]]
        second = _second_option(cells, starts[two], sizes[two], first)
        options[first_pair[two]] = np.stack([first, second], axis=1)
        for size in np.unique(sizes[two]).tolist():
            chosen = two[sizes[two] == size]
            index = starts[chosen][:, None] + np.arange(size)
            rows.setdefault(size, ([], []))[0].append(first_pair[chosen])
            rows[size][1].append(index)
    for i in np.flatnonzero(n_options > 2).tolist():
        start = int(starts[i])
        for k, (a, b, picked) in enumerate(_many_options(cells, start, start + int(sizes[i]))):
            options[first_pair[i] + k] = (a, b)
            rows.setdefault(len(picked), ([], []))[0].append(np.array([first_pair[i] + k]))
            rows[len(picked)][1].append(np.array([picked]))
    return Pairs(
        item=item.astype(np.intp),
        options=options,
        cells={
            size: (np.concatenate(ids), np.concatenate(index))
            for size, (ids, index) in rows.items()
        },
    )


def _second_option(cells: Cells, starts: IntArray, sizes: IntArray, first: IntArray) -> IntArray:
    """For items of two options: the option that is not the first (the other's cells)."""
    longest = int(sizes.max())
    index = np.minimum(starts[:, None] + np.arange(longest), (starts + sizes - 1)[:, None])
    other = cells.option[index] != first[:, None]
    second: IntArray = cells.option[index[np.arange(starts.size), other.argmax(axis=1)]]
    return second


def _judge_weights(table: ScoreTable, given: Mapping[str, float] | None) -> dict[str, float]:
    if given is None:
        return dict.fromkeys(table.judges, 1.0)
    unknown = [j for j in given if j not in table.judges]
    if unknown:
        raise ValueError(
            f"judge_weights: {unknown[0]!r} is not a judge of {table.source}; use "
            + ", ".join(table.judges)
        )
    missing = [j for j in table.judges if j not in given]
    if missing:
        raise ValueError(
            f"judge_weights: no weight for judge {missing[0]!r}; give every judge one, or "
            "leave judge_weights out for equal weights"
        )
    bad = [j for j, w in given.items() if isinstance(w, bool) or not math.isfinite(w) or w < 0]
    if bad:
        raise ValueError(f"judge_weights[{bad[0]!r}]: give a finite number >= 0")
    return {j: float(given[j]) for j in table.judges}


@dataclass(frozen=True)
class _Group:
    """Pairs of one shape: the same scored judges, the same sides, standings or not."""

    pairs: IntArray
    index: IntArray
    """Pairs x cells: each pair's cell indices."""
    judges: IntArray
    is_pro: NDArray[np.bool_]
    with_standings: bool


def _groups(cells: Cells, found: Pairs, counted: NDArray[np.bool_]) -> list[_Group]:
    """The pairs grouped by shape, vectorised per number of cells.

    Only ``counted`` judges (positive weight) can be scored on a pair.
    """
    out = []
    for members, index in found.cells.values():
        pattern = cells.option[index] == found.options[members, :1]
        scored = np.asarray(np.isfinite(cells.points[index]).all(axis=1), bool) & counted
        standing = cells.standing[index]
        full = ((standing != NO_CALL) | ~scored[:, None, :]).all(axis=(1, 2))
        key = np.concatenate([pattern, scored, full[:, None]], axis=1)
        shapes, which = np.unique(key, axis=0, return_inverse=True)
        which = which.ravel()
        width = pattern.shape[1]
        for g, shape in enumerate(shapes):
            chosen = np.flatnonzero(which == g)
            out.append(
                _Group(
                    pairs=members[chosen],
                    index=index[chosen],
                    judges=np.flatnonzero(shape[width:-1]),
                    is_pro=shape[:width].copy(),
                    with_standings=bool(shape[-1]),
                )
            )
    return out


def _batch(table: ScoreTable, cells: Cells, group: _Group) -> ScoreBatch:
    index, judges = group.index, group.judges

    def pick(values: FloatArray) -> FloatArray:
        out: FloatArray = np.ascontiguousarray(values[index][:, :, judges].transpose(0, 2, 1))
        return out

    standings = None
    if group.with_standings and judges.size:
        standings = np.ascontiguousarray(cells.standing[index][:, :, judges])
    units = np.array(table.units, dtype=object)
    return ScoreBatch(
        judges=[table.judges[j] for j in judges],
        ids=units[cells.unit[index]].tolist(),
        is_pro=group.is_pro,
        raw=pick(cells.points),
        dimensions={d: pick(m) for d, m in cells.dims.items()},
        standings=standings,
    )


def _missing_notes(
    table: ScoreTable,
    cells: Cells,
    item: int,
    options: IntArray,
    row: IntArray,
    judges: IntArray,
    weights: Mapping[str, float],
) -> list[str]:
    """One reason per judge unscored on the pair, naming the options it left unscored."""
    scored = set(judges.tolist())
    notes = []
    for j, name in enumerate(table.judges):
        if j in scored:
            continue
        if weights[name] == 0:
            notes.append(
                f"judge {name} carries weight 0: it has no say, so it is left out of this "
                "decision and of every statistic"
            )
            continue
        gaps = [
            table.options[o]
            for o in options.tolist()
            if np.isnan(cells.points[row[cells.option[row] == o], j]).any()
        ]
        notes.append(
            f"judge {name} gave no score for {' or '.join(repr(g) for g in gaps)} of item "
            f"{table.items[item]!r} (every unit needs every dimension); it is unscored "
            "on this pair and left out of every statistic"
        )
    return notes


def _calibration(choice: str, is_pro: NDArray[np.bool_]) -> CalibrationMethod:
    if choice in ("minmax", "zscore"):
        return choice  # type: ignore[return-value]
    if choice != "auto":
        raise ValueError(f"calibration: {choice!r} is not auto, zscore or minmax; pick one")
    return choose_calibration(int(max(is_pro.sum(), (~is_pro).sum())))


def _item_decision(
    table: ScoreTable,
    item: int,
    pair: tuple[int, int],
    conclusion: Conclusion,
    judge_margins: dict[str, float | None],
    weights: dict[str, float],
    dimension: str | None,
) -> ItemDecision:
    agreement, vote_, diagnostics, decision = conclusion
    first, second = (table.options[o] for o in pair)
    interval = vote_.margin_points_ci
    lead = {"PRO": first, "CON": second}.get(decision.lead or "")
    return ItemDecision(
        item=table.items[item],
        options=(first, second),
        dimension=dimension,
        outcome=decision.outcome,
        winner={"PRO": first, "CON": second}.get(decision.winner or ""),
        margin=vote_.margin,
        margin_points=vote_.margin_points,
        interval=interval,
        confidence=interval_confidence(interval),
        agreement=agreement,
        judge_margins=judge_margins,
        weights=weights,
        reasons=decision.reasons,
        diagnostics=diagnostics,
        lead=lead,
        evidence=decision.evidence,
        p_agree=decision.p_agree,
    )


def _decide_group(
    table: ScoreTable,
    cells: Cells,
    found: Pairs,
    group: _Group,
    weights: dict[str, float],
    options: _Options,
) -> list[ItemDecision]:
    batch = _batch(table, cells, group)
    setting = Setting(
        thresholds=options.thresholds,
        calibration=_calibration(options.calibration, group.is_pro),
        seed=options.seed,
        topic_type=TOPIC,
        topic_source="config",
    )
    items = found.item[group.pairs].tolist()
    pair_options = found.options[group.pairs]
    partial = group.judges.size < len(table.judges)
    no_standings = (
        [f"{STANDINGS_MISSING}: kappa is left undefined rather than computed on some of them"]
        if table.standings and not group.with_standings and group.judges.size >= 2
        else []
    )
    contexts = [
        Context(
            panel_size=len(table.judges),
            unscored=len(table.judges) - group.judges.size,
            notes=[
                *(
                    _missing_notes(
                        table,
                        cells,
                        items[b],
                        pair_options[b],
                        group.index[b],
                        group.judges,
                        weights,
                    )
                    if partial
                    else ()
                ),
                *no_standings,
            ],
        )
        for b in range(len(items))
    ]
    conclusions = conclude_batch(batch, weights, setting, contexts)
    margins: list[list[float]] = [[] for _ in items]
    if batch.judges:
        pro, con = side_means(batch.raw, batch.is_pro)
        margins = (pro - con).tolist()
    unscored: dict[str, float | None] = dict.fromkeys(table.judges)
    out = []
    for b, (item, pair) in enumerate(zip(items, pair_options.tolist(), strict=True)):
        own = {**unscored, **dict(zip(batch.judges, margins[b], strict=True))}
        out.append(
            _item_decision(
                table, item, (pair[0], pair[1]), conclusions[b], own, weights, options.dimension
            )
        )
    return out


@dataclass(frozen=True)
class _Options:
    thresholds: Thresholds
    calibration: str
    seed: int
    dimension: str | None


def decide_scores(
    table: ScoreTable,
    *,
    thresholds: Thresholds,
    judge_weights: Mapping[str, float] | None = None,
    dimension: str | None = None,
    dimension_weights: DimensionWeights | None = None,
    calibration: Literal["auto", "zscore", "minmax"] = "auto",
    seed: int = 0,
    items: Sequence[int] | None = None,
) -> list[ItemDecision]:
    """The panel's decision on every pair of options of every item of a score table.

    Scores are rescaled to 1-10 (``table.scale``) so that the thresholds keep their
    meaning. ``dimension`` decides on one dimension; otherwise each judge's scores are
    weighted over the table's dimensions (equal weights unless ``dimension_weights``, one
    mapping for all judges or one per judge). ``judge_weights`` None means equal. A judge
    with weight 0 has no say: it is left out of the decision and of its agreement
    statistics (named in the reasons), as in the verdict engine, so that a judge whose
    earned weight is 0 (no better than chance, or adversarial) cannot veto the others by
    disagreeing with them.
    ``items`` restricts the decision to those item indices. Decisions come in table order,
    one per pair of options (first-seen order).

    Raises:
        ValueError: an unknown dimension or judge, weights that are negative or missing, a
            score given twice; one line naming the field and the fix.
    """
    weights = _judge_weights(table, judge_weights)
    cells = read_cells(table, dimension=dimension, dimension_weights=dimension_weights, items=items)
    found = pairs(cells)
    options = _Options(thresholds, calibration, seed, dimension)
    decided: list[ItemDecision | None] = [None] * len(found)
    counted = np.array([weights[j] > 0 for j in table.judges], dtype=bool)
    with collector_held():
        for group in _groups(cells, found, counted):
            for p, decision in zip(
                group.pairs.tolist(),
                _decide_group(table, cells, found, group, weights, options),
                strict=True,
            ):
                decided[p] = decision
    return [d for d in decided if d is not None]


def option_points(
    table: ScoreTable,
    *,
    dimension: str | None = None,
    dimension_weights: DimensionWeights | None = None,
    items: Sequence[int] | None = None,
) -> tuple[NDArray[np.int32], NDArray[np.int32], FloatArray]:
    """Each judge's 1-10 score per (item, option): dimension-weighted, units averaged.

    Rows in table order (items, then options first-seen); NaN where the judge left any
    unit of the option without a complete score. For the rank correlations with people
    and the latent one-factor model.

    Returns:
        The item index and option index of each row, and rows x judges scores.
    """
    cells = read_cells(table, dimension=dimension, dimension_weights=dimension_weights, items=items)
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
