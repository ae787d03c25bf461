"""The service's jobs in PostgreSQL, shared by every replica of ``debate serve``.

The same jobs, events and answers as the SQLite :class:`~debate.service._store.JobStore`;
what differs is how several processes on several machines share them:

- A runner claims jobs with ``SELECT … FOR UPDATE SKIP LOCKED`` (replicas claiming at once
  skip each other's rows instead of waiting) and holds each under a lease (``lease_owner``,
  ``lease_until`` on the database's clock) that it renews while it works
  (:meth:`PgJobStore.renew`). A killed replica's jobs are claimed again once their lease
  expires, never by a replica's start (:meth:`PgJobStore.recover` does nothing): a start
  cannot tell a dead replica from a live one.
- Idempotency keys are a unique index; the queue bound and a token's share are checked under
  one advisory lock, so concurrent submits on several replicas cannot overshoot them. The
  per-token concurrency is checked at claim time under a per-token advisory lock.
- Each write of events sends ``NOTIFY debate_events`` with the jobs' ids; every replica's
  :class:`~debate.service._feed.EventFeed` listens, so an event stream on any replica
  wakes when another replica's runner writes (see :meth:`PgJobStore.watch`).

Methods are one transaction each, on a connection of the store's pool; times are epoch
seconds (``created`` and the like from the writer's clock, leases from the database's).
"""

from __future__ import annotations

import builtins
import json
import logging
import secrets
import time
from collections.abc import Sequence
from typing import Any

from debate.service._feed import EventFeed, NotifyWatch
from debate.service._models import (
    Job,
    JobError,
    JobEvent,
    JobKind,
    JobRequest,
    JobStatus,
    JobSummary,
)
from debate.service._pgsql import (
    CHANNEL,
    COLUMNS,
    MIGRATIONS,
    NOW,
    Pending,
    add_events,
    check_room,
    end_job,
    fetch_job,
    pick_queued,
    row_job,
)
from debate.service._store import (
    _CANCELLED,
    REQUESTS,
    STATUSES,
    IdempotencyConflict,
    _digest,
    _request,
    new_id,
    token_id,
    with_seed,
)
from debate.service._summary import PG_COLUMNS, row_summary, where_clause
from debate.storage import PgResponseCache, migrate, open_pool

logger = logging.getLogger(__name__)

DEFAULT_LEASE_S = 30.0
"""Seconds a claimed job is its runner's without a renewal (renewed every third of it)."""
_SUBMIT_LOCK = 0x6A6F6273  # "jobs": serialises the room check and insert of concurrent submits


