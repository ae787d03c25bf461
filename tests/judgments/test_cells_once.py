"""A table's cells read once per decide: the decision and the table's alpha share them."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

from debate.judgments import _score_cells, decide_judgments, planted_scores
from debate.judgments._score_cells import cells_read_once, read_cells


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    reads: list[object] = []
    real = _score_cells._read_cells

    def counted(*args: object) -> object:
        reads.append(args[1:])
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_score_cells, "_read_cells", counted)
    return reads


def test_decide_reads_a_tables_cells_once_and_gives_what_two_reads_give(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table, _ = planted_scores(300, ("x", "y", "z"), {"a": 0.5, "b": 1.0, "c": 2.0}, seed=3)
    with monkeypatch.context() as apart:  # no shared read: each caller reads anew
        apart.setattr("debate.judgments._decide.cells_read_once", nullcontext)
        reads = _counted(apart)
        each = decide_judgments(table)
        assert len(reads) == 2
    reads = _counted(monkeypatch)
    once = decide_judgments(table)
    assert reads == [(None, None, None)]
    assert once.model_dump_json() == each.model_dump_json()
    assert once.summary.alpha is not None


def test_shared_cells_are_read_only_and_other_reads_are_not_shared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table, _ = planted_scores(40, ("x", "y"), {"a": 0.5, "b": 1.0}, seed=4)
    reads = _counted(monkeypatch)
    with cells_read_once():
        first = read_cells(table)
        assert read_cells(table) is first and read_cells(table, dimension="overall") is not first
        with pytest.raises(ValueError, match="read-only"):
            first.points[0, 0] = 0.0
        assert read_cells(table, items=[0, 1]) is not read_cells(table, items=[0, 1])
        weighted = read_cells(table, dimension_weights={"overall": 1.0})
        assert weighted is not first and np.array_equal(weighted.points, first.points)
    assert read_cells(table) is not first and read_cells(table).points.flags.writeable
    assert len(reads) == 7
