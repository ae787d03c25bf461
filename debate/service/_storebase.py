"""The job-store methods whose logic is the same on SQLite and on PostgreSQL.

:class:`StoreBase` writes each once, in SQL both databases take, with ``?`` for a
parameter (the PostgreSQL store turns it into ``%s``). A store supplies its connections
(:meth:`StoreBase._reading`, :meth:`StoreBase._writing`), how it numbers an event
(:meth:`StoreBase._add_event`) and ends a job (:meth:`StoreBase._close`), and what its
claims, leases and room checks do differently.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from debate.service._jobs import (
    CANCELLED,
    COLUMNS,
    FINALS,
    STATUSES,
    IdempotencyConflict,
    Pending,
    digest,
    new_id,
    row_job,
    stored_request,
    token_id,
    with_seed,
)
from debate.service._models import (
    REQUESTS,
    Job,
    JobError,
    JobEvent,
    JobKind,
    JobRequest,
    JobStatus,
    JobSummary,
)
from debate.service._summary import row_summary, where_clause

INSERT_COLUMNS = "request, digest, token, idempotency_key, created"
"""A new job's columns after its id and kind, in the order :meth:`StoreBase.submit` gives."""


class StoreBase:
    """Submitting, reading and ending jobs, over a store's own connections and SQL dialect."""

    _ORDER = "rowid"
    """The column that keeps submission order."""
    _SUMMARY_COLUMNS = ""
    """A summary row's columns in this database's JSON functions (``_summary``)."""
    _FOR_UPDATE = ""
    """What locks a row read before a write (nothing where the transaction locks it all)."""

    # -- what a store supplies -------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        """``sql`` with this database's parameter marker (``?`` as written)."""
        return sql

    def _reading(self) -> AbstractContextManager[Any]:
        """A connection for one read."""
        raise NotImplementedError

    def _writing(self) -> AbstractContextManager[Any]:
        """A connection in one write transaction."""
        raise NotImplementedError

    def _submitting(self) -> AbstractContextManager[Any]:
        """The write transaction of a submit (its lookup, room check and insert)."""
        return self._writing()

    def _check_room(self, db: Any, who: str, bound: int, share: int) -> None:
        raise NotImplementedError

    def _insert(self, db: Any, job_id: str, kind: JobKind, values: tuple[Any, ...]) -> Job:
        """Insert a queued job and its first event; ``values``: :data:`INSERT_COLUMNS`."""
        raise NotImplementedError

    _RELEASE = ""
    """What else ending a job clears (a PostgreSQL job's lease)."""

    def _add_event(self, db: Any, event: Pending) -> JobEvent:
        """Number and write one event inside ``db``'s transaction (KeyError: no such job)."""
        raise NotImplementedError

    def _holder(self) -> tuple[str, tuple[Any, ...]]:
        """The condition (and its arguments) that a running job is this store's runner's."""
        return "", ()

    def _add_events(self, db: Any, events: Sequence[Pending]) -> None:
        """Number and write events in order inside ``db``'s transaction; a gone job's drop."""
        raise NotImplementedError

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
        who, sent, now = token_id(token), digest(request), time.time()
        with self._submitting() as db:
            if idempotency_key is not None:
                row = db.execute(
                    self._sql(
                        f"SELECT {COLUMNS}, digest FROM jobs "
                        "WHERE token = ? AND idempotency_key = ?"
                    ),
                    (who, idempotency_key),
                ).fetchone()
                if row is not None:
                    if row[10] != sent:
                        raise IdempotencyConflict(row_job(row))
                    return row_job(row), False
            if room is not None:
                self._check_room(db, who, *room)
            values = (with_seed(request).model_dump_json(), sent, who, idempotency_key, now)
            return self._insert(db, new_id(now), kind, values), True

    def get(self, job_id: str) -> Job | None:
        """The job, or None if there is none with that id."""
        with self._reading() as db:
            row = db.execute(self._sql(f"SELECT {COLUMNS} FROM jobs WHERE id = ?"), (job_id,))
            found = row.fetchone()
        return None if found is None else row_job(found)

    def owns(self, job_id: str, token: str | None) -> bool:
        """Whether the job was submitted with ``token`` (a token sees only its own jobs)."""
        sql = self._sql("SELECT 1 FROM jobs WHERE id = ? AND token = ?")
        with self._reading() as db:
            return db.execute(sql, (job_id, token_id(token))).fetchone() is not None

    def request(self, job_id: str) -> JobRequest | None:
        """The job's stored request (its seed fixed), as the model of its kind."""
        with self._reading() as db:
            row = db.execute(self._sql("SELECT kind, request FROM jobs WHERE id = ?"), (job_id,))
            found = row.fetchone()
        return None if found is None else stored_request(found[0], found[1])

    def list(self, limit: int = 100, token: str | None = None) -> builtins.list[Job]:
        """The newest jobs first (of one token's, when ``token`` is given)."""
        where, args = ("WHERE token = ?", [token_id(token)]) if token is not None else ("", [])
        sql = f"SELECT {COLUMNS} FROM jobs {where} ORDER BY {self._ORDER} DESC LIMIT ?"
        with self._reading() as db:
            rows = db.execute(self._sql(sql), (*args, limit)).fetchall()
        return [row_job(row) for row in rows]

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
        sql = f"SELECT {self._SUMMARY_COLUMNS} FROM jobs {where} ORDER BY {self._ORDER} DESC"
        with self._reading() as db:
            rows = db.execute(self._sql(sql + " LIMIT ?"), (*args, limit)).fetchall()
        return [row_summary(tuple(row)) for row in rows]

    def counts(self) -> dict[JobStatus, int]:
        """How many jobs are in each status (every status listed, 0 included)."""
        counts: dict[JobStatus, int] = dict.fromkeys(STATUSES, 0)
        with self._reading() as db:
            for status, n in db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status"):
                counts[status] = n
        return counts

    def active(self, token: str | None = None) -> int:
        """Jobs queued or running (of one token's, when ``token`` is given): the queue bound."""
        sql = "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')"
        args: tuple[str, ...] = ()
        if token is not None:
            sql, args = sql + " AND token = ?", (token_id(token),)
        with self._reading() as db:
            return int(db.execute(self._sql(sql), args).fetchone()[0])

    def events(self, job_id: str, after: int = 0) -> builtins.list[JobEvent]:
        """The job's events with ``seq`` above ``after``, in order (SSE ``Last-Event-ID``)."""
        sql = "SELECT job, seq, type, time, data FROM events WHERE job = ? AND seq > ? ORDER BY seq"
        with self._reading() as db:
            rows = db.execute(self._sql(sql), (job_id, after)).fetchall()
        return [
            JobEvent(job=r[0], seq=r[1], type=r[2], time=r[3], data=json.loads(r[4])) for r in rows
        ]

    # -- ending ----------------------------------------------------------------------------

    def finish(self, job_id: str, result: dict[str, Any], outcome: str | None) -> Job | None:
        """Record a job's result (``done``); a job already final is left as it is."""
        data = {"outcome": outcome} if outcome is not None else {}
        return self._end(job_id, "done", "done", data, outcome=outcome, result=json.dumps(result))

    def fail(self, job_id: str, error: JobError) -> Job | None:
        """Record why a job failed (``failed``); a job already final is left as it is."""
        data = error.model_dump(exclude_none=True)
        return self._end(job_id, "failed", "failed", data, error=error.model_dump_json())

    def cancelled(self, job_id: str) -> Job | None:
        """Record that the runner stopped a running job a client cancelled."""
        return self._end(job_id, "cancelled", "cancelled", {}, error=CANCELLED)

    def cancel(self, job_id: str) -> Job | None:
        """Cancel a job: a queued one at once; a running one is flagged for its runner.

        Returns the job as it now is (still ``running`` when flagged; its runner, on any
        replica, polls :meth:`cancel_requested` and ends it with :meth:`cancelled`), or None
        if unknown.
        """
        sql = self._sql(f"SELECT status FROM jobs WHERE id = ?{self._FOR_UPDATE}")
        with self._writing() as db:
            row = db.execute(sql, (job_id,)).fetchone()
            if row is None:
                return None
            if row[0] == "queued":
                self._close(db, job_id, "cancelled", "cancelled", {}, error=CANCELLED)
            elif row[0] == "running":
                flagged = db.execute(
                    self._sql(
                        "UPDATE jobs SET cancel_requested = TRUE WHERE id = ? "
                        "AND NOT cancel_requested"
                    ),
                    (job_id,),
                )
                if flagged.rowcount:
                    self._add_event(db, (job_id, "cancel_requested", {}, time.time()))
            return self._fetch(db, job_id)

    def _close(
        self,
        db: Any,
        job_id: str,
        status: JobStatus,
        event: str,
        data: dict[str, Any],
        **columns: Any,
    ) -> None:
        """End a job that is not final yet (a final job keeps its end: first writer wins)."""
        now = time.time()
        sets = "".join(f", {name} = ?" for name in columns)
        ended = db.execute(
            self._sql(
                f"UPDATE jobs SET status = ?, finished = ?{self._RELEASE}{sets} "
                f"WHERE id = ? AND status NOT IN ({FINALS})"
            ),
            (status, now, *columns.values(), job_id),
        )
        if ended.rowcount:
            self._add_event(db, (job_id, event, data, now))

    def cancel_requested(self, job_ids: Sequence[str]) -> set[str]:
        """Which of these running jobs a client asked to cancel."""
        if not job_ids:
            return set()
        marks = ",".join("?" * len(job_ids))
        sql = (
            f"SELECT id FROM jobs WHERE cancel_requested AND status = 'running' AND id IN ({marks})"
        )
        with self._reading() as db:
            rows = db.execute(self._sql(sql), tuple(job_ids)).fetchall()
        return {row[0] for row in rows}

    def requeue(self, job_id: str, reason: str = "shutdown") -> Job | None:
        """Put a running job back in the queue (its runner is stopping); event ``requeued``.

        Only a job this store's runner holds (a PostgreSQL store's lease).
        """
        mine, args = self._holder()
        sql = (
            f"UPDATE jobs SET status = 'queued', started = NULL{self._RELEASE} "
            f"WHERE id = ? AND status = 'running'{mine}"
        )
        with self._writing() as db:
            moved = db.execute(self._sql(sql), (job_id, *args))
            if moved.rowcount:
                self._add_event(db, (job_id, "requeued", {"reason": reason}, time.time()))
            return self._fetch(db, job_id) if self._exists(db, job_id) else None

    def _end(
        self, job_id: str, status: JobStatus, event: str, data: dict[str, Any], **columns: Any
    ) -> Job | None:
        with self._writing() as db:
            if not self._exists(db, job_id):
                return None
            self._close(db, job_id, status, event, data, **columns)
            return self._fetch(db, job_id)

    def _exists(self, db: Any, job_id: str) -> bool:
        return (
            db.execute(self._sql("SELECT 1 FROM jobs WHERE id = ?"), (job_id,)).fetchone()
            is not None
        )

    def _fetch(self, db: Any, job_id: str) -> Job:
        sql = self._sql(f"SELECT {COLUMNS} FROM jobs WHERE id = ?")
        return row_job(db.execute(sql, (job_id,)).fetchone())

    # -- events ----------------------------------------------------------------------------

    def append_event(self, job_id: str, type: str, data: dict[str, Any]) -> JobEvent:  # noqa: A002
        """Record one event of a job, numbered after the last (raises KeyError: no such job)."""
        with self._writing() as db:
            return self._add_event(db, (job_id, type, data, time.time()))

    def append_events(self, events: Sequence[Pending]) -> None:
        """Record events ``(job, type, data, time)`` in order, in one write transaction.

        The runner buffers a job's progress and writes it this way, a few times a second:
        a transaction per event was a quarter of the runner's CPU under load. An event of
        a job that no longer exists is dropped (it was deleted while running).
        """
        if not events:
            return
        with self._writing() as db:
            self._add_events(db, events)
