"""Judge track records: calls on items with a known answer, and the weight they earn.

A judge identity is role x model x template version, the version being a digest of the
judge's role template (``judge_role_<role>.md.jinja``, the text that makes it that judge in
debates and in council reviews alike): editing or overriding it starts a new record, so a
changed judge never inherits the old one's accuracy. Its record (items seen, correct calls)
lives in the run store. The panel's judge weight is

    0.7 x domain weight + 0.3 x accuracy

where accuracy is 1.0 for a judge without history and otherwise the observed accuracy
shrunk toward that prior by ``PRIOR_ITEMS`` pseudo-items:

    accuracy = (correct + PRIOR_ITEMS x 1.0) / (items + PRIOR_ITEMS)

so one lucky or unlucky item moves a weight a little, and thirty move it a lot.

Where people scored the same items on rubric dimensions, the judge's scores are stored
beside theirs, and the record reports per dimension Krippendorff's interval alpha between
the judge and the people's mean (two raters, one unit per scored target), over every item
the judge has seen.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

from debate.records import Frozen

PRIOR_ITEMS = 10.0
PRIOR_ACCURACY = 1.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_calls (
    identity TEXT NOT NULL,
    item TEXT NOT NULL,
    dataset TEXT NOT NULL,
    call TEXT NOT NULL,
    truth TEXT NOT NULL,
    correct INTEGER NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (identity, item, dataset)
);
CREATE TABLE IF NOT EXISTS judge_dimension_scores (
    identity TEXT NOT NULL,
    item TEXT NOT NULL,
    dataset TEXT NOT NULL,
    target TEXT NOT NULL,
    dimension TEXT NOT NULL,
    judge REAL NOT NULL,
    people REAL NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (identity, item, dataset, target, dimension)
);
"""

ScoreRow = tuple[str, str, str, str, str, float, float]
"""``(identity, item, dataset, target, dimension, judge score, people's score)``."""


class DimensionAgreement(Frozen):
    """A judge against people on one rubric dimension."""

    pairs: int
    """Scored targets (arguments or candidates) where both the judge and people scored."""
    alpha: float | None
    """Interval alpha, judge vs the people's mean; None when undefined (e.g. no variation)."""


class TrackRecord(Frozen):
    """What the store knows about one judge identity."""

    identity: str
    items: int
    correct: int
    dimensions: dict[str, DimensionAgreement] = {}

    @property
    def accuracy(self) -> float:
        """Shrunk accuracy (see the module docstring); 1.0 without history."""
        return (self.correct + PRIOR_ITEMS * PRIOR_ACCURACY) / (self.items + PRIOR_ITEMS)


class TrackRecords:
    """Track records in the SQLite run store (same file as the audit)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=30.0)) as db, db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    def add(self, rows: Iterable[tuple[str, str, str, str, str]]) -> int:
        """Record calls ``(identity, item, dataset, call, truth)``; a repeated item replaces."""
        now = time.time()
        data = [
            (i, item, ds, call, truth, int(call == truth), now) for i, item, ds, call, truth in rows
        ]
        with closing(sqlite3.connect(self.path, timeout=30.0)) as db, db:
            db.executemany("INSERT OR REPLACE INTO judge_calls VALUES (?, ?, ?, ?, ?, ?, ?)", data)
        return len(data)

    def add_scores(self, rows: Iterable[ScoreRow]) -> int:
        """Record a judge's dimension scores beside people's; a repeated one replaces."""
        now = time.time()
        data = [(*row, now) for row in rows]
        with closing(sqlite3.connect(self.path, timeout=30.0)) as db, db:
            db.executemany(
                "INSERT OR REPLACE INTO judge_dimension_scores VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                data,
            )
        return len(data)

    def get(self, key: str) -> TrackRecord:
        """The record of one identity (zero items if it has none)."""
        with closing(sqlite3.connect(self.path, timeout=30.0)) as db:
            items, correct = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(correct), 0) FROM judge_calls WHERE identity = ?",
                (key,),
            ).fetchone()
            scored = db.execute(
                "SELECT dimension, judge, people FROM judge_dimension_scores WHERE identity = ?",
                (key,),
            ).fetchall()
        return TrackRecord(
            identity=key,
            items=int(items),
            correct=int(correct),
            dimensions=dimension_agreement(scored),
        )

    def all_accuracies(self) -> dict[str, float]:
        """Shrunk accuracy of every identity with history."""
        with closing(sqlite3.connect(self.path, timeout=30.0)) as db:
            rows = db.execute(
                "SELECT identity, COUNT(*), SUM(correct) FROM judge_calls GROUP BY identity"
            ).fetchall()
        return {
            key: TrackRecord(identity=key, items=int(n), correct=int(c)).accuracy
            for key, n, c in rows
        }


def dimension_agreement(
    scored: Iterable[tuple[str, float, float]],
) -> dict[str, DimensionAgreement]:
    """Interval alpha per dimension from ``(dimension, judge, people)`` triples."""
    from debate.stats import krippendorff_alpha  # numpy: not for a run reading track records

    by_dimension: dict[str, list[tuple[float, float]]] = {}
    for dimension, judge, people in scored:
        by_dimension.setdefault(dimension, []).append((float(judge), float(people)))
    out = {}
    for dimension, pairs in sorted(by_dimension.items()):
        alpha = (
            krippendorff_alpha([[j for j, _ in pairs], [p for _, p in pairs]], "interval")
            if len(pairs) >= 2
            else math.nan
        )
        out[dimension] = DimensionAgreement(
            pairs=len(pairs), alpha=None if math.isnan(alpha) else float(alpha)
        )
    return out