class PgJobStore:
    """Jobs and events in PostgreSQL, shared by the replicas' app and runner processes.

    Args:
        url: A ``postgresql://`` URL (the database must exist; tables are made here).
        lease: Seconds a claimed job stays this store's runner's without a renewal.
        max_size: Connections its pool may open (the app's routes call it from threads).
    """

    def __init__(self, url: str, *, lease: float = DEFAULT_LEASE_S, max_size: int = 10) -> None:
        self.url = url
        self.lease: float | None = lease
        self.owner = f"{secrets.token_hex(6)}"
        """This store's name in the leases it takes (one per process: a restart is new)."""
        self._pool: Any = open_pool(url, max_size=max_size, name="debate-jobs")
        migrate(self._pool, "jobs", MIGRATIONS)
        self._feed = EventFeed(url, CHANNEL)

    def close(self) -> None:
        """Stop listening and close the pool."""
        self._feed.close()
        self._pool.close()

    def open_cache(self) -> PgResponseCache:
        """The response cache for this store's runner: table ``responses`` of the database."""
        return PgResponseCache(self.url)

    def watch(self, job_id: str) -> NotifyWatch:
        """A watch that wakes when another process writes the job's events (LISTEN)."""
        return self._feed.watch(job_id)

    def unwritable(self) -> str | None:
        """Why the database cannot take a write now (``/readyz``), or None."""
        try:
            with self._pool.connection(timeout=2) as db, db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (_SUBMIT_LOCK,))
        except Exception as exc:  # psycopg's errors and the pool's timeout
            return f"database: cannot be written ({type(exc).__name__})"
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

        See :meth:`debate.service._store.JobStore.submit`. The lookup, the room check and
        the insert are one transaction under an advisory lock held by every replica's
        submits, and the unique index on ``(token, idempotency_key)`` is the key's guarantee.
        """
        if not isinstance(request, REQUESTS[kind]):
            raise ValueError(f"kind: a {kind} job takes a {REQUESTS[kind].__name__}")
        who, digest, now = token_id(token), _digest(request), time.time()
        with self._pool.connection() as db, db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_SUBMIT_LOCK,))
            if idempotency_key is not None:
                row = db.execute(
                    f"SELECT {COLUMNS}, digest FROM jobs WHERE token = %s AND idempotency_key = %s",
                    (who, idempotency_key),
                ).fetchone()
                if row is not None:
                    if row[-1] != digest:
                        raise IdempotencyConflict(row_job(row))
                    return row_job(row), False
            if room is not None:
                check_room(db, who, *room)
            job_id = new_id(now)
            row = db.execute(  # its first event, "queued", is numbered here: events = 1
                "INSERT INTO jobs (id, kind, status, request, digest, token, idempotency_key, "
                f"created, events) VALUES (%s, %s, 'queued', %s, %s, %s, %s, %s, 1) "
                f"RETURNING {COLUMNS}",
                (job_id, kind, with_seed(request).model_dump_json(), digest, who,
                 idempotency_key, now),
            ).fetchone()  # fmt: skip
            db.execute(  # no NOTIFY: nobody can be watching a job whose id is not out yet
                "INSERT INTO events (job, seq, type, time, data) VALUES (%s, 1, 'queued', %s, %s)",
                (job_id, now, json.dumps({"kind": kind})),
            )
            return row_job(row), True

    def get(self, job_id: str) -> Job | None:
        """The job, or None if there is none with that id."""
        with self._pool.connection() as db:
            row = db.execute(f"SELECT {COLUMNS} FROM jobs WHERE id = %s", (job_id,)).fetchone()
        return None if row is None else row_job(row)

    def owns(self, job_id: str, token: str | None) -> bool:
        """Whether the job was submitted with ``token``."""
        with self._pool.connection() as db:
            row = db.execute(
                "SELECT 1 FROM jobs WHERE id = %s AND token = %s", (job_id, token_id(token))
            ).fetchone()
        return row is not None

    def request(self, job_id: str) -> JobRequest | None:
        """The job's stored request (its seed fixed), as the model of its kind."""
        with self._pool.connection() as db:
            row = db.execute("SELECT kind, request FROM jobs WHERE id = %s", (job_id,)).fetchone()
        return None if row is None else _request(row[0], row[1])

    def list(self, limit: int = 100, token: str | None = None) -> builtins.list[Job]:
        """The newest jobs first (of one token's, when ``token`` is given)."""
        where, args = ("WHERE token = %s", [token_id(token)]) if token is not None else ("", [])
        with self._pool.connection() as db:
            rows = db.execute(
                f"SELECT {COLUMNS} FROM jobs {where} ORDER BY n DESC LIMIT %s", (*args, limit)
            ).fetchall()
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
        where, args = where_clause("%s", status=status, outcome=outcome, token=key)
        with self._pool.connection() as db:
            rows = db.execute(
                f"SELECT {PG_COLUMNS} FROM jobs {where} ORDER BY n DESC LIMIT %s", (*args, limit)
            ).fetchall()
        return [row_summary(row) for row in rows]

    def counts(self) -> dict[JobStatus, int]:
        """How many jobs are in each status (every status listed, 0 included)."""
        counts: dict[JobStatus, int] = dict.fromkeys(STATUSES, 0)
        with self._pool.connection() as db:
            for status, n in db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status"):
                counts[status] = n
        return counts

    def active(self, token: str | None = None) -> int:
        """Jobs queued or running (of one token's, when ``token`` is given)."""
        sql = "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')"
        args: tuple[str, ...] = ()
        if token is not None:
            sql, args = sql + " AND token = %s", (token_id(token),)
        with self._pool.connection() as db:
            return int(db.execute(sql, args).fetchone()[0])

    # -- running ---------------------------------------------------------------------------

    def claim(
        self, limit: int = 1, *, per_token: int | None = None
    ) -> builtins.list[tuple[Job, JobRequest]]:
        """Take up to ``limit`` jobs under this store's lease, expired leases first.

        Then the oldest queued jobs, passing over tokens at ``per_token`` running jobs.

        A job whose lease expired was its runner's (killed, or stalled past the lease): it
        gets a ``requeued`` event (reason ``lease expired``) before its ``running`` one; one
        whose cancel was requested is cancelled instead.
        """
        if limit < 1:
            return []
        now = time.time()
        with self._pool.connection() as db, db.transaction():
            expired = db.execute(
                f"SELECT id, cancel_requested FROM jobs WHERE status = 'running' "
                f"AND lease_until < {NOW} ORDER BY lease_until LIMIT %s FOR UPDATE SKIP LOCKED",
                (limit,),
            ).fetchall()
            taken = [job_id for job_id, cancelling in expired if not cancelling]
            for job_id, cancelling in expired:
                if cancelling:
                    end_job(db, job_id, "cancelled", "cancelled", {}, error=_CANCELLED)
            chosen = taken + pick_queued(db, limit - len(taken), per_token)
            if not chosen:
                return []
            rows = db.execute(
                f"UPDATE jobs SET status = 'running', started = %s, attempts = attempts + 1, "
                f"lease_owner = %s, lease_until = {NOW} + %s WHERE id = ANY(%s) "
                f"RETURNING {COLUMNS}, attempts, kind, request",
                (now, self.owner, self.lease, chosen),
            ).fetchall()
            by_id = {row[0]: row for row in rows}
            pending: builtins.list[Pending] = []
            for job_id in chosen:
                if job_id in taken:
                    pending.append((job_id, "requeued", {"reason": "lease expired"}, now))
                pending.append((job_id, "running", {"attempt": by_id[job_id][10]}, now))
            seqs = add_events(db, pending)
        claimed = []
        for job_id in chosen:
            row = by_id[job_id]
            job = row_job(row[:10]).model_copy(update={"events": seqs[job_id]})
            claimed.append((job, _request(row[11], row[12])))
        return claimed

    def renew(self, job_ids: Sequence[str]) -> set[str]:
        """Extend this store's leases on these jobs; return those it no longer holds.

        A job is lost when another runner took it over (its lease had expired: this runner
        stalled past it) or it went back to the queue; the runner stops its copy of a lost
        job without recording anything. A job that ended is not lost.
        """
        if not job_ids:
            return set()
        ids = builtins.list(job_ids)
        with self._pool.connection() as db, db.transaction():
            db.execute(
                f"UPDATE jobs SET lease_until = {NOW} + %s WHERE id = ANY(%s) "
                "AND lease_owner = %s AND status = 'running'",
                (self.lease, ids, self.owner),
            )
            rows = db.execute(
                "SELECT id FROM jobs WHERE id = ANY(%s) AND status IN ('queued', 'running') "
                "AND lease_owner IS DISTINCT FROM %s",
                (ids, self.owner),
            ).fetchall()
        return {row[0] for row in rows}

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
        return self._end(job_id, "cancelled", "cancelled", {}, error=_CANCELLED)

    def cancel(self, job_id: str) -> Job | None:
        """Cancel a job: a queued one at once; a running one is flagged for its runner.

        Whichever replica runs it: runners poll :meth:`cancel_requested`.
        """
        with self._pool.connection() as db, db.transaction():
            row = db.execute(
                "SELECT status FROM jobs WHERE id = %s FOR UPDATE", (job_id,)
            ).fetchone()
            if row is None:
                return None
            if row[0] == "queued":
                end_job(db, job_id, "cancelled", "cancelled", {}, error=_CANCELLED)
            elif row[0] == "running":
                flagged = db.execute(
                    "UPDATE jobs SET cancel_requested = TRUE WHERE id = %s "
                    "AND NOT cancel_requested",
                    (job_id,),
                )
                if flagged.rowcount:
                    add_events(db, [(job_id, "cancel_requested", {}, time.time())])
            return fetch_job(db, job_id)

    def cancel_requested(self, job_ids: Sequence[str]) -> set[str]:
        """Which of these running jobs a client asked to cancel."""
        if not job_ids:
            return set()
        with self._pool.connection() as db:
            rows = db.execute(
                "SELECT id FROM jobs WHERE cancel_requested AND status = 'running' "
                "AND id = ANY(%s)",
                (builtins.list(job_ids),),
            ).fetchall()
        return {row[0] for row in rows}

    def requeue(self, job_id: str, reason: str = "shutdown") -> Job | None:
        """Put a job this store's runner holds back in the queue (it is stopping)."""
        with self._pool.connection() as db, db.transaction():
            moved = db.execute(
                "UPDATE jobs SET status = 'queued', started = NULL, lease_owner = NULL, "
                "lease_until = NULL WHERE id = %s AND status = 'running' AND lease_owner = %s",
                (job_id, self.owner),
            )
            if moved.rowcount:
                add_events(db, [(job_id, "requeued", {"reason": reason}, time.time())])
            found = db.execute("SELECT 1 FROM jobs WHERE id = %s", (job_id,)).fetchone()
            return None if found is None else fetch_job(db, job_id)

    def recover(self) -> int:
        """Nothing: a replica's start takes no job (expired leases are claimed instead)."""
        return 0

    def _end(
        self, job_id: str, status: JobStatus, event: str, data: dict[str, Any], **columns: Any
    ) -> Job | None:
        with self._pool.connection() as db, db.transaction():
            found = db.execute("SELECT 1 FROM jobs WHERE id = %s", (job_id,)).fetchone()
            if found is None:
                return None
            end_job(db, job_id, status, event, data, **columns)
            return fetch_job(db, job_id)

    # -- events ----------------------------------------------------------------------------

    def append_event(self, job_id: str, type: str, data: dict[str, Any]) -> JobEvent:  # noqa: A002
        """Record one event of a job, numbered after the last (raises KeyError: no such job)."""
        now = time.time()
        with self._pool.connection() as db, db.transaction():
            seqs = add_events(db, [(job_id, type, data, now)])
        if job_id not in seqs:
            raise KeyError(f"job {job_id}: no such job")
        return JobEvent(job=job_id, seq=seqs[job_id], type=type, time=now, data=data)

    def append_events(self, events: Sequence[Pending]) -> None:
        """Record events ``(job, type, data, time)`` in order, in one transaction.

        One statement numbers them all, one pipelined insert writes them.
        """
        if not events:
            return
        with self._pool.connection() as db, db.transaction():
            add_events(db, events)

    def events(self, job_id: str, after: int = 0) -> builtins.list[JobEvent]:
        """The job's events with ``seq`` above ``after``, in order."""
        with self._pool.connection() as db:
            rows = db.execute(
                "SELECT job, seq, type, time, data FROM events WHERE job = %s AND seq > %s "
                "ORDER BY seq",
                (job_id, after),
            ).fetchall()
        return [
            JobEvent(job=r[0], seq=r[1], type=r[2], time=r[3], data=json.loads(r[4])) for r in rows
        ]
