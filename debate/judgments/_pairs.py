"""The pairs a recorded score table asks to decide: every two options of every item.

The first option of a pair plays PRO and the second CON, as in a live debate; an item of
more than two options gives one pair per two of them, in first-seen order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from debate.judgments._arrays import IntArray
from debate.judgments._score_cells import Cells

logger = logging.getLogger(__name__)


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
