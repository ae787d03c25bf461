"""Decisions from recorded score tables: the live panel's decision path, without a model.

A :class:`~debate.records._judgments.ScoreTable` holds judgments made elsewhere (people,
or LLM judges run by another tool). Each item's pair of options becomes what a live panel
sees: the first option's units are PRO's arguments, the second's CON's, each judge's score
per unit read as a live panel forms it (:mod:`debate.judgments._score_cells`). The pairs
are then grouped by shape (which judges scored, which units are whose) and each group goes
through :func:`debate.panel._decision.rule_batch`, the one path a live panel takes too.

A judge missing any score a pair needs is unscored on that pair: left out of every
statistic and named in the reasons; nothing is filled in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from debate._gc import collector_held
from debate.judgments._arrays import FloatArray, IntArray
from debate.judgments._pairs import Pairs, pairs
from debate.judgments._score_cells import Cells, DimensionWeights, read_cells
from debate.panel import Context, Ruled, ScoreBatch, Setting, rule_batch
from debate.records import (
    NO_CALL,
    ItemDecision,
    ScoreTable,
    Thresholds,
    built,
    interval_confidence,
)
from debate.stats import Method as CalibrationMethod
from debate.stats import choose_calibration, side_means

STANDINGS_MISSING = "a scored judge gave no standing for some unit of this pair"
TOPIC = "recorded"
"""The topic type a recorded decision carries (no topic was classified)."""


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
        shapes, which = _distinct_rows(key)
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


def _distinct_rows(key: NDArray[np.bool_]) -> tuple[NDArray[np.bool_], IntArray]:
    """``np.unique(key, axis=0, return_inverse=True)``: the distinct rows, in the same order.

    A row of at most 62 flags is read as a number (its first flag the highest bit), whose
    order is the rows' lexicographic order: one sort of integers, not of boolean records.
    """
    if key.shape[1] > 62:
        shapes, which = np.unique(key, axis=0, return_inverse=True)
        return shapes, which.ravel()
    bits = np.left_shift(1, np.arange(key.shape[1] - 1, -1, -1, dtype=np.int64))
    _, first, which = np.unique(key @ bits, return_index=True, return_inverse=True)
    return key[first], which.ravel()


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
    ruled: Ruled,
    judge_margins: dict[str, float | None],
    weights: dict[str, float],
    dimension: str | None,
) -> ItemDecision:
    """A pair's ruling as a record, PRO and CON named by the pair's options.

    Built without validation (:func:`~debate.records.built`): every value is already of its field's
    type, from the validated ruling, the table's names and Python floats; validating
    100,000 records again was a tenth of ``debate decide``. No Vote or Decision is made on
    the way: only this record is kept.
    """
    margins, ruling, lead = ruled.margins, ruled.ruling, ruled.lead
    first, second = (table.options[o] for o in pair)
    named = {"PRO": first, "CON": second}
    interval = margins.margin_points_ci
    return built(
        ItemDecision,
        item=table.items[item],
        options=(first, second),
        dimension=dimension,
        winner=named.get(ruling.winner or ""),
        lead=named.get(str(lead.get("lead") or "")),
        margin=margins.margin,
        margin_points=margins.margin_points,
        interval=interval,
        confidence=interval_confidence(interval),
        agreement=ruled.agreement,
        diagnostics=ruled.diagnostics,
        judge_margins=judge_margins,
        weights=dict(weights),
        outcome=ruling.outcome,
        reasons=ruling.reasons,
        evidence=lead.get("evidence"),
        p_agree=lead.get("p_agree"),
    )


def _decide_group(
    table: ScoreTable,
    cells: Cells,
    found: Pairs,
    group: _Group,
    weights: dict[str, float],
    options: _Options,
) -> list[ItemDecision]:
    """One shape's pairs through the live panel's batch path, then as item decisions."""
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
    contexts = _contexts(table, cells, group, weights, items, pair_options)
    conclusions = rule_batch(batch, weights, setting, contexts, judge_evidence=False)
    margins = _judge_margins(table, batch, len(items))
    return [
        _item_decision(
            table, item, (pair[0], pair[1]), conclusions[b], margins[b], weights, options.dimension
        )
        for b, (item, pair) in enumerate(zip(items, pair_options.tolist(), strict=True))
    ]


def _contexts(
    table: ScoreTable,
    cells: Cells,
    group: _Group,
    weights: dict[str, float],
    items: list[int],
    pair_options: IntArray,
) -> list[Context]:
    """Each pair's panel: its size, and who is unscored on it and why (named in the reasons)."""
    partial = group.judges.size < len(table.judges)
    no_standings = (
        [f"{STANDINGS_MISSING}: kappa is left undefined rather than computed on some of them"]
        if table.standings and not group.with_standings and group.judges.size >= 2
        else []
    )

    def notes(b: int) -> list[str]:
        missing = (
            _missing_notes(
                table, cells, items[b], pair_options[b], group.index[b], group.judges, weights
            )
            if partial
            else []
        )
        return [*missing, *no_standings]

    unscored = len(table.judges) - group.judges.size
    return [
        Context(panel_size=len(table.judges), unscored=unscored, notes=notes(b))
        for b in range(len(items))
    ]


def _judge_margins(table: ScoreTable, batch: ScoreBatch, n: int) -> list[dict[str, float | None]]:
    """Each pair's judge margins in points (PRO minus CON); None for a judge unscored on it."""
    unscored: dict[str, float | None] = dict.fromkeys(table.judges)
    if not batch.judges:
        return [dict(unscored) for _ in range(n)]
    pro, con = side_means(batch.raw, batch.is_pro)
    rows = (pro - con).tolist()
    if batch.judges == list(table.judges):  # every judge scored: no None to fill in
        return [dict(zip(batch.judges, row, strict=True)) for row in rows]
    return [{**unscored, **dict(zip(batch.judges, row, strict=True))} for row in rows]


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
