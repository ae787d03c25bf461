"""Judge track records: calls on items with a known answer, and the weight they earn.

A judge identity is role x model x template version. Its record (items seen, correct
calls) lives in the run store. The panel's judge weight is

    0.7 x domain weight + 0.3 x accuracy

where accuracy is 1.0 for a judge without history and otherwise the observed accuracy
shrunk toward that prior by ``PRIOR_ITEMS`` pseudo-items:

    accuracy = (correct + PRIOR_ITEMS x 1.0) / (items + PRIOR_ITEMS)

so one lucky or unlucky item moves a weight a little, and thirty move it a lot.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Mapping
from contextlib import closing
from pathlib import Path

from pydantic import BaseModel, ConfigDict

TEMPLATE_VERSION = "1"
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
"""


def identity(role: str, model: str, template_version: str = TEMPLATE_VERSION) -> str:
    """The key of a judge's track record."""
    return f"{role}|{model}|v{template_version}"


class TrackRecord(BaseModel):
    """What the store knows about one judge identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    identity: str
    items: int
    correct: int

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

    def get(self, key: str) -> TrackRecord:
        """The record of one identity (zero items if it has none)."""
        with closing(sqlite3.connect(self.path, timeout=30.0)) as db:
            items, correct = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(correct), 0) FROM judge_calls WHERE identity = ?",
                (key,),
            ).fetchone()
        return TrackRecord(identity=key, items=int(items), correct=int(correct))

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

    def accuracies(self, keys: Iterable[str]) -> Mapping[str, float]:
        """Shrunk accuracy per identity; identities without history get 1.0."""
        return {key: self.get(key).accuracy for key in keys}
