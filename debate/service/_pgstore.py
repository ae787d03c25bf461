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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from debate.service._feed import EventFeed, NotifyWatch
from debate.service._jobs import CANCELLED, COLUMNS, Pending, check_share, row_job, stored_request
from debate.service._models import Job, JobEvent, JobKind, JobRequest
from debate.service._pgsql import (
    CHANNEL,
    MIGRATIONS,
    NOW,
    add_events,
    pick_queued,
)
from debate.service._storebase import INSERT_COLUMNS, StoreBase
from debate.service._summary import PG_COLUMNS
from debate.storage import PgResponseCache, migrate, open_pool

logger = logging.getLogger(__name__)

DEFAULT_LEASE_S = 30.0
"""Seconds a claimed job is its runner's without a renewal (renewed every third of it)."""
_SUBMIT_LOCK = 0x6A6F6273  # "jobs": serialises the room check and insert of concurrent submits


class PgJobStore(StoreBase):
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

    # -- what the shared methods need (see StoreBase) --------------------------------------

    _ORDER = "n"
    _SUMMARY_COLUMNS = PG_COLUMNS
    _FOR_UPDATE = " FOR UPDATE"
    _RELEASE = ", lease_owner = NULL, lease_until = NULL"

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        with self._pool.connection() as db:
            yield db

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        with self._pool.connection() as db, db.transaction():
            yield db

    @contextmanager
    def _submitting(self) -> Iterator[Any]:
        """Under an advisory lock held by every replica's submits (the room check's guard).

        The unique index on ``(token, idempotency_key)`` is the key's guarantee.
        """
        with self._writing() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_SUBMIT_LOCK,))
            yield db

    def _check_room(self, db: Any, who: str, bound: int, share: int) -> None:
        total, mine = db.execute(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE token = %s) FROM jobs "
            "WHERE status IN ('queued', 'running')",
            (who,),
        ).fetchone()
        check_share(total, mine, who, bound, share)

    def _insert(self, db: Any, job_id: str, kind: JobKind, values: tuple[Any, ...]) -> Job:
        row = db.execute(  # its first event, "queued", is numbered here: events = 1
            f"INSERT INTO jobs (id, kind, status, {INSERT_COLUMNS}, events) "
            f"VALUES (%s, %s, 'queued', %s, %s, %s, %s, %s, 1) RETURNING {COLUMNS}",
            (job_id, kind, *values),
        ).fetchone()
        db.execute(  # no NOTIFY: nobody can be watching a job whose id is not out yet
            "INSERT INTO events (job, seq, type, time, data) VALUES (%s, 1, 'queued', %s, %s)",
            (job_id, values[-1], json.dumps({"kind": kind})),
        )
        return row_job(row)

    def _add_event(self, db: Any, event: Pending) -> JobEvent:
        job_id, kind, data, now = event
        seqs = add_events(db, [event])
        if job_id not in seqs:
            raise KeyError(f"job {job_id}: no such job")
        return JobEvent(job=job_id, seq=seqs[job_id], type=kind, time=now, data=data)

    def _holder(self) -> tuple[str, tuple[Any, ...]]:
        return " AND lease_owner = ?", (self.owner,)

    def _add_events(self, db: Any, events: Sequence[Pending]) -> None:
        """One statement numbers them all, one pipelined insert writes them."""
        add_events(db, events)

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
        with self._writing() as db:
            expired = db.execute(
                f"SELECT id, cancel_requested FROM jobs WHERE status = 'running' "
                f"AND lease_until < {NOW} ORDER BY lease_until LIMIT %s FOR UPDATE SKIP LOCKED",
                (limit,),
            ).fetchall()
            taken = [job_id for job_id, cancelling in expired if not cancelling]
            for job_id, cancelling in expired:
                if cancelling:
                    self._close(db, job_id, "cancelled", "cancelled", {}, error=CANCELLED)
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
            claimed.append((job, stored_request(row[11], row[12])))
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
        with self._writing() as db:
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

    def recover(self) -> int:
        """Nothing: a replica's start takes no job (expired leases are claimed instead)."""
        return 0
