"""The service's durable jobs: one SQLite file (WAL) of jobs and their progress events.

A job is accepted once it is a row here, so a server killed with SIGKILL loses nothing it
answered ``202`` to: at start-up :meth:`JobStore.recover` puts the jobs it was running back
in the queue, and the response cache (which may live in the same file, table
``responses``) replays the model calls that had completed.

Every method is one short transaction. Writers take the write lock at the start
(``BEGIN IMMEDIATE``), so a read-then-write (claiming the oldest queued jobs, the next
event number, an idempotent submit) cannot interleave with another thread's or another
process's; WAL lets readers go on while one writes. Each thread gets its own connection.
What both stores do alike (submitting, reading, ending) is :class:`StoreBase`'s; ids and
the refusals of a submit are :mod:`debate.service._jobs`'s.
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from debate.service._feed import PollWatch
from debate.service._jobs import (
    CANCELLED,
    COLUMNS,
    IdempotencyConflict,
    Pending,
    QueueFull,
    check_share,
    new_id,
    row_job,
    stored_request,
    token_id,
    within_share,
)
from debate.service._models import Job, JobEvent, JobKind, JobRequest
from debate.service._storebase import INSERT_COLUMNS, StoreBase
from debate.service._summary import SQLITE_COLUMNS
from debate.storage import ResponseCache, write_lock, write_transaction

__all__ = ["IdempotencyConflict", "JobStore", "QueueFull", "new_id", "token_id"]

SCHEMA_SQL = (
    """CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    digest TEXT NOT NULL,  -- of the request as the client sent it (before a seed was drawn)
    token TEXT NOT NULL DEFAULT '',  -- token_id() of the client's token; '' without auth
    idempotency_key TEXT,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    outcome TEXT,
    result TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    events INTEGER NOT NULL DEFAULT 0  -- the last event's seq
)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS jobs_idempotency
    ON jobs (token, idempotency_key) WHERE idempotency_key IS NOT NULL""",
    "CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status)",
    """CREATE TABLE IF NOT EXISTS events (
    job TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (job, seq)
) WITHOUT ROWID""",
)

POLL_S = 0.25
"""How often an event stream on a SQLite store reads the store for new events."""


class JobStore(StoreBase):
    """Jobs and events in one SQLite file, shared by threads and processes.

    Args:
        path: The database file (created with its folder if missing).
        timeout: Seconds a writer waits for another's lock before failing.
    """

    _SUMMARY_COLUMNS = SQLITE_COLUMNS

    lease: float | None = None
    """No leases: one server owns the file (its start recovers what a killed one left)."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.timeout = timeout
        self._local = threading.local()
        self._write_lock = write_lock(self.path)
        self._all: builtins.list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with self._writing() as db:
            for statement in SCHEMA_SQL:
                db.execute(statement)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None or getattr(self._local, "pid", None) != os.getpid():
            db = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
            self._local.db, self._local.pid = db, os.getpid()
            with self._lock:
                self._all.append(db)
        return db

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its first statement."""
        with write_transaction(self._db(), self._write_lock, self.timeout) as db:
            yield db

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        yield self._db()

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._lock:
            connections, self._all = self._all, []
        for db in connections:
            db.close()
        self._local = threading.local()

    def open_cache(self) -> ResponseCache:
        """The response cache for this store's runner: table ``responses`` of the same file."""
        return ResponseCache(self.path)

    def watch(self, job_id: str) -> PollWatch:
        """An event stream on this store polls it (every :data:`POLL_S` seconds)."""
        return PollWatch(POLL_S)

    def unwritable(self) -> str | None:
        """Why the file cannot take a write now, or None: takes its write lock and lets go."""
        try:
            db = sqlite3.connect(self.path, timeout=1.0)
            try:
                db.execute("BEGIN IMMEDIATE")
                db.rollback()
            finally:
                db.close()
        except sqlite3.Error as exc:
            return f"database: {self.path} cannot be written ({exc})"
        return None

    # -- what the shared methods need (see StoreBase) --------------------------------------

    def _check_room(self, db: sqlite3.Connection, who: str, bound: int, share: int) -> None:
        active = "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')"
        total = int(db.execute(active).fetchone()[0])
        mine = 0
        if who and total < bound:
            mine = int(db.execute(active + " AND token = ?", (who,)).fetchone()[0])
        check_share(total, mine, who, bound, share)

    def _insert(
        self, db: sqlite3.Connection, job_id: str, kind: JobKind, values: tuple[Any, ...]
    ) -> Job:
        db.execute(
            f"INSERT INTO jobs (id, kind, status, {INSERT_COLUMNS}) "
            "VALUES (?, ?, 'queued', ?, ?, ?, ?, ?)",
            (job_id, kind, *values),
        )
        _append(db, job_id, "queued", {"kind": kind}, values[-1])
        return self._fetch(db, job_id)

    def _add_event(self, db: sqlite3.Connection, event: Pending) -> JobEvent:
        return _append(db, *event)

    def _add_events(self, db: sqlite3.Connection, events: Sequence[Pending]) -> None:
        """One numbering per job and one ``executemany`` for the rows.

        Two statements per event (number, insert) were most of the writer thread's work.
        """
        by_job: dict[str, builtins.list[Pending]] = {}
        for event in events:
            by_job.setdefault(event[0], []).append(event)
        rows = []
        for job_id, own in by_job.items():
            last = db.execute(
                "UPDATE jobs SET events = events + ? WHERE id = ? RETURNING events",
                (len(own), job_id),
            ).fetchone()
            if last is None:  # the job was deleted while it ran: its events go with it
                continue
            first = int(last[0]) - len(own) + 1
            rows += [
                (job_id, first + k, kind, when, json.dumps(data))
                for k, (_, kind, data, when) in enumerate(own)
            ]
        db.executemany(
            "INSERT INTO events (job, seq, type, time, data) VALUES (?, ?, ?, ?, ?)", rows
        )

    # -- running ---------------------------------------------------------------------------

    def claim(
        self, limit: int = 1, *, per_token: int | None = None
    ) -> builtins.list[tuple[Job, JobRequest]]:
        """Move the oldest queued jobs to ``running`` (at most ``limit``), atomically.

        Two workers (threads or processes) never claim the same job: the select and the
        update are one write transaction. With ``per_token``, a token already running that
        many jobs is passed over (its jobs wait, in order, while other tokens' run); jobs
        submitted without a token are bounded by ``limit`` alone.
        """
        if limit < 1:
            return []
        now = time.time()
        with self._writing() as db:
            chosen = _pick(db, limit, per_token)
            claimed = []
            for job_id in chosen:
                db.execute(
                    "UPDATE jobs SET status = 'running', started = ?, attempts = attempts + 1 "
                    "WHERE id = ?",
                    (now, job_id),
                )
                attempt = db.execute("SELECT attempts FROM jobs WHERE id = ?", (job_id,))
                _append(db, job_id, "running", {"attempt": attempt.fetchone()[0]}, now)
                row = db.execute(
                    f"SELECT {COLUMNS}, kind, request FROM jobs WHERE id = ?", (job_id,)
                ).fetchone()
                claimed.append((row_job(row), stored_request(row[10], row[11])))
        return claimed

    def renew(self, job_ids: Sequence[str]) -> set[str]:
        """Nothing to renew: a SQLite store's runner holds its jobs until it stops."""
        return set()

    def recover(self) -> int:
        """At start-up: put the jobs a killed process left ``running`` back in the queue.

        Returns how many were requeued. A job whose cancel was requested before the crash
        is cancelled instead. Call it only where no other runner is using the file: a job a
        live runner holds would run twice (the response cache keeps its calls from being
        paid twice, but its events would repeat).
        """
        with self._writing() as db:
            rows = db.execute("SELECT id, cancel_requested FROM jobs WHERE status = 'running'")
            running = [(row[0], bool(row[1])) for row in rows.fetchall()]
            now, requeued = time.time(), 0
            for job_id, cancelling in running:
                if cancelling:
                    self._close(db, job_id, "cancelled", "cancelled", {}, error=CANCELLED)
                    continue
                db.execute(
                    "UPDATE jobs SET status = 'queued', started = NULL WHERE id = ?", (job_id,)
                )
                _append(db, job_id, "requeued", {"reason": "restart"}, now)
                requeued += 1
        return requeued


