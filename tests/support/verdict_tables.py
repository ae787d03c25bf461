"""Builders for tests of recorded tables: planted verdicts read in both orders, and mirrors.

A mirror relabels which answer is A: verdicts A<->B and orders AB<->BA for a verdict table;
for a score table, the order in which each item's two options are listed (its rows
reordered, so that the second option is seen first) and AB<->BA. Every decision of a
mirrored table must be the mirror of the original's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from debate.records import ORDERS, ScoreTable, VerdictTable

SWAP_VERDICT = np.array([1, 0, 2], dtype=np.int8)
"""A<->B; tie stays."""
SWAP_ORDER = np.array([0, 2, 1], dtype=np.int8)
"""AB<->BA; no order stays."""


def verdict_table(
    rows: list[tuple[int, int, int, int]], n_items: int, judges: tuple[str, ...]
) -> VerdictTable:
    """Rows ``(item, judge, verdict code, order code)`` as a table of ``n_items`` items."""
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return VerdictTable(
        source="planted",
        items=tuple(f"i{i}" for i in range(n_items)),
        judges=judges,
        item=a[:, 0].astype(np.int32),
        judge=a[:, 1].astype(np.int32),
        verdict=a[:, 2].astype(np.int8),
        order=a[:, 3].astype(np.int8),
    )


def planted_orders(
    n_items: int,
    judges: Mapping[str, tuple[float, float]],
    *,
    ties: float = 0.0,
    hard: float = 0.0,
    hard_accuracy: float = 0.55,
    seed: int = 0,
) -> tuple[VerdictTable, NDArray[np.int64]]:
    """Every judge reads every item in both orders; the truth is A or B, evenly.

    ``judges[name] = (accuracy, inconsistent)``: on an easy item the judge gives the true
    answer with probability ``accuracy`` in both readings; with probability
    ``inconsistent`` (on every item when ``hard`` is 0, else on hard items only) its two
    readings disagree (A reading AB, B reading BA or the reverse: it follows the position).
    A share ``hard`` of the items is hard: a consistent judge is right there with
    probability ``hard_accuracy`` only. Otherwise, with probability ``ties``, the judge
    says tie in both readings.

    Returns:
        The table (orders AB and BA, A always the table's first option) and the truth
        (0 A, 1 B) per item.
    """
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_items)
    is_hard = rng.random(n_items) < hard if hard > 0 else np.ones(n_items, dtype=bool)
    rows: list[tuple[int, int, int, int]] = []
    for j, (accuracy, inconsistent) in enumerate(judges.values()):
        for i in range(n_items):
            if is_hard[i] and rng.random() < inconsistent:
                first = int(rng.integers(0, 2))
                rows += [(i, j, first, 1), (i, j, 1 - first, 2)]
                continue
            if ties > 0 and rng.random() < ties:
                rows += [(i, j, 2, 1), (i, j, 2, 2)]
                continue
            a = hard_accuracy if hard > 0 and is_hard[i] else accuracy
            call = int(truth[i] if rng.random() < a else 1 - truth[i])
            rows += [(i, j, call, 1), (i, j, call, 2)]
    return verdict_table(rows, n_items, tuple(judges)), truth


def as_read(table: VerdictTable) -> VerdictTable:
    """The table as a careless converter writes it: each BA row's verdict names the answer
    the judge saw first (A and B swapped in BA rows)."""
    ba = table.order == ORDERS.index("BA")
    return replace(table, verdict=np.where(ba, SWAP_VERDICT[table.verdict], table.verdict))


def mirror_verdicts(table: VerdictTable) -> VerdictTable:
    """A and B relabelled: every verdict and every order swapped, rows as they were."""
    return replace(table, verdict=SWAP_VERDICT[table.verdict], order=SWAP_ORDER[table.order])


def mirror_scores(table: ScoreTable) -> ScoreTable:
    """Each item's options listed the other way round (items of two options)."""
    first: dict[int, int] = {}
    for i, o in zip(table.item.tolist(), table.option.tolist(), strict=True):
        first.setdefault(i, o)
    is_first = np.array(
        [first[i] == o for i, o in zip(table.item.tolist(), table.option.tolist(), strict=True)]
    )
    order = np.lexsort((np.arange(table.rows), is_first, table.item))
    columns = {
        name: getattr(table, name)[order]
        for name in ("item", "option", "unit", "judge", "dimension", "score", "order", "standing")
    }
    columns["order"] = SWAP_ORDER[columns["order"]]
    return replace(table, **columns)
