"""The SQL of the PostgreSQL job store: its schema, and the steps its transactions share.

Each function runs inside the caller's transaction (``db`` is a psycopg connection in a
``transaction()`` block): :func:`pick_queued` chooses the queued jobs a claim may start,
:func:`add_events` numbers and writes events and notifies the replicas' event feeds. Kept
apart from :mod:`debate.service._pgstore` (the store's methods) so that each reads on its
own; what the PostgreSQL and SQLite stores share is :mod:`debate.service._storebase`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from debate.service._jobs import Pending, within_share

CHANNEL = "debate_events"
NOW = "EXTRACT(EPOCH FROM clock_timestamp())"

MIGRATIONS = (
    """CREATE TABLE jobs (
    n BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,  -- submission order (SQLite's rowid)
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    digest TEXT NOT NULL,
    token TEXT NOT NULL DEFAULT '',
    idempotency_key TEXT,
    created DOUBLE PRECISION NOT NULL,
    started DOUBLE PRECISION,
    finished DOUBLE PRECISION,
    outcome TEXT,
    result TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    events INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until DOUBLE PRECISION
);
CREATE UNIQUE INDEX jobs_idempotency ON jobs (token, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_queued ON jobs (n) WHERE status = 'queued';
CREATE INDEX jobs_running ON jobs (lease_until) WHERE status = 'running';
CREATE INDEX jobs_token ON jobs (token, n);
CREATE TABLE events (
    job TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time DOUBLE PRECISION NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (job, seq)
);""",
)
"""The ``jobs`` component's schema versions (see :func:`debate.storage._pg.migrate`)."""


def lock_key(text: str) -> int:
    """A signed 64-bit advisory-lock key for ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def pick_queued(db: Any, limit: int, per_token: int | None) -> list[str]:
    """The oldest queued jobs that may start, locked; tokens at ``per_token`` passed over.

    A token's running count is read after taking its advisory lock, so two replicas
    claiming at once cannot both start its last allowed job; a token whose lock another
    replica holds right now is passed over until the next claim.
    """
    if limit < 1:
        return []
    if per_token is None:
        rows = db.execute(
            "SELECT id FROM jobs WHERE status = 'queued' ORDER BY n LIMIT %s "
            "FOR UPDATE SKIP LOCKED",
            (limit,),
        ).fetchall()
        return [row[0] for row in rows]
    candidates = db.execute(
        "SELECT id, token FROM jobs WHERE status = 'queued' AND token NOT IN ("
        "  SELECT token FROM jobs WHERE status = 'running' AND token != '' "
        "  GROUP BY token HAVING COUNT(*) >= %s"
        ") ORDER BY n LIMIT %s FOR UPDATE SKIP LOCKED",
        (per_token, limit * 4),
    ).fetchall()
    tokens = sorted({token for _, token in candidates if token})
    held = [
        t
        for t in tokens
        if db.execute("SELECT pg_try_advisory_xact_lock(%s)", (lock_key(t),)).fetchone()[0]
    ]
    running: dict[str, int] = dict(
        db.execute(
            "SELECT token, COUNT(*) FROM jobs WHERE status = 'running' AND token = ANY(%s) "
            "GROUP BY token",
            (held,),
        ).fetchall()
        if held
        else []
    )
    claimable = [(job_id, token) for job_id, token in candidates if not token or token in held]
    return within_share(claimable, running, per_token, limit)


def add_events(db: Any, events: Sequence[Pending]) -> dict[str, int]:
    """Number and insert events inside the caller's transaction; NOTIFY their jobs.

    One ``UPDATE … FROM unnest`` takes each job's block of numbers and one pipelined
    ``executemany`` inserts the events. Events of jobs that do not exist are dropped.
    Returns each job's last seq. Two writers touch the same jobs only when a stalled runner
    and the one that took its jobs over write at once; should they deadlock, PostgreSQL
    fails one transaction, which its caller logs (the runner's progress) or retries at the
    next poll (a claim).
    """
    counts = Counter(job for job, _, _, _ in events)
    ids = sorted(counts)
    rows = db.execute(
        "UPDATE jobs SET events = jobs.events + c.k "
        "FROM unnest(%s::text[], %s::int[]) AS c(id, k) WHERE jobs.id = c.id "
        "RETURNING jobs.id, jobs.events",
        (ids, [counts[i] for i in ids]),
    ).fetchall()
    last = {row[0]: int(row[1]) for row in rows}
    next_seq = {job: last[job] - counts[job] + 1 for job in last}
    values = []
    for job, kind, data, when in events:
        if job in next_seq:
            values.append((job, next_seq[job], kind, when, json.dumps(data)))
            next_seq[job] += 1
    if values:
        with db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO events (job, seq, type, time, data) VALUES (%s, %s, %s, %s, %s)",
                values,
            )
        for start in range(0, len(ids), 250):  # a NOTIFY payload holds under 8000 bytes
            chunk = [job for job in ids[start : start + 250] if job in last]
            db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, ",".join(chunk)))
    return last