def _pick(db: sqlite3.Connection, limit: int, per_token: int | None) -> builtins.list[str]:
    """The oldest queued jobs that may start, passing over tokens at their limit."""
    if per_token is None:
        rows = db.execute(
            "SELECT id FROM jobs WHERE status = 'queued' ORDER BY rowid LIMIT ?", (limit,)
        )
        return [row[0] for row in rows]
    running: dict[str, int] = dict(
        db.execute(
            "SELECT token, COUNT(*) FROM jobs WHERE status = 'running' AND token != '' "
            "GROUP BY token"
        ).fetchall()
    )
    queued = db.execute("SELECT id, token FROM jobs WHERE status = 'queued' ORDER BY rowid")
    return within_share(queued, running, per_token, limit)


def _append(
    db: sqlite3.Connection,
    job_id: str,
    type: str,  # noqa: A002
    data: dict[str, Any],
    now: float,
) -> JobEvent:
    """Number and insert one event, inside the caller's write transaction."""
    row = db.execute(
        "UPDATE jobs SET events = events + 1 WHERE id = ? RETURNING events", (job_id,)
    ).fetchone()
    if row is None:
        raise KeyError(f"job {job_id}: no such job")
    seq = int(row[0])
    db.execute(
        "INSERT INTO events (job, seq, type, time, data) VALUES (?, ?, ?, ?, ?)",
        (job_id, seq, type, now, json.dumps(data)),
    )
    return JobEvent(job=job_id, seq=seq, type=type, time=now, data=data)
