"""The run store: every judged debate, one row per judge x argument x reading.

It is what the bias audit reads (and, later, judge track records). SQLite in WAL mode with
one transaction per run, so concurrent runs can share it. Its default place is the user's
data directory; ``--store PATH`` or ``DEBATE_STORE`` moves it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from debate.exceptions import ConfigurationError
from debate.records import (
    CouncilResult,
    DebateResult,
    Frozen,
    JudgeEvaluation,
    RubricScore,
    side_of,
)

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    topic TEXT NOT NULL,
    seed INTEGER,
    outcome TEXT NOT NULL,
    winner TEXT,
    result_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS observations (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    judge TEXT NOT NULL,
    role TEXT NOT NULL,
    model TEXT NOT NULL,
    reading INTEGER NOT NULL,
    argument_id TEXT NOT NULL,
    side TEXT NOT NULL,
    shown_position INTEGER NOT NULL,
    arguments_shown INTEGER NOT NULL,
    side_shown_first TEXT NOT NULL,
    length_chars INTEGER NOT NULL,
    raw_score REAL NOT NULL,
    calibrated_score REAL NOT NULL,
    author_model TEXT
);
CREATE INDEX IF NOT EXISTS observations_judge ON observations(role, model);
CREATE TABLE IF NOT EXISTS council_entries (
    run_id TEXT NOT NULL,
    created REAL NOT NULL,
    question TEXT NOT NULL,
    category TEXT,
    candidate TEXT NOT NULL,
    model TEXT NOT NULL,
    borda REAL NOT NULL,
    borda_normalized REAL NOT NULL,
    votes INTEGER NOT NULL,
    first_places INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    candidates INTEGER NOT NULL,
    PRIMARY KEY (run_id, candidate)
);
"""
COUNCIL_READINGS = """
CREATE TABLE IF NOT EXISTS council_readings (
    run_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    model TEXT NOT NULL,
    candidate TEXT NOT NULL,
    shown_position INTEGER NOT NULL,
    candidates_shown INTEGER NOT NULL,
    score REAL NOT NULL,
    self_vote INTEGER NOT NULL,
    PRIMARY KEY (run_id, reviewer, candidate)
);
"""
"""One row per scored council reviewer x candidate: where the reviewer was shown the
candidate and what it scored it, for the position audit (ADR-017)."""


class LeaderboardRow(Frozen):
    """One model across council questions."""

    model: str
    mean_borda: float
    """Mean over questions of the normalised Borda score (1 = always first, 0 = always
    last), so each question counts once whatever its number of candidates."""
    total_votes: int
    first_places: int
    appearances: int
    confidence: Literal["high", "medium", "low"]
    """By appearances: at least 10 high, at least 3 medium, else low."""


def default_store_path() -> Path:
    """``DEBATE_STORE``, else ``<user data dir>/debate/store.sqlite``."""
    env = os.environ.get("DEBATE_STORE")
    if env:
        return Path(env)
    if sys.platform == "win32":  # pragma: no cover
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":  # pragma: no cover
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
    return base / "debate" / "store.sqlite"


