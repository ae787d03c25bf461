"""The service's durable jobs: one SQLite file (WAL) of jobs and their progress events.

A job is accepted once it is a row here, so a server killed with SIGKILL loses nothing it
answered ``202`` to: at start-up :meth:`JobStore.recover` puts the jobs it was running back
in the queue, and the response cache (which may live in the same file, table
``responses``) replays the model calls that had completed.

Every method is one short transaction. Writers take the write lock at the start
(``BEGIN IMMEDIATE``), so a read-then-write (claiming the oldest queued jobs, the next
event number, an idempotent submit) cannot interleave with another thread's or another
process's; WAL lets readers go on while one writes. Each thread gets its own connection.

Ids are ULIDs (26 Crockford base-32 characters: a millisecond timestamp, then 80 random
bits), so they sort by creation time across processes and reveal nothing but that time.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, get_args

from debate.records import draw_seed
from debate.service._feed import PollWatch
from debate.service._models import (
    FINAL,
    CouncilRequest,
    DebateRequest,
    DecisionRequest,
    Job,
    JobError,
    JobEvent,
    JobKind,
    JobRequest,
    JobStatus,
    JobSummary,
    JudgementRequest,
)
from debate.service._summary import SQLITE_COLUMNS, row_summary, where_clause
from debate.storage import ResponseCache, write_lock, write_transaction

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

REQUESTS: dict[str, type[JobRequest]] = {
    "debate": DebateRequest,
    "judgement": JudgementRequest,
    "council": CouncilRequest,
    "decision": DecisionRequest,
}
"""The request model of each job kind (a stored request is read back by its job's kind)."""

STATUSES: tuple[JobStatus, ...] = get_args(JobStatus)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_COLUMNS = "id, kind, status, created, started, finished, outcome, result, error, events, request"
POLL_S = 0.25
"""How often an event stream on a SQLite store reads the store for new events."""


class IdempotencyConflict(ValueError):
    """A repeated ``Idempotency-Key`` with another request body (HTTP ``409``).

    The key names one request: answering a different body with the first one's job would
    hide the client's mistake, and running it would break the key's promise.
    """

    def __init__(self, job: Job) -> None:
        self.job = job
        """The job the key already names."""
        self.error = JobError(
            kind="conflict",
            message=f"Idempotency-Key: already used for job {job.id} with another request "
            "body; send the same body to get that job, or use a new key",
            field="Idempotency-Key",
        )
        super().__init__(self.error.message)

    status = 409


class QueueFull(ValueError):
    """No room for another job (HTTP ``429`` with ``Retry-After``).

    The queue is at its bound, or the token has its share of it. Checked inside the
    submit's transaction, so concurrent submits cannot overshoot the bound, and after the
    idempotency lookup, so a retried POST of an accepted job gets its job even when the
    queue has filled since.
    """

    status = 429

    def __init__(self, message: str) -> None:
        self.error = JobError(kind="rate_limit", message=message)
        super().__init__(message)


def new_id(now: float | None = None) -> str:
    """A ULID: 48 bits of milliseconds, 80 random bits, in 26 Crockford base-32 characters."""
    ms = int((time.time() if now is None else now) * 1000)
    value = (ms << 80) | secrets.randbits(80)
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def token_id(token: str | None) -> str:
    """What the store keeps of a client's token: 16 hex digits of its SHA-256 ('' for none).

    The caller may pass the bearer token or its configured digest (always the same one), and
    the store never holds either.
    """
    if not token:
        return ""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


def with_seed(request: JobRequest) -> JobRequest:
    """The request with its seed fixed (drawn now if the client gave none).

    A re-run after a crash must send the very requests the first run sent, so that the
    response cache answers the calls that had completed: the seed is part of every call's
    cache key, so it is chosen once, at submit, and stored with the job.
    """
    if isinstance(request, DecisionRequest) or request.config.seed is not None:
        return request
    config = request.config.model_copy(update={"seed": draw_seed()})
    return request.model_copy(update={"config": config})


def _digest(request: JobRequest) -> str:
    return hashlib.sha256(request.model_dump_json().encode("utf-8")).hexdigest()


class JobStore:
    """Jobs and events in one SQLite file, shared by threads and processes.

    Args:
        path: The database file (created with its folder if missing).
        timeout: Seconds a writer waits for another's lock before failing.
    """

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
        with self._write() as db:
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
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its first statement."""
        with write_transaction(self._db(), self._write_lock, self.timeout) as db:
            yield db

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

    # -- submitting and reading ------------------------------------------------------------

    def submit(
        self,
        kind: JobKind,
        request: JobRequest,
        *,
        token: str | None,
        idempotency_key: str | None,
        room: tuple[int, int] | None = None,
    ) -> tuple[Job, bool]:
        """Queue a job, or return the job an earlier submit with the same key made.

        Args:
            kind: The job's kind; ``request`` must be its request model.
            request: What to run.
            token: The submitter's token (None: no auth); the job is its own.
            idempotency_key: The client's key for this request, or None.
            room: ``(bound, share)``: refuse a new job when ``bound`` jobs are queued or
                running, or ``share`` of them are this token's (None: no limit).

        Returns:
            The job, and True if this call created it.

        Raises:
            IdempotencyConflict: ``idempotency_key`` was used by this token for another
                request body.
            QueueFull: no room (see ``room``).
            ValueError: ``request`` is not the request model of ``kind``.
        """
        if not isinstance(request, REQUESTS[kind]):
            raise ValueError(f"kind: a {kind} job takes a {REQUESTS[kind].__name__}")
        who, digest, now = token_id(token), _digest(request), time.time()
        with self._write() as db:
            if idempotency_key is not None:
                row = db.execute(
                    f"SELECT {_COLUMNS}, digest FROM jobs WHERE token = ? AND idempotency_key = ?",
                    (who, idempotency_key),
                ).fetchone()
                if row is not None:
                    if row["digest"] != digest:
                        raise IdempotencyConflict(_job(row))
                    return _job(row), False
            if room is not None:
                _check_room(db, who, *room)
            job_id = new_id(now)
            db.execute(
                "INSERT INTO jobs (id, kind, status, request, digest, token, idempotency_key, "
                "created) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?)",
                (job_id, kind, with_seed(request).model_dump_json(), digest, who,
                 idempotency_key, now),
            )  # fmt: skip
            _append(db, job_id, "queued", {"kind": kind}, now)
            return self._get(db, job_id), True

    def get(self, job_id: str) -> Job | None:
        """The job, or None if there is none with that id."""
        row = self._db().execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else _job(row)

    def owns(self, job_id: str, token: str | None) -> bool:
        """Whether the job was submitted with ``token`` (a token sees only its own jobs)."""
        row = (
            self._db()
            .execute("SELECT 1 FROM jobs WHERE id = ? AND token = ?", (job_id, token_id(token)))
            .fetchone()
        )
        return row is not None

    def request(self, job_id: str) -> JobRequest | None:
        """The job's stored request (its seed fixed), as the model of its kind."""
        row = self._db().execute("SELECT kind, request FROM jobs WHERE id = ?", (job_id,))
        found = row.fetchone()
        return None if found is None else _request(found["kind"], found["request"])

    def list(self, limit: int = 100, token: str | None = None) -> builtins.list[Job]:
        """The newest jobs first (of one token's, when ``token`` is given)."""
        where, args = ("WHERE token = ?", [token_id(token)]) if token is not None else ("", [])
        rows = self._db().execute(
            f"SELECT {_COLUMNS} FROM jobs {where} ORDER BY rowid DESC LIMIT ?", (*args, limit)
        )
        return [_job(row) for row in rows]

    def summaries(
        self,
        limit: int = 100,
        token: str | None = None,
        *,
        status: str | None = None,
        outcome: str | None = None,
    ) -> builtins.list[JobSummary]:
        """The newest jobs' summaries first, filtered in the query (see ``_summary``)."""
        key = None if token is None else token_id(token)
        where, args = where_clause("?", status=status, outcome=outcome, token=key)
        rows = self._db().execute(
            f"SELECT {SQLITE_COLUMNS} FROM jobs {where} ORDER BY rowid DESC LIMIT ?",
            (*args, limit),
        )
        return [row_summary(tuple(row)) for row in rows]

    def counts(self) -> dict[JobStatus, int]:
        """How many jobs are in each status (every status listed, 0 included)."""
        counts: dict[JobStatus, int] = dict.fromkeys(STATUSES, 0)
        for status, n in self._db().execute("SELECT status, COUNT(*) FROM jobs GROUP BY status"):
            counts[status] = n
        return counts

    def active(self, token: str | None = None) -> int:
        """Jobs queued or running (of one token's, when ``token`` is given): the queue bound."""
        sql = "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')"
        args: tuple[str, ...] = ()
        if token is not None:
            sql, args = sql + " AND token = ?", (token_id(token),)
        return int(self._db().execute(sql, args).fetchone()[0])

    def _get(self, db: sqlite3.Connection, job_id: str) -> Job:
        return _job(db.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone())

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
        with self._write() as db:
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
                row = db.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
                found = row.fetchone()
                claimed.append((_job(found), _request(found["kind"], found["request"])))
        return claimed

    def renew(self, job_ids: Sequence[str]) -> set[str]:
        """Nothing to renew: a SQLite store's runner holds its jobs until it stops."""
        return set()

    def finish(self, job_id: str, result: dict[str, Any], outcome: str | None) -> Job | None:
        """Record a job's result (``done``); a job already final is left as it is."""
        data = {"outcome": outcome} if outcome is not None else {}
        return self._end(job_id, "done", "done", data, outcome=outcome, result=json.dumps(result))

    def fail(self, job_id: str, error: JobError) -> Job | None:
        """Record why a job failed (``failed``); a job already final is left as it is."""
        data = error.model_dump(exclude_none=True)
        return self._end(job_id, "failed", "failed", data, error=error.model_dump_json())

    def cancel(self, job_id: str) -> Job | None:
        """Cancel a job: a queued one at once; a running one is flagged for its runner.

        Returns the job as it now is (still ``running`` when flagged; the runner polls
        :meth:`cancel_requested` and ends it with :meth:`cancelled`), or None if unknown.
        """
        with self._write() as db:
            row = db.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                return None
            if row["status"] == "queued":
                _close(db, job_id, "cancelled", "cancelled", {}, error=_CANCELLED)
            elif row["status"] == "running":
                flagged = db.execute(
                    "UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND cancel_requested = 0",
                    (job_id,),
                )
                if flagged.rowcount:
                    _append(db, job_id, "cancel_requested", {}, time.time())
            return self._get(db, job_id)

    def cancel_requested(self, job_ids: Sequence[str]) -> set[str]:
        """Which of these running jobs a client asked to cancel."""
        if not job_ids:
            return set()
        marks = ",".join("?" * len(job_ids))
        rows = self._db().execute(
            f"SELECT id FROM jobs WHERE cancel_requested = 1 AND status = 'running' "
            f"AND id IN ({marks})",
            tuple(job_ids),
        )
        return {row[0] for row in rows}

    def cancelled(self, job_id: str) -> Job | None:
        """Record that the runner stopped a running job a client cancelled."""
        return self._end(job_id, "cancelled", "cancelled", {}, error=_CANCELLED)

    def requeue(self, job_id: str, reason: str = "shutdown") -> Job | None:
        """Put a running job back in the queue (its runner is stopping); event ``requeued``."""
        with self._write() as db:
            moved = db.execute(
                "UPDATE jobs SET status = 'queued', started = NULL "
                "WHERE id = ? AND status = 'running'",
                (job_id,),
            )
            if moved.rowcount:
                _append(db, job_id, "requeued", {"reason": reason}, time.time())
            found = db.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return None if found is None else self._get(db, job_id)

    def recover(self) -> int:
        """At start-up: put the jobs a killed process left ``running`` back in the queue.

        Returns how many were requeued. A job whose cancel was requested before the crash
        is cancelled instead. Call it only where no other runner is using the file: a job a
        live runner holds would run twice (the response cache keeps its calls from being
        paid twice, but its events would repeat).
        """
        with self._write() as db:
            rows = db.execute("SELECT id, cancel_requested FROM jobs WHERE status = 'running'")
            running = [(row[0], bool(row[1])) for row in rows.fetchall()]
            now, requeued = time.time(), 0
            for job_id, cancelling in running:
                if cancelling:
                    _close(db, job_id, "cancelled", "cancelled", {}, error=_CANCELLED)
                    continue
                db.execute(
                    "UPDATE jobs SET status = 'queued', started = NULL WHERE id = ?", (job_id,)
                )
                _append(db, job_id, "requeued", {"reason": "restart"}, now)
                requeued += 1
        return requeued

    def _end(
        self, job_id: str, status: JobStatus, event: str, data: dict[str, Any], **columns: Any
    ) -> Job | None:
        with self._write() as db:
            found = db.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if found is None:
                return None
            _close(db, job_id, status, event, data, **columns)
            return self._get(db, job_id)

    # -- events ----------------------------------------------------------------------------

    def append_event(self, job_id: str, type: str, data: dict[str, Any]) -> JobEvent:  # noqa: A002
        """Record one event of a job, numbered after the last (raises KeyError: no such job)."""
        with self._write() as db:
            return _append(db, job_id, type, data, time.time())

    def append_events(self, events: Sequence[tuple[str, str, dict[str, Any], float]]) -> None:
        """Record events ``(job, type, data, time)`` in order, in one write transaction.

        The runner buffers a job's progress and writes it this way, a few times a second:
        a transaction per event was a quarter of the runner's CPU under load. An event of
        a job that no longer exists is dropped (it was deleted while running).
        """
        if not events:
            return
        with self._write() as db:
            for job_id, kind, data, when in events:
                with suppress(KeyError):
                    _append(db, job_id, kind, data, when)

    def events(self, job_id: str, after: int = 0) -> builtins.list[JobEvent]:
        """The job's events with ``seq`` above ``after``, in order (SSE ``Last-Event-ID``)."""
        rows = self._db().execute(
            "SELECT job, seq, type, time, data FROM events WHERE job = ? AND seq > ? ORDER BY seq",
            (job_id, after),
        )
        return [
            JobEvent(job=r[0], seq=r[1], type=r[2], time=r[3], data=json.loads(r[4])) for r in rows
        ]


_CANCELLED = JobError(kind="cancelled", message="cancelled by the client").model_dump_json()


def _check_room(db: sqlite3.Connection, who: str, bound: int, share: int) -> None:
    active = "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')"
    total = int(db.execute(active).fetchone()[0])
    if total >= bound:
        raise QueueFull(f"queue: full ({total} jobs queued or running); retry later")
    if who and (mine := int(db.execute(active + " AND token = ?", (who,)).fetchone()[0])) >= share:
        raise QueueFull(
            f"queue: this token has {mine} jobs queued or running, its share; retry later"
        )


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


def within_share(
    candidates: Iterable[tuple[str, str]], running: dict[str, int], per_token: int, limit: int
) -> builtins.list[str]:
    """The first ``limit`` candidate jobs whose token stays within its share of running jobs.

    ``candidates`` are ``(id, token)`` in claim order; a job counts toward its token's
    ``running`` as it is chosen (``running`` is updated). Both stores' claims use it: the
    order and the running counts are theirs, the rule is one.
    """
    chosen: builtins.list[str] = []
    for job_id, token in candidates:
        if token and running.get(token, 0) >= per_token:
            continue
        if token:
            running[token] = running.get(token, 0) + 1
        chosen.append(job_id)
        if len(chosen) == limit:
            break
    return chosen


def _close(
    db: sqlite3.Connection,
    job_id: str,
    status: JobStatus,
    event: str,
    data: dict[str, Any],
    **columns: Any,
) -> None:
    """End a job that is not final yet (a final job keeps its end: first writer wins)."""
    now = time.time()
    sets = "".join(f", {name} = ?" for name in columns)
    finals = ",".join(f"'{s}'" for s in FINAL)
    ended = db.execute(
        f"UPDATE jobs SET status = ?, finished = ?{sets} WHERE id = ? AND status NOT IN ({finals})",
        (status, now, *columns.values(), job_id),
    )
    if ended.rowcount:
        _append(db, job_id, event, data, now)


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


def _request(kind: str, text: str) -> JobRequest:
    return REQUESTS[kind].model_validate_json(text)


def _job(row: sqlite3.Row) -> Job:
    return Job(
        id=row["id"],
        kind=row["kind"],
        status=row["status"],
        created=row["created"],
        started=row["started"],
        finished=row["finished"],
        outcome=row["outcome"],
        result=None if row["result"] is None else json.loads(row["result"]),
        error=None if row["error"] is None else JobError.model_validate_json(row["error"]),
        events=row["events"],
    )