class RunStore:
    """Records judged debates for the audit."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        try:
            if self.path.is_dir():
                raise IsADirectoryError(21, "is a folder", str(self.path))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.executescript(SCHEMA + COUNCIL_READINGS)
        except (OSError, sqlite3.Error) as exc:
            # a store that cannot be opened is a path the user chose (--store, DEBATE_STORE)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigurationError(
                f"run store {self.path}: cannot open it ({reason}); give a writable SQLite "
                "file path with --store or DEBATE_STORE, or use --no-store"
            ) from exc

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            with db:
                yield db
        finally:
            db.close()

    def record(self, result: DebateResult, *, authors: Mapping[str, str] | None = None) -> str:
        """Store one result; ``authors`` maps a side (PRO/CON) to the model that argued it.

        Returns:
            The run id: a digest of the result, so recording the same result twice is a no-op.
        """
        blob = result.model_dump_json()
        run_id = _run_id(blob)
        rows = list(observation_rows(result, authors if authors is not None else result.debaters))
        with self._connect() as db:
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                return run_id
            db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    result.topic,
                    result.seed,
                    result.decision.outcome,
                    result.decision.winner,
                    blob,
                ),
            )
            db.executemany(
                "INSERT INTO observations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, *row) for row in rows],
            )
        return run_id

    def record_council(self, result: CouncilResult, *, category: str | None = None) -> str | None:
        """Store a council result's ranking for the cross-question leaderboard.

        The leaderboard ranks models, so only ranked candidates with an ``author_model``
        are stored (a candidate id is never put in the model column), and only councils
        where at least two reviewers scored (one reviewer's ranking is not a council's).
        Borda is normalised by the number of ranked candidates.

        Returns:
            The run id, or None when nothing qualified (the reason is logged).
        """
        rows = council_rows(result)
        run_id = _run_id(result.model_dump_json())
        with self._connect() as db:
            # The reading positions serve the bias audit even when the leaderboard takes
            # nothing (see council_reading_rows).
            db.executemany(
                "INSERT OR IGNORE INTO council_readings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, *row) for row in council_reading_rows(result)],
            )
            if not rows:
                return None
            now = time.time()
            db.executemany(
                "INSERT OR IGNORE INTO council_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, now, result.question, category, *row) for row in rows],
            )
        return run_id

    def council_readings(self) -> list[dict[str, object]]:
        """Every council reading row, as dicts."""
        with self._connect() as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM council_readings")]

    def leaderboard(
        self, *, since_days: float | None = None, category: str | None = None
    ) -> list[LeaderboardRow]:
        """Models ranked by their mean normalised Borda score across questions."""
        query = (
            "SELECT model, AVG(borda_normalized), SUM(votes), SUM(first_places), "
            "COUNT(DISTINCT run_id) FROM council_entries WHERE 1=1"
        )
        params: list[object] = []
        if since_days is not None:
            query += " AND created >= ?"
            params.append(time.time() - since_days * 86400)
        if category is not None:
            query += " AND category = ?"
            params.append(category)
        query += (
            " GROUP BY model ORDER BY AVG(borda_normalized) DESC, SUM(first_places) DESC, model"
        )
        with self._connect() as db:
            rows = db.execute(query, params).fetchall()
        return [
            LeaderboardRow(
                model=m,
                mean_borda=float(b),
                total_votes=int(v),
                first_places=int(f),
                appearances=int(a),
                confidence="high" if a >= 10 else "medium" if a >= 3 else "low",
            )
            for m, b, v, f, a in rows
        ]

    def observations(self) -> list[dict[str, object]]:
        """Every observation row, as dicts."""
        with self._connect() as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM observations")]

    def count_runs(self) -> int:
        """How many runs are recorded."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _run_id(blob: str) -> str:
    """A result's id: a digest of its JSON, so the same result recorded twice is one run."""
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def council_rows(result: CouncilResult) -> list[tuple[object, ...]]:
    """The leaderboard rows of a council: ranked, model-written candidates, two scorers."""
    if result.agreement.reviewers_scored < 2:
        log.warning(
            "council not recorded for the leaderboard: %d reviewer(s) scored; it needs two",
            result.agreement.reviewers_scored,
        )
        return []
    authors = {c.id: c.author_model for c in result.candidates}
    n = len(result.rankings)
    rows: list[tuple[object, ...]] = [
        (e.candidate, authors[e.candidate], e.borda, e.borda / (n - 1), e.votes)
        + (e.first_places, e.rank, n)
        for e in result.rankings
        if authors.get(e.candidate) is not None
    ]
    skipped = [e.candidate for e in result.rankings if authors.get(e.candidate) is None]
    if skipped:
        log.info("not on the leaderboard (no author_model): %s", ", ".join(skipped))
    return rows


def _readings(e: JudgeEvaluation) -> list[tuple[dict[str, RubricScore], dict[str, int]]]:
    readings = []
    if e.scores is not None:
        readings.append((e.scores, e.positions))
    if e.swap is not None and e.swap.scores is not None:
        readings.append((e.swap.scores, e.swap.positions))
    return readings


def observation_rows(
    result: DebateResult, authors: Mapping[str, str]
) -> Iterator[tuple[object, ...]]:
    """One row per scored judge x reading x argument, with the calibrated score."""
    import numpy as np  # here: a store opened before a run does not import numpy

    from debate.stats import calibrate

    transcript = result.transcript
    ids = transcript.argument_ids
    lengths = {
        a.id: len(a.claim) + len(a.reasoning) + len(a.evidence) for a in transcript.arguments
    }
    weights = {j.name: j.weights for j in result.config.judges}
    for e in result.evaluations:
        for reading, (scores, positions) in enumerate(_readings(e)):
            raw = np.array([[scores[arg_id].weighted(weights[e.judge]) for arg_id in ids]])
            calibrated = calibrate(
                raw, result.vote.calibration, result.decision.thresholds.min_spread
            )[0]
            first = side_of(min(positions, key=positions.__getitem__))
            for a, (arg_id, side) in enumerate(zip(ids, transcript.sides, strict=True)):
                yield (
                    e.judge,
                    e.role,
                    e.model,
                    reading,
                    arg_id,
                    side,
                    positions[arg_id],
                    len(ids),
                    first,
                    lengths[arg_id],
                    float(raw[0, a]),
                    float(calibrated[a]),
                    authors.get(side),
                )


def council_reading_rows(result: CouncilResult) -> Iterator[tuple[object, ...]]:
    """One row per scored reviewer x candidate: position shown, weighted score, self-vote.

    The score is the reviewer's weighted rubric score before the council's accuracy ceiling
    and safety cap, so a reviewer's reading is measured, not the council's rules.
    """
    weights = result.config.council.weights
    shown = len(result.candidates)
    for review in result.reviews:
        if review.scores is None:
            continue
        for cid, score in sorted(review.scores.items()):
            weighted = sum(w * float(getattr(score, d)) for d, w in weights.items())
            yield (
                review.reviewer,
                review.model,
                cid,
                review.positions[cid],
                shown,
                weighted,
                int(cid in review.self_votes_excluded),
            )
